"""What a flag's text means: Go durations read and shown, the values' parsers and checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import flagvalues


@pytest.mark.parametrize(("seconds", "text"), [
    (36000.0, "10h"), (1000.0, "16m40s"), (600.0, "10m"), (15.0, "15s"), (0.3, "300ms"),
    (10.2, "10.2s"), (3661.5, "1h1m1.5s"), (0.0, "0s"),
])
def test_durations_are_shown_as_go_would_read_them(seconds: float, text: str) -> None:
    assert flagvalues.format_duration(seconds) == text
    assert flagvalues.parse_duration(text) == pytest.approx(seconds)


@given(st.floats(min_value=0, max_value=1e7, allow_nan=False))
def test_a_shown_duration_reads_back(seconds: float) -> None:
    assert flagvalues.parse_duration(flagvalues.format_duration(seconds)) == pytest.approx(
        seconds, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ("T", True), ("1", True), ("yes", True), (" false ", False), ("0", False),
    ("No", False),
])
def test_bools(text: str, value: bool) -> None:
    assert flagvalues.parse_bool(text) is value


@pytest.mark.parametrize(("parse", "text", "message"), [
    (flagvalues.parse_bool, "on", "expected true or false, got 'on'"),
    (flagvalues.parse_int, "2.5", "Input should be a valid integer, unable to parse string as "
                                  "an integer"),
    (flagvalues.parse_float, "nan", "Input should be a finite number"),
    (flagvalues.parse_float, "-inf", "Input should be a finite number"),
    (flagvalues.choice("x", "y", "z"), "w", "Input should be 'x', 'y' or 'z'"),
    (flagvalues.parse_key_values, "a=1,=2", "expected key=value, got '=2'"),
])
def test_what_cannot_be_read_says_why(parse: object, text: str, message: str) -> None:
    assert callable(parse)
    with pytest.raises(ValueError) as info:
        parse(text)
    assert str(info.value) == message


def test_lists_and_maps() -> None:
    assert flagvalues.parse_key_values(" a=1, b = 2 ,,") == {"a": "1", "b": "2"}
    assert flagvalues.parse_names("b, a,,b") == frozenset({"a", "b"})


def test_checks() -> None:
    within = flagvalues.within(1, 10)
    assert (within(1), within(10)) == (None, None)
    assert within(0) == "Input should be greater than or equal to 1"
    assert within(11) == "Input should be less than or equal to 10"
    assert flagvalues.greater_than(0)(0) == "Input should be greater than 0"
    both = flagvalues.all_of(flagvalues.non_empty, lambda v: "too long" if len(v) > 3 else None)
    assert (both(""), both("abcd"), both("abc")) == (
        "String should have at least 1 character", "too long", None)
