"""What a flag's text means: parsers from text as typed (a ValueError says why it cannot be
read), Go's durations both ways, and checks of a parsed value (None, or why it cannot be used).
Messages say what is wrong, not which flag: `runtime.flags` puts the flag's name in front."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

T = TypeVar("T")

# ---- parsers: text as typed -> value (ValueError says why) ------------------------------------

_TRUE = frozenset({"true", "1", "yes", "t"})
_FALSE = frozenset({"false", "0", "no", "f"})


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("Input should be a valid integer, unable to parse string as an "
                         "integer") from None


def parse_float(text: str) -> float:
    """A finite number: a rate or a duration of inf or nan is always a typing slip."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError("Input should be a valid number, unable to parse string as a "
                         "number") from None
    if not math.isfinite(value):
        raise ValueError("Input should be a finite number")
    return value


def choice(*values: str) -> Callable[[str], Any]:
    """One of `values`, as typed (the field's Literal type names them too)."""
    listed = ", ".join(repr(v) for v in values[:-1])
    expected = f"{listed} or {values[-1]!r}" if listed else repr(values[-1])

    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(f"Input should be {expected}")
        return text

    return parse


def parse_key_values(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2` (pflag's StringToString)."""
    result: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        result[key.strip()] = val.strip()
    return result


def parse_names(text: str) -> frozenset[str]:
    """`a,b,c` (pflag's StringSlice), as a set: order and repeats mean nothing."""
    return frozenset(name.strip() for name in text.split(",") if name.strip())


# Go's time.Duration is int64 nanoseconds: upstream's duration flags cannot hold more.
MAX_DURATION: Final = (2**63 - 1) / 1e9
_MAX_DURATION_TEXT = "2562047h47m16.854775807s"
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration syntax ("10h", "16m40s", "1.5s", "300ms"), in seconds.
    A bare number is taken as seconds, which is what users type most often by mistake. Negative
    durations, and ones longer than Go's (about 292 years), are refused."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    body = value[1:] if value[0] in "+-" else value
    if re.fullmatch(r"\d+(\.\d+)?", body):
        total = float(body)
    else:
        if not body:
            raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 2m, 1h30m)")
        pos, total = 0, 0.0
        while pos < len(body):
            match = _DURATION_PART.match(body, pos)
            if match is None:
                raise ValueError(f"invalid duration {text!r} (use e.g. 15s, 2m, 1h30m)")
            total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
            pos = match.end()
    if value[0] == "-" and total > 0:
        raise ValueError(f"negative duration {text!r} is not allowed")
    if not total <= MAX_DURATION:  # also catches inf from an absurdly long number
        raise ValueError(f"duration {text!r} is longer than the maximum, {_MAX_DURATION_TEXT}")
    return total


def format_duration(seconds: float) -> str:
    """The shortest Go duration text for `seconds`, to the nanosecond: 36000 -> "10h",
    1000 -> "16m40s", 0.3 -> "300ms"."""
    ns = round(seconds * 1e9)
    if ns <= 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("us", 1_000)):
            if ns >= size:
                return _decimal(ns, size) + unit
        return f"{ns}ns"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (_decimal(rest, 1_000_000_000) + "s" if rest or not text else "")


def _decimal(value: int, unit: int) -> str:
    whole, part = divmod(value, unit)
    digits = len(str(unit)) - 1
    return f"{whole}.{part:0{digits}d}".rstrip("0").rstrip(".")


# ---- checks: value -> None, or why it cannot be used -------------------------------------------

def at_least(bound: float) -> Callable[[float], str | None]:
    return lambda v: None if v >= bound else f"Input should be greater than or equal to {bound:g}"


def greater_than(bound: float) -> Callable[[float], str | None]:
    return lambda v: None if v > bound else f"Input should be greater than {bound:g}"


def within(low: float, high: float) -> Callable[[float], str | None]:
    def check(value: float) -> str | None:
        if value < low:
            return f"Input should be greater than or equal to {low:g}"
        if value > high:
            return f"Input should be less than or equal to {high:g}"
        return None

    return check


def non_empty(value: str) -> str | None:
    return None if value else "String should have at least 1 character"


def all_of(*checks: Callable[[T], str | None]) -> Callable[[T], str | None]:
    def check(value: T) -> str | None:
        return next((p for p in (c(value) for c in checks) if p), None)

    return check


__all__ = [
    "MAX_DURATION", "all_of", "at_least", "choice", "format_duration", "greater_than",
    "non_empty", "parse_bool", "parse_duration", "parse_float", "parse_int", "parse_key_values",
    "parse_names", "within",
]
