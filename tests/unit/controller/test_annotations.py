"""Typed annotation parsers: upstream syntax, exact one-line messages, no other exception."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from controller.annotations import (
    AnnotationError,
    AnnotationReader,
    annotations_of,
    parse_bool,
    parse_enum,
    parse_int,
    parse_int_or_traffic_port,
    parse_json,
    parse_port,
    parse_str,
    parse_string_list,
    parse_string_map,
    quote,
)

K = "example.com/key"


def message(exc: pytest.ExceptionInfo[AnnotationError]) -> str:
    return str(exc.value)


# --- AnnotationError ------------------------------------------------------------------------


def test_error_is_a_value_error_with_its_parts() -> None:
    err = AnnotationError(K, "ten", "is not an integer")
    assert isinstance(err, ValueError)
    assert (err.key, err.value, err.reason) == (K, "ten", "is not an integer")
    assert str(err) == 'annotation example.com/key: "ten" is not an integer'


def test_error_without_value_names_only_the_key() -> None:
    assert str(AnnotationError(K, None, "is required")) == "annotation example.com/key is required"


def test_error_message_stays_on_one_line_and_escapes() -> None:
    err = AnnotationError(K, 'a\nb"c\\\u2028\x00', "is bad")
    assert str(err) == 'annotation example.com/key: "a\\nb\\"c\\\\\\u2028\\x00" is bad'
    assert len(str(err).splitlines()) == 1


def test_long_values_are_shortened() -> None:
    text = quote("x" * 500)
    assert text == '"' + "x" * 120 + '" (first 120 of 500 characters)'


# --- scalars --------------------------------------------------------------------------------


def test_str_is_identity() -> None:
    assert parse_str(K, " any thing ") == " any thing "


@pytest.mark.parametrize("raw", ["1", "t", "T", "TRUE", "true", "True"])
def test_bool_true_spellings(raw: str) -> None:
    assert parse_bool(K, raw) is True


@pytest.mark.parametrize("raw", ["0", "f", "F", "FALSE", "false", "False"])
def test_bool_false_spellings(raw: str) -> None:
    assert parse_bool(K, raw) is False


@pytest.mark.parametrize("raw", ["yes", "tRUE", " true", "true ", "", "2", "on"])
def test_bool_rejects_what_go_rejects(raw: str) -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_bool(K, raw)
    assert message(exc) == f'annotation {K}: "{raw}" is not a boolean (use true or false)'


@pytest.mark.parametrize(("raw", "value"), [("0", 0), ("42", 42), ("+7", 7), ("-3", -3),
                                             ("007", 7), ("9223372036854775807", 2**63 - 1)])
def test_int_accepts_go_syntax(raw: str, value: int) -> None:
    assert parse_int(K, raw) == value


@pytest.mark.parametrize("raw", ["ten", "", " 1", "1 ", "1_000", "0x10", "1.5", "١٢", "+", "--1"])
def test_int_rejects_non_integers(raw: str) -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_int(K, raw)
    assert message(exc) == f"annotation {K}: {quote(raw)} is not an integer"


def test_int_rejects_beyond_int64() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_int(K, "9223372036854775808")
    assert message(exc) == (f'annotation {K}: "9223372036854775808" is out of range for an '
                            "integer")


def test_int_range_is_inclusive_and_explained() -> None:
    assert parse_int(K, "2", minimum=2, maximum=10) == 2
    assert parse_int(K, "10", minimum=2, maximum=10) == 10
    with pytest.raises(AnnotationError) as exc:
        parse_int(K, "11", minimum=2, maximum=10)
    assert message(exc) == f'annotation {K}: "11" is out of range: want 2..10'
    with pytest.raises(AnnotationError) as exc:
        parse_int(K, "1", minimum=2)
    assert message(exc) == f'annotation {K}: "1" is out of range: want at least 2'
    with pytest.raises(AnnotationError) as exc:
        parse_int(K, "5", maximum=4)
    assert message(exc) == f'annotation {K}: "5" is out of range: want at most 4'


def test_port() -> None:
    assert parse_port(K, "65535") == 65535
    with pytest.raises(AnnotationError) as exc:
        parse_port(K, "0")
    assert message(exc) == f'annotation {K}: "0" is out of range: want 1..65535'


def test_int_or_traffic_port() -> None:
    assert parse_int_or_traffic_port(K, "traffic-port") == "traffic-port"
    assert parse_int_or_traffic_port(K, "8080") == 8080
    with pytest.raises(AnnotationError) as exc:
        parse_int_or_traffic_port(K, "Traffic-Port")
    assert message(exc) == f'annotation {K}: "Traffic-Port" is not "traffic-port" or a port number'
    with pytest.raises(AnnotationError) as exc:
        parse_int_or_traffic_port(K, "70000")
    assert message(exc) == f'annotation {K}: "70000" is out of range: want 1..65535'


# --- collections ----------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "items"), [
    ("a,b,c", ("a", "b", "c")),
    (" subnet-1 , mySubnet ,, ", ("subnet-1", "mySubnet")),
    ("", ()),
    (",,", ()),
    ("a\u00a0,\tb", ("a", "b")),
    ("one", ("one",)),
])
def test_string_list(raw: str, items: tuple[str, ...]) -> None:
    assert parse_string_list(K, raw) == items


@pytest.mark.parametrize(("raw", "mapping"), [
    ("k1=v1,k2=v2", {"k1": "v1", "k2": "v2"}),
    (" Environment=dev , Team=test ", {"Environment": "dev", "Team": "test"}),
    ("a=b=c", {"a": "b=c"}),
    ("a=", {"a": ""}),
    ("a=1,a=2", {"a": "2"}),
    ("", {}),
    ("k = v", {"k ": " v"}),
])
def test_string_map(raw: str, mapping: dict[str, str]) -> None:
    assert parse_string_map(K, raw) == mapping


def test_string_map_item_without_equals() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_string_map(K, "a=1,oops")
    assert message(exc) == f'annotation {K}: "a=1,oops" has an item "oops" that is not key=value'


def test_string_map_item_with_empty_key() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_string_map(K, "=v")
    assert message(exc) == f'annotation {K}: "=v" has an item "=v" with an empty key'


# --- JSON and enums -------------------------------------------------------------------------


class Port(BaseModel):
    HTTP: int | None = None
    HTTPS: int | None = None


def test_json_into_a_model() -> None:
    ports = parse_json(K, '[{"HTTP": 80}, {"HTTPS": 443}]', list[Port])
    assert [p.HTTP for p in ports] == [80, None]
    assert [p.HTTPS for p in ports] == [None, 443]


def test_json_syntax_error() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_json(K, "[{", list[Port])
    assert message(exc) == (f'annotation {K}: "[{{" is not valid JSON (EOF while parsing an '
                            "object at line 1 column 2)")


def test_json_structure_error_names_the_location() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_json(K, '[{"HTTP": "eighty"}]', list[Port])
    assert message(exc) == (f'annotation {K}: "[{{\\"HTTP\\": \\"eighty\\"}}]" has an unexpected '
                            "structure ([0].HTTP: Input should be a valid integer, unable to "
                            "parse string as an integer)")


def test_json_deep_nesting_is_an_annotation_error() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_json(K, "[" * 5000, list[Port])
    assert "is JSON nested deeper than 32 levels" in message(exc)


def test_json_lone_surrogate_is_an_annotation_error() -> None:
    with pytest.raises(AnnotationError) as exc:
        parse_json(K, "\ud800", list[Port])
    assert message(exc) == f'annotation {K}: "\\ud800" is not valid UTF-8 text'


def test_enum_returns_canonical_spelling() -> None:
    allowed = ("TCP", "HTTP", "HTTPS")
    assert parse_enum(K, "HTTP", allowed) == "HTTP"
    assert parse_enum(K, "https", allowed, ignore_case=True) == "HTTPS"
    with pytest.raises(AnnotationError) as exc:
        parse_enum(K, "https", allowed)
    assert message(exc) == f'annotation {K}: "https" is not one of: TCP, HTTP, HTTPS'


# --- reader ---------------------------------------------------------------------------------


def test_reader_prefix_and_absent_keys() -> None:
    reader = AnnotationReader({"p.io/a": "1", "other/a": "2"}, "p.io")
    assert reader.key("a") == "p.io/a"
    assert reader.get_int("a") == 1
    assert reader.get_int("missing") is None
    assert reader.get_str("missing") is None
    assert reader.has("a")
    assert not reader.has("b")


def test_reader_present_but_empty_counts_as_set() -> None:
    reader = AnnotationReader({"p.io/a": ""}, "p.io/")
    assert reader.get_str("a") == ""
    assert reader.get_string_list("a") == ()
    with pytest.raises(AnnotationError):
        reader.get_bool("a")


def test_reader_typed_getters() -> None:
    reader = AnnotationReader({
        "p/b": "true", "p/i": "12", "p/port": "traffic-port", "p/l": "x, y", "p/m": "k=v",
        "p/j": '{"HTTP": 80}', "p/e": "ip",
    }, "p/")
    assert reader.get_bool("b") is True
    assert reader.get_int("i", minimum=1, maximum=20) == 12
    assert reader.get_int_or_traffic_port("port") == "traffic-port"
    assert reader.get_string_list("l") == ("x", "y")
    assert reader.get_string_map("m") == {"k": "v"}
    j = reader.get_json("j", Port)
    assert j is not None
    assert j.HTTP == 80
    assert reader.get_enum("e", ("instance", "ip")) == "ip"
    with pytest.raises(AnnotationError) as exc:
        reader.get_int("i", maximum=10)
    assert message(exc) == 'annotation p/i: "12" is out of range: want at most 10'


def test_reader_consults_fallbacks_in_order() -> None:
    ingress = {"alb.ingress.kubernetes.io/target-type": "ip"}
    service = {"alb.ingress.kubernetes.io/target-type": "instance",
               "alb.ingress.kubernetes.io/healthcheck-path": "/svc"}
    reader = AnnotationReader(ingress, "alb.ingress.kubernetes.io/", fallbacks=[service])
    assert reader.get_str("target-type") == "ip"
    assert reader.get_str("healthcheck-path") == "/svc"
    swapped = AnnotationReader(service, "alb.ingress.kubernetes.io/", fallbacks=[ingress])
    assert swapped.get_str("target-type") == "instance"


def test_reader_over_objects() -> None:
    ing = {"metadata": {"annotations": {"a/x": "1"}}}
    svc = {"metadata": {"annotations": {"a/x": "2", "a/y": "3"}}}
    reader = AnnotationReader.of(ing, "a", fallbacks=[svc, {"metadata": None}])
    assert (reader.get_int("x"), reader.get_int("y")) == (1, 3)
    assert annotations_of({"metadata": {}}) == {}
    assert annotations_of({"metadata": {"annotations": None}}) == {}


def test_reader_without_prefix_uses_exact_keys() -> None:
    reader = AnnotationReader({"kubernetes.io/ingress.class": "alb"})
    assert reader.get_str("kubernetes.io/ingress.class") == "alb"


def test_reader_rejects_non_string_values() -> None:
    reader = AnnotationReader({"p/a": 3}, "p")
    with pytest.raises(AnnotationError) as exc:
        reader.get_str("a")
    assert message(exc) == "annotation p/a is not a string (got int)"


def test_reader_custom_parser() -> None:
    def even(key: str, raw: str) -> int:
        value = parse_int(key, raw)
        if value % 2:
            raise AnnotationError(key, raw, "is odd")
        return value

    reader = AnnotationReader({"p/a": "4", "p/b": "5"}, "p")
    assert reader.get("a", even) == 4
    with pytest.raises(AnnotationError, match="is odd"):
        reader.get("b", even)


# --- properties: only AnnotationError ever escapes ------------------------------------------

PARSERS: list[Callable[[str, str], object]] = [
    parse_str, parse_bool, parse_int, parse_port, parse_int_or_traffic_port,
    parse_string_list, parse_string_map,
    lambda k, r: parse_int(k, r, minimum=2, maximum=10),
    lambda k, r: parse_enum(k, r, ("a", "B"), ignore_case=True),
    lambda k, r: parse_json(k, r, list[Port]),
    lambda k, r: parse_json(k, r, Port),
]

TEXT = st.one_of(
    st.text(),
    st.text(alphabet="0123456789+-=, tTrueFalse\t\u00a0{}[]\":"),
    st.from_regex(r"[+-]?[0-9]{1,25}", fullmatch=True),
    st.sampled_from(["true", "traffic-port", "", "k=v", "=", ",", '{"HTTP": 80}']),
)


@given(raw=TEXT, which=st.integers(min_value=0, max_value=len(PARSERS) - 1))
def test_any_string_yields_a_value_or_an_annotation_error(raw: str, which: int) -> None:
    failure: AnnotationError | None = None
    try:
        PARSERS[which](K, raw)
    except AnnotationError as exc:
        failure = exc
    if failure is not None:
        assert failure.key == K
        assert str(failure).startswith(f"annotation {K}")
        assert len(str(failure).splitlines()) == 1


@given(raw=st.lists(st.text(alphabet=st.characters(blacklist_characters=","), min_size=1)))
def test_list_round_trip(raw: list[str]) -> None:
    items = parse_string_list(K, ",".join(raw))
    assert all(item and item == item.strip(" \t\n\r\v\f\u00a0") for item in items)
    assert len(items) <= len(raw)


@given(pairs=st.dictionaries(st.from_regex(r"[a-z][a-z0-9._/-]{0,10}", fullmatch=True),
                             st.from_regex(r"[a-zA-Z0-9=._-]{0,10}", fullmatch=True)))
def test_map_round_trip(pairs: dict[str, str]) -> None:
    raw = ",".join(f"{k}={v}" for k, v in pairs.items())
    assert parse_string_map(K, raw) == pairs


@given(value=st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_int_round_trip(value: int) -> None:
    assert parse_int(K, str(value)) == value


@given(annotations=st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=8),
       suffix=st.text(max_size=8))
def test_reader_never_raises_anything_else(annotations: dict[str, str], suffix: str) -> None:
    reader = AnnotationReader(annotations, "p/")
    for get in (reader.get_str, reader.get_bool, reader.get_int, reader.get_string_list,
                reader.get_string_map, reader.get_int_or_traffic_port):
        with contextlib.suppress(AnnotationError):
            get(suffix)
