"""The controller process of tests/bench/scale.py: `aiolbc run` exactly as the CLI runs it
(same flags, same `controller.app.run`, uvloop), plus a line protocol on stdin/stdout through
which the benchmark reads the process's own figures, so that they are about aiolbc and not
about the local API server or moto, which run in other processes.

Usage: python tests/bench/_scale_controller.py <aiolbc run flags>

Each stdin line is a command; each answer is one JSON line on stdout:
- `stats`: cpu_s (user + system of this process), rss_mib, hwm_mib (peak RSS), tasks (asyncio
  tasks), fds (open file descriptors), reconciles (per controller), queue depth and busy
  workers per controller (from the metrics registry), collections and seconds spent in the
  garbage collector by generation;
- `profile-start` / `profile-stop N [FILE]`: cProfile around a phase; the answer is the top N
  functions by own time (`tottime_s`, `calls`); FILE, if given, gets the whole profile
  (pstats format);
- `sample-start [SECONDS]` / `sample-stop N`: a sampling profiler around a phase (no cost per
  call, so not skewed towards small functions); the top N lines by own samples and functions
  by inclusive samples, as shares of all samples;
- `trace-start` / `trace-snapshot` / `trace-diff N`: tracemalloc; the diff is the top N
  allocation sites by size growth since the snapshot;
- `types N`: the N most numerous types among the objects the garbage collector tracks;
- `gc`: a full collection, `trim`: glibc's malloc_trim (diagnostics only; the figures the
  benchmark reports never follow either).
"""

from __future__ import annotations

import asyncio
import collections
import cProfile
import ctypes
import gc
import json
import os
import pstats
import signal
import sys
import tempfile
import time
import tracemalloc
from typing import Any

from controller import app, config
from controller.main import build_parser
from runtime import metrics
from runtime.logging import configure_logging
from runtime.manager import run_main


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


# Only the collectors of these families run for `stats`: a full scrape of the registry costs
# milliseconds, which the benchmark, polling for idleness, would count as the controller's CPU.
_STATS_FAMILIES = ("controller_runtime_reconcile_total", "workqueue_depth",
                   "controller_runtime_active_workers",
                   "aiolbc_controller_pending_priority_decisions")


def _samples(registry: Any, name: str) -> dict[str, float]:
    """Sum of a metric's samples by `controller`/`name` label."""
    out: dict[str, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name != name:
                continue
            label = sample.labels.get("controller") or sample.labels.get("name") or ""
            out[label] = out.get(label, 0.0) + sample.value
    return out


class Probe:
    def __init__(self) -> None:
        self.profiler: cProfile.Profile | None = None
        self.snapshot: tracemalloc.Snapshot | None = None
        # Time inside the cyclic garbage collector, by generation: part of the CPU an event
        # costs that no profile shows.
        self.gc_s = [0.0, 0.0, 0.0]
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)
        self.sampler = Sampler()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_s[info["generation"]] += time.perf_counter() - self._gc_started

    def stats(self) -> dict[str, Any]:
        times = os.times()
        registry = metrics.default_registry().restricted_registry(_STATS_FAMILIES)
        return {
            "cpu_s": times.user + times.system,
            "rss_mib": _status_mib("VmRSS"),
            "hwm_mib": _status_mib("VmHWM"),
            "tasks": len(asyncio.all_tasks()),
            "fds": len(os.listdir("/proc/self/fd")),
            "reconciles": _samples(registry, "controller_runtime_reconcile_total"),
            "depth": _samples(registry, "workqueue_depth"),
            "busy": _samples(registry, "controller_runtime_active_workers"),
            "deciding": _samples(registry, "aiolbc_controller_pending_priority_decisions"),
            "gc": [s["collections"] for s in gc.get_stats()],
            "gc_s": [round(t, 3) for t in self.gc_s],
        }

    def command(self, line: str) -> Any:
        word, _, arg = line.strip().partition(" ")
        if word == "stats":
            return self.stats()
        if word == "profile-start":
            self.profiler = cProfile.Profile()
            self.profiler.enable()
            return {}
        if word == "profile-stop":
            count, _, dump = arg.partition(" ")
            return self._profile_top(int(count or 20), dump or None)
        if word == "trace-start":
            tracemalloc.start(int(arg or 1))
            return {}
        if word == "trace-snapshot":
            self.snapshot = tracemalloc.take_snapshot()
            return {"traced_mib": tracemalloc.get_traced_memory()[0] / 2**20}
        if word == "trace-diff":
            return self._trace_diff(int(arg or 20))
        if word == "sample-start":
            self.sampler.start(float(arg or 0.001))
            return {}
        if word == "sample-stop":
            return self.sampler.stop(int(arg or 20))
        if word == "gc":
            return {"collected": gc.collect()}
        if word == "types":
            counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
            counts["(frozen)"] = gc.get_freeze_count()
            return dict(counts.most_common(int(arg or 30)))
        if word == "mallocstats":
            return _pymalloc_stats()
        if word == "trim":
            before = _status_mib("VmRSS")
            libc = ctypes.CDLL(None)
            released = libc.malloc_trim(0)
            return {"rss_before_mib": before, "rss_after_mib": _status_mib("VmRSS"),
                    "released": released}
        return {"error": f"unknown command {word!r}"}

    def _profile_top(self, n: int, dump: str | None = None) -> list[dict[str, Any]]:
        profiler, self.profiler = self.profiler, None
        if profiler is None:
            return []
        profiler.disable()
        if dump is not None:
            profiler.dump_stats(dump)
        stats = pstats.Stats(profiler)
        rows = []
        for (filename, line, function), (_, calls, tottime, cumtime, _) in \
                stats.stats.items():  # type: ignore[attr-defined]
            rows.append({"function": f"{_short(filename)}:{line}:{function}", "calls": calls,
                         "tottime_s": round(tottime, 4), "cumtime_s": round(cumtime, 4)})
        rows.sort(key=lambda r: r["tottime_s"], reverse=True)
        return rows[:n]

    def _trace_diff(self, n: int) -> dict[str, Any]:
        if self.snapshot is None:
            return {"error": "no snapshot"}
        now = tracemalloc.take_snapshot()
        diff = now.compare_to(self.snapshot, "lineno")
        top = [{"site": f"{_short(s.traceback[0].filename)}:{s.traceback[0].lineno}",
                "growth_kib": round(s.size_diff / 1024, 1), "count_diff": s.count_diff}
               for s in diff[:n]]
        return {"traced_mib": tracemalloc.get_traced_memory()[0] / 2**20, "top": top}


def _pymalloc_stats() -> dict[str, Any]:
    """The summary lines of sys._debugmallocstats() (which writes to the C stderr): how much
    of the arenas pymalloc holds is in use."""
    with tempfile.TemporaryFile(mode="w+") as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    stats: dict[str, Any] = {}
    for line in text.splitlines():
        label, _, value = line.partition("=")
        label = label.strip().lstrip("#").strip()
        if label in ("arenas allocated current", "bytes in allocated blocks",
                     "bytes in available blocks", "bytes in arenas", "unused pools",
                     "bytes lost to pool headers", "bytes lost to quantization"):
            stats[label] = int(value.strip().replace(",", ""))
    return stats


class Sampler:
    """A sampling profiler: every `interval` seconds of CPU (ITIMER_PROF) the running Python
    frame is noted. Unlike cProfile it adds no cost per call, so C functions called in a tight
    loop (dict.get, isinstance) are not inflated; a C call is charged to the line calling it."""

    def __init__(self) -> None:
        self.own: collections.Counter[str] = collections.Counter()
        self.inclusive: collections.Counter[str] = collections.Counter()
        self.samples = 0

    def start(self, interval: float) -> None:
        self.own.clear()
        self.inclusive.clear()
        self.samples = 0
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, interval, interval)

    def _sample(self, signum: int, frame: Any) -> None:
        self.samples += 1
        if frame is None:
            return
        code = frame.f_code
        self.own[f"{_short(code.co_filename)}:{frame.f_lineno}:{code.co_name}"] += 1
        seen = set()
        while frame is not None:
            code = frame.f_code
            name = f"{_short(code.co_filename)}:{code.co_name}"
            if name not in seen:
                seen.add(name)
                self.inclusive[name] += 1
            frame = frame.f_back

    def stop(self, n: int) -> dict[str, Any]:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        total = max(self.samples, 1)
        return {"samples": self.samples,
                "own": [{"line": k, "share": round(v / total, 4)}
                        for k, v in self.own.most_common(n)],
                "inclusive": [{"function": k, "share": round(v / total, 4)}
                              for k, v in self.inclusive.most_common(n)]}


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/runtime/", "/controller/"):
        if marker in filename:
            head = "" if marker == "site-packages/" else marker.strip("/") + "/"
            return head + filename.split(marker, 1)[1]
    return os.path.basename(filename)


async def _serve_commands(probe: Probe) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        try:
            answer = probe.command(line.decode())
        except Exception as exc:  # a diagnostics command must not take the controller down
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    # stdin closed: the benchmark is gone; stop as an operator would.
    os.kill(os.getpid(), signal.SIGTERM)


async def _main(cfg: config.ControllerConfig) -> int:
    probe = Probe()
    commands = asyncio.create_task(_serve_commands(probe), name="bench-commands")
    try:
        return await app.run(cfg)
    finally:
        commands.cancel()


def main() -> int:
    args = build_parser().parse_args(["run", *sys.argv[1:]])
    cfg = config.config_from_args(args)
    configure_logging(level=cfg.runtime.log_level)
    return run_main(lambda: _main(cfg))


if __name__ == "__main__":
    sys.exit(main())
