"""The `aiolbc` command line: `--version` and `aiolbc version` name the installed version, and
every option of every command has help text (a flag without one fails here). The version in the
first log line of `aiolbc run`: tests/e2e/test_entrypoint.py."""

from __future__ import annotations

import argparse
from importlib import metadata

import pytest

from controller.main import build_parser, main

VERSION = metadata.version("aiolbc")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    root = build_parser()
    found = {"aiolbc": root}
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update({f"aiolbc {name}": p for name, p in action.choices.items()})
    return found


def test_version_flag_and_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"aiolbc {VERSION}"
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"aiolbc {VERSION}"


@pytest.mark.parametrize("command", sorted(_parsers()))
def test_every_option_has_help(command: str) -> None:
    parser = _parsers()[command]
    missing = [a.option_strings or a.dest for a in parser._actions
               if a.help in (None, "", argparse.SUPPRESS) and a.dest != "help"]
    assert missing == []
    assert parser.format_help()


def test_a_flag_without_help_would_be_found() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet-flag")
    assert [a.dest for a in parser._actions if not a.help and a.dest != "help"] == [
        "quiet_flag"]
