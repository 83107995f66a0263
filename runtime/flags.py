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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast, overload

from runtime.flagvalues import (
    format_duration,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_key_values,
    parse_names,
)

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
    "REQUIRED", "Flag", "FlagError", "add_arguments", "defaults_of", "flag", "flags_of",
    "freeze", "given", "help_of", "load", "named", "parse_args", "section", "validate",
]
