"""Every benchmark in tests/bench runs in `--quick` mode and ends with one JSON object, so the
benchmarks keep working as the code changes. Their figures are not asserted: they are measured
by `make bench` and reported, not gated. A step of its own, out of the default run:
`make bench-check` (`pytest --bench tests/test_benchmarks.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

BENCH = Path(__file__).resolve().parent / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
# Benchmarks with more than one subject run once per subject.
# The restart benchmark's set-up is most of its run: the suite checks it on fewer objects than
# its --quick size (the script, not this test, is where its figures come from).
_SMALL = {"restart.py": ("--services", "20")}
RUNS = ([(script, _SMALL.get(script.name, ())) for script in SCRIPTS]
        + [(BENCH / "restart.py", ("--kind", "ingress", *_SMALL["restart.py"]))])


def test_there_are_benchmarks() -> None:
    assert {"envtest.py", "workqueue.py", "informer.py", "deploy.py"} <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize(("script", "args"), RUNS,
                         ids=[" ".join((s.stem, *a)) for s, a in RUNS])
def test_benchmark_quick_run_prints_json(script: Path, args: tuple[str, ...]) -> None:
    proc = subprocess.run([sys.executable, str(script), "--quick", *args], capture_output=True,
                          text=True, timeout=900, cwd=BENCH.parents[1], check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    last = proc.stdout.strip().splitlines()[-1]
    figures = json.loads(last)
    assert isinstance(figures, dict)
    assert figures, "empty figures"
    assert all(isinstance(v, int | float | str | bool | dict | list | None)
               for v in figures.values())
