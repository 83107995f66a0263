"""The `aiolbc` command line: `--version` and `aiolbc version` name the installed version,
every option of every command has help text (a flag without one fails here), and `aiolbc run`
logs its version in its first line, before anything can fail."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from controller.main import build_parser, main

AIOLBC = Path(sys.executable).parent / "aiolbc"
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


def test_the_first_log_line_of_a_run_names_the_version(tmp_path: Path) -> None:
    # An API server that is not there: the run ends (exit 1) after its first line.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}]}))
    proc = subprocess.run(
        [str(AIOLBC), "run", "--cluster-name=c", "--aws-region=us-west-2",
         "--aws-vpc-id=vpc-0123456789abcdef0", f"--kubeconfig={kubeconfig}",
         "--api-server-startup-timeout=0", "--metrics-bind-addr=0",
         "--health-probe-bind-addr=0", "--webhook-bind-port=0"],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    first = json.loads((proc.stdout + proc.stderr).splitlines()[0])
    assert (first["msg"], first["version"]) == ("starting aiolbc", VERSION)
