"""Typed annotation parsing with the upstream controller's semantics and one-line errors.

Each parser takes the full annotation key (only for the message) and the raw value, and either
returns a typed value or raises `AnnotationError`; no other exception escapes for any string.
`AnnotationReader` finds a key under a prefix in an object's annotations, then in alternative
objects' annotations (e.g. an Ingress, then its backend Service), and returns None when the key
is absent everywhere, so that callers apply their own defaults.

Syntax follows upstream (`pkg/annotations/parser.go`): values are not trimmed; booleans are Go's
`strconv.ParseBool`; integers are `strconv.ParseInt(s, 10, 64)`; lists split on "," with items
trimmed and empty items dropped; maps are lists of `key=value` split at the first "=", so a
value may itself contain "=".

Ingress group merge rules (Exclusive vs Merge) are left to the caller: it builds one reader per
group member and compares or combines what each returns.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from controller.errors import InvalidInput

T = TypeVar("T")
S = TypeVar("S", bound=str)

TRAFFIC_PORT: Final = "traffic-port"
TrafficPort = Literal["traffic-port"]

_MAX_SHOWN = 120
# Limits on what the controller parses out of one annotation value (the API server allows
# 256 KiB for all of an object's annotations together). A JSON value nested deeper than any
# upstream shape needs (actions and conditions go 5 levels deep) is refused before it is
# parsed, so that no parser recurses on a value a client chose.
MAX_VALUE_LENGTH: Final = 64 * 1024
MAX_JSON_DEPTH: Final = 32
# Go's unicode.IsSpace set, which strings.TrimSpace strips; Python's str.strip() differs slightly.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def quote(value: str) -> str:
    """A value as it appears in a message: double-quoted, on one line, long values shortened."""
    shown = value if len(value) <= _MAX_SHOWN else value[:_MAX_SHOWN]
    parts: list[str] = []
    for ch in shown:
        if ch in '"\\':
            parts.append("\\" + ch)
        elif ch.isprintable():
            parts.append(ch)
        else:
            parts.append(ch.encode("unicode_escape").decode("ascii"))
    text = '"' + "".join(parts) + '"'
    if len(value) > _MAX_SHOWN:
        text += f" (first {_MAX_SHOWN} of {len(value)} characters)"
    return text


class AnnotationError(InvalidInput):
    """An annotation value the controller cannot use. `str()` is one line naming key and value,
    e.g. `annotation example.com/interval: "ten" is not an integer`."""

    condition_reason = "InvalidAnnotation"

    def __init__(self, key: str, value: str | None, reason: str) -> None:
        super().__init__(key, value, reason)
        self.key = key
        self.value = value
        self.reason = reason

    def __str__(self) -> str:
        if self.value is None:
            return f"annotation {self.key} {self.reason}"
        return f"annotation {self.key}: {quote(self.value)} {self.reason}"


# --- parsers: (full key, raw value) -> typed value ------------------------------------------


def parse_str(key: str, raw: str) -> str:
    del key  # every string is a valid string; kept for a uniform parser signature
    return raw


def parse_bool(key: str, raw: str) -> bool:
    """Go's strconv.ParseBool: 1, t, T, TRUE, true, True and their false counterparts."""
    if raw in _GO_TRUE:
        return True
    if raw in _GO_FALSE:
        return False
    raise AnnotationError(key, raw, "is not a boolean (use true or false)")


def _range_text(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{minimum}..{maximum}"
    if minimum is not None:
        return f"at least {minimum}"
    return f"at most {maximum}"


def parse_int(key: str, raw: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """A base-10 integer as Go's strconv.ParseInt(s, 10, 64) reads it (optional sign, ASCII
    digits, no spaces or underscores), optionally limited to minimum..maximum inclusive."""
    if _GO_INT.fullmatch(raw) is None:
        raise AnnotationError(key, raw, "is not an integer")
    value = int(raw)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise AnnotationError(key, raw, "is out of range for an integer")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise AnnotationError(key, raw, f"is out of range: want {_range_text(minimum, maximum)}")
    return value


def parse_port(key: str, raw: str) -> int:
    """A TCP/UDP port number, 1..65535."""
    return parse_int(key, raw, minimum=1, maximum=65535)


def parse_int_or_traffic_port(key: str, raw: str) -> int | TrafficPort:
    """A health check port: the literal `traffic-port` or a port number."""
    if raw == TRAFFIC_PORT:
        return TRAFFIC_PORT
    if _GO_INT.fullmatch(raw) is None:
        raise AnnotationError(key, raw, f'is not "{TRAFFIC_PORT}" or a port number')
    return parse_port(key, raw)


def split_list(raw: str) -> list[str]:
    """Upstream's comma-separated list: items trimmed, empty items dropped."""
    return [item for item in (part.strip(_GO_SPACE) for part in raw.split(",")) if item]


def parse_string_list(key: str, raw: str) -> tuple[str, ...]:
    del key  # any string splits into a (possibly empty) list
    return tuple(split_list(raw))


def parse_string_map(key: str, raw: str) -> dict[str, str]:
    """`k1=v1,k2=v2`: split at the first "=", so values may contain "="; a later duplicate key
    wins; every item needs an "=" and a non-empty key."""
    result: dict[str, str] = {}
    for item in split_list(raw):
        name, sep, value = item.partition("=")
        if not sep:
            raise AnnotationError(key, raw, f"has an item {quote(item)} that is not key=value")
        if not name:
            raise AnnotationError(key, raw, f"has an item {quote(item)} with an empty key")
        result[name] = value
    return result


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def _adapter(schema: type[T]) -> TypeAdapter[T]:
    # Building an adapter compiles a validator; schemas are few and fixed, so keep them.
    adapter = _ADAPTERS.get(schema)
    if adapter is None:
        adapter = _ADAPTERS[schema] = TypeAdapter(schema)
    return adapter


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def json_depth(raw: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep `raw` nests arrays and objects, counted without parsing, up to `limit + 1`."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in raw:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json(raw: str) -> Any:
    """`json.loads` within the limits above; ValueError (never RecursionError) otherwise."""
    if len(raw) > MAX_VALUE_LENGTH:
        raise ValueError(f"longer than {MAX_VALUE_LENGTH} characters")
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(raw)


def parse_json(key: str, raw: str, schema: type[T]) -> T:
    """A JSON value validated against `schema` (a pydantic model or any type pydantic accepts).
    Only the first validation problem is reported, to keep the message on one line."""
    if len(raw) > MAX_VALUE_LENGTH:
        raise AnnotationError(key, raw, f"is longer than {MAX_VALUE_LENGTH} characters")
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise AnnotationError(key, raw, f"is JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        adapter: TypeAdapter[T] = _adapter(schema)
        result = adapter.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        message = " ".join(str(first.get("msg", "invalid")).split())
        if first.get("type") == "json_invalid":
            message = message.removeprefix("Invalid JSON: ")
            raise AnnotationError(key, raw, f"is not valid JSON ({message})") from None
        if first.get("type") == "string_unicode":
            raise AnnotationError(key, raw, "is not valid UTF-8 text") from None
        where = _location(first.get("loc", ()))
        if first.get("type") == "value_error":
            # A schema's own check: its message says what is wrong, and where.
            message = message.removeprefix("Value error, ")
            detail = f"{where}: {message}" if where else message
            raise AnnotationError(key, raw, f"is invalid ({detail})") from None
        detail = f"{where}: {message}" if where else message
        raise AnnotationError(key, raw, f"has an unexpected structure ({detail})") from None
    return result


def parse_enum(key: str, raw: str, allowed: Sequence[S], *, ignore_case: bool = False) -> S:
    """One of `allowed`, returned in its canonical spelling; the message lists the choices."""
    for choice in allowed:
        if raw == choice or (ignore_case and raw.casefold() == choice.casefold()):
            return choice
    raise AnnotationError(key, raw, "is not one of: " + ", ".join(allowed))


# --- lookup --------------------------------------------------------------------------------

# Keys looked up while `recording()` is active. The parsers' catalogues of the keys they read
# (which the checkpoint tests walk) are checked against it, so a key read without being
# catalogued is found by a test, not by a user whose change was missed after a restart.
_RECORDING: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "annotation_reads", default=None)
# Keys found, per annotation map (by identity): which object a key was read from, where a
# reader consults several (an Ingress and its backend Service).
_FOUND: contextvars.ContextVar[dict[int, set[str]] | None] = contextvars.ContextVar(
    "annotation_finds", default=None)


@contextlib.contextmanager
def recording() -> Iterator[set[str]]:
    """Collect every annotation key looked up (present or not) in this context."""
    reads: set[str] = set()
    token = _RECORDING.set(reads)
    try:
        yield reads
    finally:
        _RECORDING.reset(token)


@contextlib.contextmanager
def found_in() -> Iterator[dict[int, set[str]]]:
    """Collect, per annotation map (`id()` of the `metadata.annotations` dict), every key a
    reader found there in this context."""
    found: dict[int, set[str]] = {}
    token = _FOUND.set(found)
    try:
        yield found
    finally:
        _FOUND.reset(token)


def _note_found(source: Mapping[str, Any], key: str) -> None:
    found = _FOUND.get()
    if found is not None:
        found.setdefault(id(source), set()).add(key)


def note_found(source: Mapping[str, Any], key: str) -> None:
    """Record that `key` (a family's `...*` key) was found in the annotation map `source`,
    for a key read without an `AnnotationReader`."""
    _note_found(source, key)


def note_read(key: str) -> None:
    """Record a key read without an `AnnotationReader` (a prefix family such as
    `actions.*`, or a key another module reads directly)."""
    reads = _RECORDING.get()
    if reads is not None:
        reads.add(key)


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`metadata.annotations` of a plain-dict object, or an empty mapping when there is none."""
    if not isinstance(obj, Mapping):
        return {}
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return {}
    annotations = meta.get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


class AnnotationReader:
    """Typed, prefix-aware access to annotations.

    `AnnotationReader(ingress_annotations, "alb.ingress.kubernetes.io/",
    fallbacks=[service_annotations])` consults the Ingress first and the Service second; the
    first map holding the key wins (upstream's order for target-group annotations it reads
    from both). An empty prefix makes suffixes full keys. Every `get_*` returns None when the
    key is absent and raises AnnotationError when it is present but unusable.
    """

    def __init__(self, annotations: Mapping[str, Any] | None, prefix: str = "", *,
                 fallbacks: Sequence[Mapping[str, Any] | None] = ()) -> None:
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.prefix = prefix
        self._sources: tuple[Mapping[str, Any], ...] = tuple(
            source for source in (annotations, *fallbacks) if isinstance(source, Mapping))

    @classmethod
    def of(cls, obj: Mapping[str, Any] | None, prefix: str = "", *,
           fallbacks: Sequence[Mapping[str, Any] | None] = ()) -> AnnotationReader:
        """A reader over plain-dict objects: `obj` first, then each fallback object."""
        return cls(annotations_of(obj), prefix,
                   fallbacks=[annotations_of(other) for other in fallbacks])

    def key(self, suffix: str) -> str:
        return self.prefix + suffix

    def lookup(self, suffix: str) -> tuple[str, str] | None:
        """(full key, raw value) from the first source holding the key, else None."""
        key = self.key(suffix)
        note_read(key)
        for source in self._sources:
            if key in source:
                _note_found(source, key)
                value = source[key]
                if not isinstance(value, str):
                    raise AnnotationError(key, None,
                                          f"is not a string (got {type(value).__name__})")
                return key, value
        return None

    def has(self, suffix: str) -> bool:
        key = self.key(suffix)
        note_read(key)
        for source in self._sources:
            if key in source:
                _note_found(source, key)
                return True
        return False

    def get(self, suffix: str, parser: Callable[[str, str], T]) -> T | None:
        """Apply any `(key, raw) -> value` parser; the building block of the typed getters."""
        found = self.lookup(suffix)
        return None if found is None else parser(*found)

    def get_str(self, suffix: str) -> str | None:
        return self.get(suffix, parse_str)

    def get_bool(self, suffix: str) -> bool | None:
        return self.get(suffix, parse_bool)

    def get_int(self, suffix: str, *, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        return self.get(suffix, functools.partial(parse_int, minimum=minimum, maximum=maximum))

    def get_int_or_traffic_port(self, suffix: str) -> int | TrafficPort | None:
        return self.get(suffix, parse_int_or_traffic_port)

    def get_string_list(self, suffix: str) -> tuple[str, ...] | None:
        return self.get(suffix, parse_string_list)

    def get_string_map(self, suffix: str) -> dict[str, str] | None:
        return self.get(suffix, parse_string_map)

    def get_json(self, suffix: str, schema: type[T]) -> T | None:
        return self.get(suffix, functools.partial(parse_json, schema=schema))

    def get_enum(self, suffix: str, allowed: Sequence[S], *,
                 ignore_case: bool = False) -> S | None:
        return self.get(suffix, functools.partial(parse_enum, allowed=allowed,
                                                  ignore_case=ignore_case))
