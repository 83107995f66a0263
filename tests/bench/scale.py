"""Scale benchmark: aiolbc on a large cluster — convergence, CPU per endpoint event, memory
steady and after churn, tasks and file descriptors.

Usage: python tests/bench/scale.py [--quick] [--churn-seconds S] [--churn-rate R]
                                  [--quiet-events N] [--quiet-rate R] [--trace] [--no-profile]
                                  [--cprofile] [--cprofile-out FILE]
                                  [--profile-events quiet|woken|unused]
                                  [--controller-flag FLAG ...]

Three processes, so that every figure is about aiolbc alone: moto's server (AWS), the local API
server with the cluster seeded into it and the load generator (tests/bench/_scale_cluster.py),
and `aiolbc run` (tests/bench/_scale_controller.py: the CLI's own `run`, plus a stdin line
protocol through which this script reads the controller process's CPU time, RSS, tasks and
file descriptors from inside it).

The cluster (default; `--quick` in brackets): 50 [4] NLB Services (`service.k8s.aws/nlb`, ip
targets) with 1,000 [100] ready endpoints each in slices of 100; 20,000 [400] Pods; 5,000
[200] ConfigMaps and 5,000 [200] Secrets; 500 [10] Nodes; 2,000 [50] other Services with a
3-endpoint slice each. The NLBs carry no security group (`aws-load-balancer-disable-nlb-sg`,
see _scale_cluster.py). The controller runs with `aiolbc run`'s defaults (client-side AWS
throttle included: RegisterTargets 4/s bounds convergence).

Phases and figures (the last stdout line is one JSON object):
1. converge: from start-up until every binding is Ready with all its targets registered and
   checkpointed and every queue is empty: `converge_s`, `converge_cpu_s`;
2. steady, once every load-balanced slice changed once (the bindings are created after the
   slices were listed, so until then the cache holds index entries of them) and the queues
   are idle: `rss_steady_mib`, `tasks_before`, `fds_before`, and the idle CPU rate,
   subtracted from the per-event figures below;
3. quiet endpoint events (an EndpointSlice update of a load-balanced Service that leaves its
   serving endpoints unchanged, a pod starting or crash-looping, see _scale_cluster.py) at
   `--quiet-rate`: `cpu_ms_per_endpoint_event`, `events_per_s_one_core` (1,000 / that: the
   rate at which this work alone would fill one core), `reconciles_per_event` (0: such an
   event wakes no binding), `gc_ms_per_event` (the part of it spent in the garbage collector,
   by generation); then half as many woken endpoint events (the ready endpoints listed in
   another order: the binding's reconcile runs and finds its checkpoint unchanged):
   `cpu_ms_per_woken_endpoint_event`, `woken_events_per_s_one_core`,
   `reconciles_per_woken_event`; then as many readiness flips in slices of Services no
   load balancer uses (3 endpoints each, kept as index entries: the cost of an event the
   controller has no use for, mostly the watch's fixed cost per event):
   `cpu_ms_per_unused_slice_event`, `reconciles_per_unused_slice_event` (0); then as many
   quiet events as fast as the cluster process makes them (up to 5,000 a second;
   `burst_rate` says how fast it did): the same figures
   under load, `cpu_ms_per_endpoint_event_in_burst`, `events_per_s_one_core_in_burst`,
   `reconciles_per_burst_event` (at 100 a second the controller idles between events and
   each finds its caches cold; events back to back cost less each, so the rate one core
   sustains is higher than 1,000 / `cpu_ms_per_endpoint_event`); then, unless `--no-profile`,
   half as many quiet events again (woken or unused-slice ones with `--profile-events`) under a
   sampling profiler: `profile_top` (CPU µs per event by line, own time) and
   `profile_inclusive` (by function, callees included); with `--cprofile`, half as many again
   under cProfile: `cprofile_top` (by function, own and cumulative µs and calls per event);
4. mixed churn for `--churn-seconds` at `--churn-rate` changes per second: annotations on Pods,
   ConfigMaps, Services and Secrets; readiness flips in load-balanced and other slices (real
   target changes, registered and deregistered within the AWS throttle); edits of other
   Services; Secret rotations and replacements; node heartbeats. Then until idle again:
   `rss_after_churn_mib`, `rss_peak_mib` (the process's high-water mark), `tasks_after`,
   `fds_after`, `churn_cpu_ms_per_change`; then, as a diagnostic, `rss_after_malloc_trim_mib`
   (the RSS once glibc gave back the free memory it holds). `--trace` runs the controller under
   tracemalloc from start-up and adds `alloc_growth_top`, the allocation sites whose live
   memory grew over the churn (figures of that run include tracemalloc's own cost).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION, TARGETGROUPBINDINGS
from controller.standins import seed_vpc, sync_client
from runtime.client import KubeClient
from runtime.logging import configure_logging
from runtime.resources import SERVICES

BENCH = Path(__file__).resolve().parent
CRDS = BENCH.parents[1] / "manifests" / "crds"
CLUSTER = "scale"
REGION = "us-west-2"
LB_NAMESPACE = "lb"  # where _scale_cluster.py puts the load-balanced Services
TGB_CONTROLLER = "targetGroupBinding"


def log(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    lb_services: int = 50
    endpoints: int = 1000
    pods: int = 20_000
    configmaps: int = 5000
    secrets: int = 5000
    nodes: int = 500
    other_services: int = 2000

    def flags(self) -> list[str]:
        return [f"--{k.replace('_', '-')}={v}" for k, v in asdict(self).items()]


QUICK = Shape(lb_services=4, endpoints=100, pods=400, configmaps=200, secrets=200, nodes=10,
              other_services=50)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ---- the processes ---------------------------------------------------------------------------


class LineProcess:
    """A child process spoken to in lines: a command on stdin, one JSON answer on stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str) -> None:
        self.proc = proc
        self.name = name
        self._lock = asyncio.Lock()

    @classmethod
    async def start(cls, name: str, argv: list[str], *, stderr: Path,
                    env: dict[str, str] | None = None) -> LineProcess:
        with stderr.open("wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, env=env, limit=2**24)
        return cls(proc, name)

    async def readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise RuntimeError(f"{self.name} exited (status {await self.proc.wait()})")
        return line.decode()

    async def ask(self, command: str, timeout: float = 120.0) -> Any:
        assert self.proc.stdin is not None
        async with self._lock:
            self.proc.stdin.write(command.encode() + b"\n")
            await self.proc.stdin.drain()
            answer = json.loads(await self.readline(timeout))
        if isinstance(answer, dict) and "error" in answer:
            raise RuntimeError(f"{self.name}: {command}: {answer['error']}")
        return answer

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 15)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def start_moto(stderr: Path) -> tuple[LineProcess, str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    moto = await LineProcess.start("moto", [sys.executable, "-m", "controller.standins",
                                            "--port", str(port)], stderr=stderr)

    def probe() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    for _ in range(300):
        if await asyncio.to_thread(probe):
            return moto, url
        if moto.proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    raise RuntimeError("moto server did not start")


def controller_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")
           and k != "KUBECONFIG"}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_EC2_METADATA_DISABLED="true", PYTHONUNBUFFERED="1", **extra)
    return env


def controller_flags(kubeconfig: Path, moto_url: str, vpc_id: str) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", f"--cluster-name={CLUSTER}",
            f"--aws-region={REGION}", f"--aws-vpc-id={vpc_id}",
            f"--aws-endpoint-url={moto_url}",
            f"--metrics-bind-addr=127.0.0.1:{_free_port()}",
            f"--health-probe-bind-addr=127.0.0.1:{_free_port()}",
            f"--webhook-bind-port={_free_port()}", "--log-level=error"]


# ---- observing the controller ------------------------------------------------------------------


def _tgb_done(obj: dict[str, Any], ready: dict[str, int]) -> bool:
    """Checkpointed (written only after a successful pass) and Ready with as many targets as
    its Service has ready endpoints."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if not annotations.get(CHECKPOINT_ANNOTATION):
        return False
    service = ((obj.get("spec") or {}).get("serviceRef") or {}).get("name")
    expected = ready.get(str(service))
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True"
                        and condition.get("message") == f"{expected} target(s) registered")
    return False


def _idle(stats: dict[str, Any]) -> bool:
    return not any(stats["depth"].values()) and not any(stats["busy"].values()) and not any(
        stats.get("deciding", {}).values())


class Bench:
    def __init__(self, shape: Shape, client: KubeClient, controller: LineProcess,
                 cluster: LineProcess) -> None:
        self.shape = shape
        self.client = client
        self.controller = controller
        self.cluster = cluster

    async def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = await self.controller.ask("stats")
        return stats

    async def converged(self) -> bool:
        ready: dict[str, int] = await self.cluster.ask("ready")
        bindings = (await self.client.list(TARGETGROUPBINDINGS, LB_NAMESPACE))["items"]
        if sum(1 for b in bindings if _tgb_done(b, ready)) < self.shape.lb_services:
            return False
        services = (await self.client.list(SERVICES, LB_NAMESPACE))["items"]
        return all(((s.get("status") or {}).get("loadBalancer") or {}).get("ingress")
                   for s in services)

    async def wait(self, what: str, done: Callable[[], Awaitable[bool]], *, cap: float,
                   every: float = 0.5) -> float:
        started = time.perf_counter()
        last_log = started
        while not await done():
            now = time.perf_counter()
            if now - started > cap:
                raise RuntimeError(f"{what}: not done after {cap:.0f} s")
            if now - last_log >= 10:
                stats = await self.stats()
                log(f"{what}: {now - started:.0f} s, queues {stats['depth']}, "
                    f"reconciles {stats['reconciles']}")
                last_log = now
            await asyncio.sleep(every)
        return time.perf_counter() - started

    async def wait_idle(self, what: str, *, hold: float, cap: float) -> dict[str, Any]:
        """Until the controller's queues have been empty, with no reconcile running, for
        `hold` seconds; the stats at the end."""
        idle_since: float | None = None

        async def held() -> bool:
            nonlocal idle_since
            if not _idle(await self.stats()):
                idle_since = None
                return False
            now = time.perf_counter()
            idle_since = now if idle_since is None else idle_since
            return now - idle_since >= hold

        await self.wait(what, held, cap=cap, every=0.25)
        return await self.stats()


BURST_RATE = 5000.0  # quiet events a second asked of the cluster in the burst (more than it makes)


def _tgb_reconciles(stats: dict[str, Any]) -> float:
    return float(stats["reconciles"].get(TGB_CONTROLLER, 0.0))


async def measure(bench: Bench, *, quick: bool, quiet_events: int, quiet_rate: float,
                  churn_seconds: float, churn_rate: float, profile: bool,
                  trace: bool, cprofile: bool = False,
                  cprofile_out: str | None = None,
                  profile_events: str = "quiet") -> dict[str, Any]:
    shape = bench.shape
    result: dict[str, Any] = {}
    hold = 1.0 if quick else 3.0

    # 1. converge
    t0 = time.perf_counter()
    cpu0 = (await bench.stats())["cpu_s"]
    await bench.wait("converge", bench.converged, cap=120 if quick else 900)
    converged = await bench.wait_idle("converge (queues)", hold=hold, cap=300)
    result["converge_s"] = round(time.perf_counter() - t0 - hold, 2)
    result["converge_cpu_s"] = round(converged["cpu_s"] - cpu0, 2)

    # 2. steady. The bindings were created after the slices were listed, so the cache holds
    # index entries of them until each changes (slicecache.py): change each once, so that
    # the cache holds what a controller that has run a while holds.
    await bench.cluster.ask(f"touch {quiet_rate}", timeout=3600)
    await bench.wait_idle("touch", hold=hold, cap=300)
    await asyncio.sleep(1.0 if quick else 5.0)
    before = await bench.stats()
    idle_window = 2.0 if quick else 10.0
    await asyncio.sleep(idle_window)
    idle_after = await bench.stats()
    idle_cpu_per_s = (idle_after["cpu_s"] - before["cpu_s"]) / idle_window
    steady_pymalloc = await bench.controller.ask("mallocstats")
    steady_types: dict[str, int] = await bench.controller.ask("types 40")
    result.update(rss_steady_mib=round(idle_after["rss_mib"], 1),
                  tasks_before=before["tasks"], fds_before=before["fds"],
                  idle_cpu_ms_per_s=round(idle_cpu_per_s * 1000, 2))

    # 3. quiet endpoint events
    async def cost(command: str, what: str) -> tuple[dict[str, Any], float, dict[str, Any],
                                                       dict[str, Any]]:
        """The cluster makes the events `command` says; the controller's CPU ms an event
        until it is idle again (its idle rate left out), what was sent, the stats around."""
        start = await bench.stats()
        sent = await bench.cluster.ask(command, timeout=3600)
        end = await bench.wait_idle(what, hold=hold, cap=300)
        seconds = sent["seconds"] + hold  # the hold is idle time measured in the CPU delta too
        busy = end["cpu_s"] - start["cpu_s"] - idle_cpu_per_s * seconds
        return sent, max(busy, 0.0) * 1000 / sent["sent"], start, end

    def per_core(ms: float) -> int | None:
        return round(1000 / ms) if ms > 0 else None

    def reconciles(start: dict[str, Any], end: dict[str, Any], events: int) -> float:
        return round((_tgb_reconciles(end) - _tgb_reconciles(start)) / events, 3)

    half = max(quiet_events // 2, 1)  # the woken, unused and profiled phases' events

    sent, per_event_ms, start, end = await cost(f"quiet {quiet_events} {quiet_rate}",
                                                "quiet events")
    gc_ms = [round((b - a) * 1000 / sent["sent"], 3) for a, b in zip(start["gc_s"], end["gc_s"],
                                                                   strict=True)]
    result.update(
        quiet_events=sent["sent"], quiet_rate=quiet_rate, gc_ms_per_event=gc_ms,
        cpu_ms_per_endpoint_event=round(per_event_ms, 3),
        events_per_s_one_core=per_core(per_event_ms),
        reconciles_per_event=reconciles(start, end, sent["sent"]))
    # 3b. woken endpoint events: the same, with the binding's reconcile in each
    woken, woken_ms, start, end = await cost(f"woken {half} {quiet_rate}", "woken events")
    result.update(
        woken_events=woken["sent"], cpu_ms_per_woken_endpoint_event=round(woken_ms, 3),
        woken_events_per_s_one_core=per_core(woken_ms),
        reconciles_per_woken_event=reconciles(start, end, woken["sent"]))
    # 3c. as many events of slices of Services nothing uses (kept as index entries only)
    unused, unused_ms, start, end = await cost(f"unused {half} {quiet_rate}",
                                               "unused-slice events")
    result.update(
        unused_slice_events=unused["sent"], cpu_ms_per_unused_slice_event=round(unused_ms, 3),
        reconciles_per_unused_slice_event=reconciles(start, end, unused["sent"]))
    # 3d. the quiet events again, as fast as the cluster process makes them: the cost of an
    # event under load, from which what one core sustains is reckoned (1,000 / it), rather
    # than from events 10 ms apart (between which the controller idles, its caches go cold).
    burst, burst_ms, start, end = await cost(f"quiet {quiet_events} {BURST_RATE}",
                                             "a burst of quiet events")
    result.update(
        burst_events=burst["sent"], burst_rate=burst["rate"],
        cpu_ms_per_endpoint_event_in_burst=round(burst_ms, 3),
        events_per_s_one_core_in_burst=per_core(burst_ms),
        reconciles_per_burst_event=reconciles(start, end, burst["sent"]))
    if profile:
        n = half
        start = await bench.stats()
        await bench.controller.ask("sample-start 0.0005")
        await bench.cluster.ask(f"{profile_events} {n} {quiet_rate}", timeout=3600)
        await bench.wait_idle(f"profiled {profile_events} events", hold=hold, cap=300)
        sampled = await bench.controller.ask("sample-stop 15")
        end = await bench.stats()
        us = (end["cpu_s"] - start["cpu_s"]) * 1e6 / n  # sampler included, idle left in
        result["profile_top"] = [{"line": row["line"], "us_per_event": round(row["share"] * us)}
                                 for row in sampled["own"]]
        result["profile_inclusive"] = [
            {"function": row["function"], "us_per_event": round(row["share"] * us)}
            for row in sampled["inclusive"]]
    if cprofile:
        # Deterministic, so skewed towards small functions (each call costs the profiler),
        # but exact about who calls what: the sampler above cannot see into C calls.
        n = half
        await bench.controller.ask("profile-start")
        await bench.cluster.ask(f"{profile_events} {n} {quiet_rate}", timeout=3600)
        await bench.wait_idle(f"cProfiled {profile_events} events", hold=hold, cap=300)
        dump = f" {cprofile_out}" if cprofile_out else ""
        rows = await bench.controller.ask(f"profile-stop 40{dump}")
        result["cprofile_top"] = [
            {"function": row["function"], "calls_per_event": round(row["calls"] / n, 2),
             "own_us_per_event": round(row["tottime_s"] * 1e6 / n),
             "cum_us_per_event": round(row["cumtime_s"] * 1e6 / n)} for row in rows]

    # 4. churn
    traced_before = 0.0
    if trace:  # tracing since start-up (PYTHONTRACEMALLOC): frees of cached objects count
        traced_before = (await bench.controller.ask("trace-snapshot"))["traced_mib"]
    start = await bench.stats()
    peak_during = start["rss_mib"]
    churn = asyncio.create_task(bench.cluster.ask(f"churn {churn_seconds} {churn_rate}",
                                                  timeout=churn_seconds + 600))
    while not churn.done():
        await asyncio.wait({churn}, timeout=5.0)
        peak_during = max(peak_during, (await bench.stats())["rss_mib"])
    made = churn.result()
    await bench.wait("churn settles", bench.converged, cap=900)
    await bench.wait_idle("churn (queues)", hold=hold, cap=900)
    await asyncio.sleep(1.0 if quick else 5.0)
    after = await bench.stats()
    result.update(
        churn_seconds=churn_seconds, churn_rate=churn_rate, churn_changes=made["sent"],
        churn_kinds=made["kinds"],
        churn_cpu_ms_per_change=round((after["cpu_s"] - start["cpu_s"]) * 1000
                                      / max(made["sent"], 1), 3),
        churn_gc_s=[round(b - a, 2) for a, b in zip(start["gc_s"], after["gc_s"], strict=True)],
        rss_after_churn_mib=round(after["rss_mib"], 1),
        rss_peak_during_churn_mib=round(peak_during, 1),
        rss_peak_mib=round(after["hwm_mib"], 1),
        tasks_after=after["tasks"], fds_after=after["fds"],
        after_churn_vs_steady=round(after["rss_mib"] / result["rss_steady_mib"], 3))
    if trace:
        diff = await bench.controller.ask("trace-diff 15", timeout=600)
        result["traced"] = True
        result["traced_mib_before_after_churn"] = [round(traced_before, 1),
                                                   round(diff["traced_mib"], 1)]
        result["alloc_growth_top"] = diff["top"]
    # Diagnostics, after every figure: how much of the RSS is memory the allocator holds free.
    trimmed = await bench.controller.ask("trim")
    result["rss_after_malloc_trim_mib"] = round(trimmed["rss_after_mib"], 1)
    result["pymalloc_after_churn"] = await bench.controller.ask("mallocstats")
    result["pymalloc_steady"] = steady_pymalloc
    after_types: dict[str, int] = await bench.controller.ask("types 40")
    result["tracked_objects_growth"] = dict(sorted(
        ((name, n - steady_types.get(name, 0)) for name, n in after_types.items()
         if n != steady_types.get(name, 0)), key=lambda kv: -abs(kv[1]))[:12])
    # What a full collection finds then: cyclic garbage the collector had not got to yet.
    result["full_collection_after_churn"] = (await bench.controller.ask("gc"))["collected"]
    result["pymalloc_after_full_collection"] = await bench.controller.ask("mallocstats")
    result["reconciles"] = after["reconciles"]
    del shape
    return result


async def run(shape: Shape, *, quick: bool, extra_flags: list[str],
              **figures: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="aiolbc-scale-") as tmp:
        workdir = Path(tmp)
        kubeconfig = workdir / "kubeconfig"
        processes: list[LineProcess] = []
        try:
            moto, moto_url = await start_moto(workdir / "moto.log")
            processes.append(moto)
            seed = await asyncio.to_thread(seed_vpc, moto_url, cluster_name=CLUSTER,
                                           region=REGION)
            cluster = await LineProcess.start(
                "cluster", [sys.executable, str(BENCH / "_scale_cluster.py"),
                            f"--kubeconfig={kubeconfig}", f"--crds={CRDS}", *shape.flags()],
                stderr=workdir / "cluster.log")
            processes.append(cluster)
            url = (await cluster.readline(60)).strip()
            if not url.startswith("http://127.0.0.1:"):
                raise RuntimeError(f"local API server did not start: {url!r}")
            log(f"seeding {shape}")
            seeded = await cluster.ask("seed", timeout=1800)
            log(f"seeded in {seeded['seed_s']} s")
            controller = await LineProcess.start(
                "controller", [sys.executable, str(BENCH / "_scale_controller.py"),
                               *controller_flags(kubeconfig, moto_url, seed.vpc_id),
                               *extra_flags],
                stderr=workdir / "controller.log",
                env=controller_env(**({"PYTHONTRACEMALLOC": "1"} if figures["trace"] else {})))
            processes.append(controller)
            async with await KubeClient.from_kubeconfig(kubeconfig) as client:
                bench = Bench(shape, client, controller, cluster)
                try:
                    result = await measure(bench, quick=quick, **figures)
                except BaseException:
                    tail = (workdir / "controller.log").read_text(errors="replace")[-3000:]
                    log(f"controller log (tail):\n{tail}")
                    raise
            result["registered_targets"] = await asyncio.to_thread(
                registered_targets, moto_url)
            result["expected_targets"] = sum((await cluster.ask("ready")).values())
            result["cluster"] = seeded["objects"]
            result["seed_s"] = seeded["seed_s"]
            result["load_avg_1m"] = round(os.getloadavg()[0], 2)
            result["controller_flags"] = extra_flags
            return result
        finally:
            for proc in reversed(processes):
                await proc.stop()


def registered_targets(moto_url: str) -> int:
    """Targets registered in every target group of the region, straight from moto."""
    elbv2 = sync_client("elbv2", moto_url, region=REGION)
    try:
        total = 0
        for page in elbv2.get_paginator("describe_target_groups").paginate():
            for tg in page["TargetGroups"]:
                health = elbv2.describe_target_health(TargetGroupArn=tg["TargetGroupArn"])
                total += len(health["TargetHealthDescriptions"])
        return total
    finally:
        elbv2.close()


async def _stoppable(work: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """`work`, cancelled by SIGTERM or SIGINT, so that it stops the processes it started."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    return await task


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small cluster, for CI")
    parser.add_argument("--churn-seconds", type=_positive(float), default=None,
                        help="mixed churn duration (default: 600; 5 with --quick)")
    parser.add_argument("--churn-rate", type=_positive(float), default=None,
                        help="changes per second during churn (default: 300; 100 with --quick)")
    parser.add_argument("--quiet-events", type=_positive(int), default=None,
                        help="quiet endpoint events measured (default: 3000; 300 with --quick)")
    parser.add_argument("--quiet-rate", type=_positive(float), default=None,
                        help="quiet endpoint events per second (default: 100; 100 with --quick)")
    parser.add_argument("--trace", action="store_true",
                        help="tracemalloc over the churn: top allocation sites by growth")
    parser.add_argument("--no-profile", action="store_true",
                        help="skip the sampling profiler's pass over the quiet events")
    parser.add_argument("--cprofile", action="store_true",
                        help="also a cProfile pass over quiet events: `cprofile_top`, by function")
    parser.add_argument("--cprofile-out", metavar="FILE", default=None,
                        help="with --cprofile: write the whole profile to FILE (pstats format)")
    parser.add_argument("--profile-events", choices=("quiet", "woken", "unused"), default="quiet",
                        help="the endpoint events the profilers run over (default: quiet)")
    parser.add_argument("--controller-flag", action="append", default=[], metavar="FLAG",
                        help="an extra `aiolbc run` flag, e.g. "
                             "--controller-flag=--enable-leader-election=false (repeatable)")
    args = parser.parse_args(argv)
    quick = bool(args.quick)
    shape = QUICK if quick else Shape()
    configure_logging(level="error")
    result = asyncio.run(_stoppable(run(
        shape, quick=quick,
        quiet_events=args.quiet_events or (300 if quick else 3000),
        quiet_rate=args.quiet_rate or 100.0,
        churn_seconds=args.churn_seconds or (5.0 if quick else 600.0),
        churn_rate=args.churn_rate or (100.0 if quick else 300.0),
        profile=not args.no_profile, trace=bool(args.trace),
        cprofile=bool(args.cprofile or args.cprofile_out),
        cprofile_out=str(Path(args.cprofile_out).resolve()) if args.cprofile_out else None,
        profile_events=str(args.profile_events),
        extra_flags=list(args.controller_flag))))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
