"""Flags declared on the fields they fill: one declaration gives the argparse argument, the
`--help` line with its default as typed, Go's bool and empty-value syntax, and the loading."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import pytest

from runtime import flags, flagvalues
from runtime.flags import FlagError, flag, section


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    period: float = flag("--period", default=600.0, parse=flagvalues.parse_duration,
                         check=flagvalues.greater_than(0), help="how often")
    workers: int = flag("--workers", default=3, parse=flagvalues.parse_int,
                        check=flagvalues.within(1, 10), help="how many at once")
    verbose: bool = flag("--verbose", default=False, parse=flagvalues.parse_bool, help="say more")
    mode: Literal["a", "b"] = flag("--mode", default="a", parse=flagvalues.choice("a", "b"),
                                   help="which")
    labels: Mapping[str, str] = flag("--labels", default={}, parse=flagvalues.parse_key_values,
                                     help="key=value,...")
    home: str | None = flag("--home", default=None, parse=str, help="where (default: here)")
    not_a_flag: int = 7

    def __post_init__(self) -> None:
        flags.freeze(self)

    def check(self) -> str | None:
        if self.verbose and self.workers > 5:
            return "--verbose: only with at most 5 --workers"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Named:
    name: str = flag("--name", parse=str, check=flagvalues.non_empty, help="who")


@dataclass(frozen=True, slots=True, kw_only=True)
class Root:
    named: Named = section(Named, title="naming", required=True)
    timing: Timing = section(Timing, title="timing")


def parse(*argv: str) -> Root:
    return flags.parse_args(Root, ["--name", "n", *argv])


def help_text() -> str:
    parser = argparse.ArgumentParser(prog="tool")
    flags.add_arguments(parser, Root)
    return " ".join(parser.format_help().split())


def test_a_declared_flag_is_in_the_parser_the_help_and_the_loaded_value() -> None:
    text = help_text()
    assert "--period DURATION how often (default: 10m)" in text
    assert "--workers N how many at once (default: 3)" in text
    assert "--verbose [BOOL] say more (default: false)" in text
    assert "--name NAME who (required)" in text
    assert "--home HOME where (default: here)" in text  # no default to show: the help says it
    assert "--labels KEY=VALUE,... key=value,..." in text  # an empty default is not shown
    assert "naming: --name" in text  # a group per section
    assert "timing: --period" in text
    loaded = parse("--period", "1h30m", "--workers=4", "--labels", "a=1", "--home", "/h")
    assert loaded == Root(named=Named(name="n"), timing=Timing(
        period=5400.0, workers=4, labels={"a": "1"}, home="/h"))
    assert parse().timing == Timing()  # defaults live in the dataclass only


def test_every_shown_default_reads_back_as_the_default() -> None:
    defaults = flags.defaults_of(Root)
    for declared in flags.flags_of(Root):
        default = defaults[declared.name]
        if isinstance(default, type(flags.REQUIRED)) or default is None:
            continue
        shown = declared.show(default)
        if shown:
            assert declared.read(shown) == default, declared.name


@pytest.mark.parametrize(("argv", "verbose"), [
    ([], False), (["--verbose"], True), (["--verbose=true"], True), (["--verbose", "false"], False),
    (["--verbose=F"], False), (["--verbose", "1"], True),
])
def test_bool_flags_take_go_syntax(argv: list[str], verbose: bool) -> None:
    assert parse(*argv).timing.verbose is verbose


def test_an_empty_value_is_the_default_only_for_an_unset_default() -> None:
    assert parse("--home", "").timing.home is None
    with pytest.raises(FlagError, match=r"^--period: empty duration$"):
        parse("--period", "")
    with pytest.raises(FlagError, match=r"^--name: String should have at least 1 character$"):
        flags.parse_args(Root, ["--name", ""])


@pytest.mark.parametrize(("argv", "message"), [
    (["--period", "soon"], "--period: invalid duration 'soon'"),
    (["--period", "0"], "--period: Input should be greater than 0"),
    (["--workers", "many"], "--workers: Input should be a valid integer"),
    (["--workers", "11"], "--workers: Input should be less than or equal to 10"),
    (["--verbose", "maybe"], "--verbose: expected true or false, got 'maybe'"),
    (["--mode", "c"], "--mode: Input should be 'a' or 'b'"),
    (["--labels", "x"], "--labels: expected key=value, got 'x'"),
    (["--verbose", "--workers", "6"], "--verbose: only with at most 5 --workers"),
])
def test_a_bad_value_is_one_line_naming_its_flag(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as info:
        parse(*argv)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_a_required_flag_is_required() -> None:
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        flags.parse_args(Root, [])
    with pytest.raises(FlagError, match=r"^--name: required$"):
        flags.load(Root, {})


def test_settings_built_in_code_are_checked_by_validate_and_stay_immutable() -> None:
    labels = {"a": "1"}
    timing = Timing(labels=labels)
    labels["a"] = "2"
    assert timing.labels == {"a": "1"}
    with pytest.raises(TypeError):
        timing.labels["b"] = "x"  # type: ignore[index]
    assert hash(timing) == hash(Timing(labels={"a": "1"}))
    with pytest.raises(FlagError, match=r"^--workers: Input should be greater than or equal"):
        flags.validate(Timing(workers=0))
