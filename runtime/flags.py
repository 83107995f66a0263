"""Command-line flags declared next to the settings they fill, as upstream's `BindFlags` binds
each flag to its field: a frozen dataclass field declared with `flag(...)` (name, default,
parser from text, help, optional check) is the one declaration from which everything else is
generated: the argparse argument, its `--help` line with the default shown as one would type it,
Go's flag syntax (bool flags as `--x`, `--x=true` or `--x false`; an empty value for a flag
whose default is unset means the default), and loading the parsed text into the dataclass. A bad
value is one line naming the flag (`FlagError`): `load` runs each flag's check, then the
section's own `check()` for rules across its fields, if it has one. Mappings are frozen by
`freeze(self)` (in `__post_init__`), so settings stay immutable and hashable.

A root dataclass gathers sections with `section(...)`; `add_arguments` and `load` walk them.
Generic: nothing here knows what the flags are for."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast, overload

T = TypeVar("T")


class FlagError(ValueError):
    """A flag value that cannot be used; one line that names the flag."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
_FLAG = "flag"
_SECTION = "section"
_TITLE = "title"


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


# ---- declarations -----------------------------------------------------------------------------

def _text_of(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (tuple, list, frozenset, set)):
        return ",".join(sorted(str(v) for v in value))
    return str(value)


# How a parser's values are shown in `--help`, and what they are called, when the
# declaration does not say.
_SHOWN_BY: dict[Callable[[str], Any], Callable[[Any], str]] = {parse_duration: format_duration}
_METAVARS: dict[Callable[[str], Any], str] = {
    parse_bool: "BOOL", parse_duration: "DURATION", parse_int: "N", parse_float: "NUMBER",
    parse_key_values: "KEY=VALUE,...", parse_names: "NAME,..."}


@dataclass(frozen=True, slots=True, kw_only=True)
class Flag:
    name: str  # --like-this
    parse: Callable[[str], Any]
    help: str
    check: Callable[[Any], str | None] | None
    show: Callable[[Any], str]
    metavar: str | None

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def boolean(self) -> bool:
        return self.parse is parse_bool

    def read(self, text: str) -> Any:
        try:
            return self.parse(text)
        except ValueError as exc:
            raise FlagError(named(self.name, str(exc))) from None

    def problem(self, value: Any) -> str | None:
        if self.check is None or value is None:
            return None
        problem = self.check(value)
        return named(self.name, problem) if problem else None


def named(flag: str, message: str) -> str:
    """`message` as one line that starts with `flag` (messages that name it already, such as
    "invalid --aws-api-throttle entry ...", are kept as they are)."""
    message = " ".join(message.splitlines())
    if message.startswith(flag) or message.startswith(f"invalid {flag}"):
        return message
    return f"{flag}: {message}"


@overload
def flag(name: str, *, parse: Callable[[str], T], help: str, default: None,
         check: Callable[[T], str | None] | None = None, show: Callable[[T], str] | None = None,
         metavar: str | None = None) -> T | None: ...


@overload
def flag(name: str, *, parse: Callable[[str], T], help: str,
         default: T | _Required = REQUIRED, check: Callable[[T], str | None] | None = None,
         show: Callable[[T], str] | None = None, metavar: str | None = None) -> T: ...


def flag(name: str, *, parse: Callable[[str], Any], help: str, default: Any = REQUIRED,
         check: Callable[[Any], str | None] | None = None,
         show: Callable[[Any], str] | None = None, metavar: str | None = None) -> Any:
    """A dataclass field filled by `name`. `default`: the value when the flag is not given
    (REQUIRED: the flag must be given); None means unset, and then an empty value given is
    unset too. `check`: None, or why a value cannot be used (the flag is prefixed). `show`:
    the default as one would type it (by default from the value)."""
    declared = Flag(name=name, parse=parse, help=help, check=check,
                    metavar=metavar or _METAVARS.get(parse),
                    show=show or _SHOWN_BY.get(parse, _text_of))
    metadata = {_FLAG: declared}
    if isinstance(default, _Required):
        return dataclasses.field(metadata=metadata)
    if type(default).__hash__ is None:  # a dict: each instance its own copy
        return dataclasses.field(default_factory=lambda: type(default)(default),
                                 metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def section(cls: type[T], *, title: str | None = None, required: bool = False) -> T:
    """A field of a root dataclass holding one section of flags, listed under `title` in
    `--help`. `required`: the section has a required flag, so it has no default either."""
    metadata: dict[str, Any] = {_SECTION: cls, _TITLE: title}
    if required:
        return cast(T, dataclasses.field(metadata=metadata))
    return dataclasses.field(default_factory=cls, metadata=metadata)


def _fields(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Flag | None, type | None]]:
    for f in dataclasses.fields(cls):
        yield f, f.metadata.get(_FLAG), f.metadata.get(_SECTION)


def flags_of(cls: type) -> list[Flag]:
    """Every flag `cls` and its sections declare, in declaration order."""
    found: list[Flag] = []
    for _, declared, nested in _fields(cls):
        if declared is not None:
            found.append(declared)
        elif nested is not None:
            found.extend(flags_of(nested))
    return found


def defaults_of(cls: type) -> dict[str, Any]:
    """Each flag's default value by flag name (REQUIRED for a required one)."""
    found: dict[str, Any] = {}
    for f, declared, nested in _fields(cls):
        if declared is not None:
            if f.default is not dataclasses.MISSING:
                found[declared.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                found[declared.name] = f.default_factory()
            else:
                found[declared.name] = REQUIRED
        elif nested is not None:
            found.update(defaults_of(nested))
    return found


def help_of(declared: Flag, default: Any) -> str:
    """The flag's help, with its default as one would type it."""
    if isinstance(default, _Required):
        return f"{declared.help} (required)"
    shown = "" if default is None else declared.show(default)
    return f"{declared.help} (default: {shown})" if shown else declared.help


# ---- the command line -------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """An argument for every flag of `cls`, a titled section's in its own group. Defaults stay
    in the dataclass: an argument not given is None, and `load` leaves its field to the
    dataclass's default."""
    defaults = defaults_of(cls)

    def add(target: argparse._ActionsContainer, section_cls: type) -> None:
        for f, declared, nested in _fields(section_cls):
            if nested is not None:
                title = f.metadata.get(_TITLE)
                add(parser.add_argument_group(title) if title else target, nested)
            elif declared is not None:
                _add_argument(target, declared, defaults[declared.name])

    add(parser, cls)


def _add_argument(target: argparse._ActionsContainer, declared: Flag, default: Any) -> None:
    options: dict[str, Any] = {
        "dest": declared.dest, "default": None, "metavar": declared.metavar,
        "help": help_of(declared, default).replace("%", "%%"),
        "required": isinstance(default, _Required)}
    if declared.boolean:
        # Go's bool flags: `--flag`, `--flag=true`, `--flag false`.
        options.update(nargs="?", const="true")
    target.add_argument(declared.name, **options)


def given(args: argparse.Namespace, cls: type) -> dict[str, str]:
    """The flags of `cls` given on the command line: flag name -> text as typed."""
    found: dict[str, str] = {}
    for declared in flags_of(cls):
        text = getattr(args, declared.dest, None)
        if text is not None:
            found[declared.name] = text
    return found


def load(cls: type[T], texts: Mapping[str, str]) -> T:
    """`cls` from flag texts (flag name -> text as typed); a flag not given keeps its default.
    Raises FlagError: the first value that cannot be parsed, else the first that a check
    refuses (sections are built, and so checked, in declaration order)."""
    values: dict[str, Any] = {}
    for f, declared, nested in _fields(cast(type, cls)):
        if nested is not None:
            values[f.name] = load(nested, texts)
            continue
        if declared is None:
            continue
        text = texts.get(declared.name)
        unset = f.default is None
        if text is None or (unset and not text.strip()):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise FlagError(f"{declared.name}: required")
            continue
        values[f.name] = declared.read(text)
    loaded = cls(**values)
    validate(loaded)
    return loaded


def validate(settings: object) -> None:
    """Run the checks of `settings`' own flags, then its `check()` (rules across its fields,
    whose message names the flags itself) if it has one. Raises FlagError."""
    for f, declared, _ in _fields(type(settings)):
        problem = declared.problem(getattr(settings, f.name)) if declared is not None else None
        if problem:
            raise FlagError(problem)
    rule: Callable[[], str | None] | None = getattr(settings, "check", None)
    problem = rule() if rule is not None else None
    if problem:
        raise FlagError(" ".join(problem.splitlines()))


def freeze(settings: object) -> None:
    """Make the mappings of a frozen dataclass read-only and hashable (call it from
    `__post_init__`), so that the dataclass is immutable through them too."""
    for f in dataclasses.fields(cast(Any, settings)):
        value = getattr(settings, f.name)
        if isinstance(value, dict):
            object.__setattr__(settings, f.name, _FrozenDict(value))


class _FrozenDict(Mapping[str, Any]):
    """A read-only mapping that hashes by value (MappingProxyType does not hash)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._data) == dict(other)

    def __repr__(self) -> str:
        return repr(self._data)


def parse_args(cls: type[T], argv: Sequence[str], *, prog: str | None = None) -> T:
    """Parse `argv` into `cls` alone (tests, tools)."""
    parser = argparse.ArgumentParser(prog=prog)
    add_arguments(parser, cls)
    return load(cls, given(parser.parse_args(list(argv)), cls))


__all__ = [
    "MAX_DURATION", "REQUIRED", "Flag", "FlagError", "add_arguments", "all_of", "at_least",
    "choice", "defaults_of", "flag", "flags_of", "format_duration", "freeze", "given",
    "greater_than",
    "help_of", "load", "named", "non_empty", "parse_args", "parse_bool", "parse_duration",
    "parse_float", "parse_int", "parse_key_values", "parse_names", "section", "validate",
    "within",
]
