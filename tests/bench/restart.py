"""Restart benchmark: how a controller restart with N unchanged Services affects one new
Service, and how hard it hits AWS, with checkpoints off, with upstream's prototype skip, and
with our checkpoints and paced LOW lane.

Usage: python tests/bench/restart.py [--quick] [--kind service|ingress] [--services N]
                                    [--mode-cap SECONDS]
                                    [--modes off,skip,lane] [--describe-limit RATE:BURST]

`--kind ingress` runs the same benchmark over N Ingresses in ALB groups of 1 to 5
(tests/bench/_restart_ingress.py); what follows describes the Service run.

Set-up: N Services (type LoadBalancer, class `service.k8s.aws/nlb`, ip targets, one port, an
EndpointSlice with 2 ready pods each) are deployed and checkpointed by one Manager running the
Service and TargetGroupBinding controllers, against moto behind the fault proxy. The local API
server and moto run as child processes, so their CPU is not the controller's. Set-up (and the
re-convergence between modes) runs with the proxy's server-side limits off, no client-side
ELBv2 throttle and 16 workers per controller, to be quick; none of it is measured.

Each mode then: the proxy's server-side limits (ELBv2's published buckets: Describe 10/s burst
40 unless `--describe-limit` says otherwise, Modify 3/s burst 20, Register/Deregister 4/s
burst 20) are switched on with full buckets;
a new Manager and a new AWS client pool start (nothing cached: informers, deployer ARN cache,
target group cache); right after, one new Service (with its EndpointSlice) is created. The
controllers run with `aiolbc run`'s defaults (3 workers each, client-side throttle defaults,
the lane's pace following the verification budget, burst 5, max wait 10 min, a binding's
full look trusted for half the sync period), except for what the mode changes:
- `off`: checkpoints off for both controllers (upstream before v2.9);
- `skip`: upstream PR #3821's prototype: the Service reconciler skips a deploy when the
  checkpoint matches, every event NORMAL on one FIFO, no pace; TGB checkpoints off;
- `lane`: ours: checkpoints on for both, matches verified in the paced LOW lane.
A mode ends when both controllers' queues are empty with nothing in flight (or at the cap).
Between modes the new Service is deleted and everything is re-converged (limits off), and
every unchanged Service and binding is checked to carry its checkpoint.

The last stdout line is one JSON object: `{"n", "modes": {mode: figures}, "goal"}`, figures:
fresh_change_latency_s (restart → the new NLB is `active`, its hostname is in the Service
status and both pods are registered in its target group), aws_calls_first_5min (by operation,
within `aws_calls_window_s` after the restart), mutating_calls_for_unchanged (mutating calls
naming an ARN of the N unchanged stacks), mutating_calls_unattributed (mutating calls naming
no ARN the proxy can read, e.g. AddTags), all_verified_s (restart → queues empty; null and
`all_verified_capped` at the cap), throttled_responses, peak_calls_per_10s, and for `lane`
the LOW-lane pace actually seen (for bindings: when each one's targets were first compared
with AWS, which every verification after a restart does once), the verification budget's
figures (calls per unchanged stack: in total, the stacks' own, and the bindings' target
comparisons per target group) and the reconciles each controller ran.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import json
import socket
import sys
import tempfile
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry

from controller import checkpoint
from controller import service as service_controller
from controller import targetgroupbinding as tgb_controller
from controller.apis import TARGETGROUPBINDINGS
from controller.app import targets_trusted_for
from controller.aws import AWSClientPool, AWSSettings, RegionSnapshot, parse_throttle
from controller.config import ControllerConfig
from controller.config.checkpoints import CheckpointConfig
from controller.config.cluster import ClusterConfig
from controller.model import Stack
from controller.networking.settings import NetworkingSettings
from controller.reconcilers import LaneSettings
from controller.service.annotations import PREFIX
from controller.service.model import build_stack, checkpoint_of
from controller.settings import ClusterScope
from controller.standins import (
    AWSFaultProxy,
    AwsSeed,
    OperationClass,
    RequestRecord,
    ServerLimits,
    create_pod_enis,
    seed_vpc,
    sync_client,
)
from runtime.client import KubeClient
from runtime.clock import RealClock
from runtime.errors import AlreadyExists, NotFound
from runtime.heap import HeapSettings
from runtime.logging import configure_logging
from runtime.manager import Manager, ManagerOptions
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES, SERVICES

CLUSTER = "bench-cluster"
REGION = "us-west-2"
NAMESPACE = "default"
NLB_CLASS = "service.k8s.aws/nlb"
CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"
# `aiolbc run`'s lane defaults, as app.py derives them from the flags' defaults.
_DEFAULT_LANES = CheckpointConfig().lanes()
assert _DEFAULT_LANES.verify_qps is not None
assert _DEFAULT_LANES.verify_max_wait is not None
VERIFY_QPS, VERIFY_BURST, VERIFY_MAX_WAIT = (
    _DEFAULT_LANES.verify_qps, _DEFAULT_LANES.verify_burst, _DEFAULT_LANES.verify_max_wait)
# `aiolbc run`'s verification budget (--checkpoint-verify-aws-qps / -burst), lane mode only.
VERIFY_AWS_QPS = CheckpointConfig().verify_aws_qps
VERIFY_AWS_BURST = CheckpointConfig().verify_aws_burst
TARGETS_TRUSTED_FOR = targets_trusted_for(ControllerConfig(cluster=ClusterConfig(name=CLUSTER)))
WINDOW = 300.0
CONVERGE_WORKERS = 16
IDLE_HOLD = 1.0
CLOCK = RealClock()


def log(message: str) -> None:
    print(f"[restart] {message}", file=sys.stderr, flush=True)


# ---- the stand-ins, as child processes ----------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _start_moto() -> tuple[asyncio.subprocess.Process, str]:
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.standins", "--port", str(port),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def probe() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    for _ in range(300):
        if await asyncio.to_thread(probe):
            return proc, url
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    raise RuntimeError("moto server did not start")


async def _start_envtest(kubeconfig: Path) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime.envtest", "--kubeconfig", str(kubeconfig),
        "--crds", str(CRDS), "--bookmark-interval", "1", "--history-size", "500000",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.decode().startswith("http://127.0.0.1:"):
        raise RuntimeError(f"local API server did not start: {line!r}")
    return proc


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


# ---- modes and controller runs --------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    name: str
    service: dict[str, Any]
    tgb: tgb_controller.Settings
    throttle: str = ""  # --aws-api-throttle; "" = `aiolbc run`'s defaults
    budget: bool = False  # the verification budget on the AWS pool (lane mode)

    def pool(self, endpoint_url: str) -> tuple[AWSClientPool, CollectorRegistry]:
        registry = CollectorRegistry()
        settings = AWSSettings(
            region=REGION, endpoint_url=endpoint_url, access_key="testing",
            secret_key="testing", throttle=parse_throttle(self.throttle),
            verify_calls_qps=VERIFY_AWS_QPS if self.budget else None,
            verify_calls_burst=VERIFY_AWS_BURST)
        return AWSClientPool(settings, registry=registry), registry


def manager_options() -> ManagerOptions:
    """A controller's Manager as `aiolbc run` makes it, with the garbage collector tuned for
    long-lived caches (runtime/heap.py): this script is its process's entry point. Under
    CPython's defaults an old-generation collection walks every freshly listed object (about
    0.4 s at 1,000 Ingresses) just as the first real change is reconciled."""
    return ManagerOptions(heap=HeapSettings())


def split_lanes(values: dict[str, Any], config: type[Any] | None = None) -> dict[str, Any]:
    """Settings keywords with the lane ones (`lane=`, `verify_qps=`...) nested as `lanes`, and
    those of the kind's flags (`max_concurrent_reconciles=`) as `config`."""
    lanes = {k: values.pop(k) for k in list(values) if k in LaneSettings.__dataclass_fields__}
    if config is not None:
        flags = {k: values.pop(k) for k in list(values) if k in config.__dataclass_fields__}
        if flags:
            values["config"] = config(**flags)
    return {**values, "lanes": LaneSettings(**lanes)}


def tgb_settings(**values: Any) -> tgb_controller.Settings:
    """The VPC is the seeded one's, filled in when a run starts."""
    return tgb_controller.Settings(cluster=ClusterScope(name=CLUSTER),
                                   **split_lanes(values, tgb_controller.TargetGroupBindingConfig))


MODES = (
    Mode("off", {"checkpoints": False}, tgb_settings(checkpoints=False)),
    Mode("skip", {"checkpoints": True, "lane": False}, tgb_settings(checkpoints=False)),
    Mode("lane", {}, tgb_settings(verify_qps=VERIFY_QPS, verify_burst=VERIFY_BURST,
                                  verify_max_wait=VERIFY_MAX_WAIT,
                                  targets_trusted_for=TARGETS_TRUSTED_FOR), budget=True),
)
# Set-up and re-convergence between modes: checkpoints on, no pace, wide concurrency.
CONVERGE = Mode("converge", {"lane": False, "max_concurrent_reconciles": CONVERGE_WORKERS},
                tgb_settings(verify_qps=None, max_concurrent_reconciles=CONVERGE_WORKERS),
                throttle="Elastic Load Balancing v2:.*=1000:1000")


@dataclass
class Run:
    """One controller process's worth of state: client, pool, Manager; killed, not stopped."""

    manager: Manager
    task: asyncio.Task[int]
    client: KubeClient
    pool: AWSClientPool
    pool_registry: CollectorRegistry

    def verification_calls(self) -> int:
        """AWS calls the pool charged to the verification budget."""
        return int(sum(sample.value
                       for metric in self.pool_registry.collect()
                       if metric.name == "aiolbc_aws_verification_calls"
                       for sample in metric.samples if sample.name.endswith("_total")))

    def reconciles(self) -> dict[str, int]:
        """Reconciles each controller ran (any outcome), from the controllers' own metric."""
        found: Counter[str] = Counter()
        for metric in self.manager.registry.collect():
            if metric.name != "controller_runtime_reconcile":
                continue
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    found[str(sample.labels.get("controller"))] += int(sample.value)
        return dict(found)

    def idle(self) -> bool:
        if not self.manager.leading:
            return False
        # Waiting (rate-limited or delayed) entries count: they are not verified yet.
        return all(not c.queue._items and not c.queue._deferred and not c.queue.in_flight
                   and not len(c.decisions)
                   for c in self.manager.controllers)

    async def kill(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.pool.close()
        await self.client.close()


@dataclass
class Bench:
    n: int
    kubeconfig: Path
    seed: AwsSeed
    proxy: AWSFaultProxy
    client: KubeClient
    elbv2: Any  # plain botocore client on moto, bypassing the proxy
    proxy_upstream: str = ""  # moto's URL, for setting up AWS by hand
    limits: ServerLimits = field(default_factory=ServerLimits)
    unchanged_arns: set[str] = field(default_factory=set)
    kind: ClassVar[str] = "service"  # what the N unchanged objects are (labels the figures)

    @classmethod
    def shape(cls, n: int) -> dict[str, Any]:
        """Figures about how the N objects are arranged, for the result."""
        return {}

    def stacks(self) -> int:
        """The unchanged stacks a restart verifies: one per Service."""
        return self.n

    def tgb_settings(self, mode: Mode) -> tgb_controller.Settings:
        """The mode's TargetGroupBinding settings, keeping rules in the seeded VPC as
        `aiolbc run` does."""
        cluster = ClusterScope(name=CLUSTER, vpc_id=self.seed.vpc_id)
        return dataclasses.replace(mode.tgb, cluster=cluster,
                                   networking=NetworkingSettings(cluster=cluster))

    async def pod_enis(self) -> None:
        """Interfaces for the pods of the N objects and of every mode's new one."""
        ips = [ip for i in range(self.n + 2)
               for e in endpoint_slice("x", i)["endpoints"] for ip in e["addresses"]]
        await asyncio.to_thread(create_pod_enis, self.proxy_upstream, self.seed, ips)

    def service_settings(self, **overrides: Any) -> service_controller.Settings:
        values: dict[str, Any] = {
            "cluster": ClusterScope(name=CLUSTER, region=self.seed.region,
                                    vpc_id=self.seed.vpc_id),
            "verify_qps": VERIFY_QPS, "verify_burst": VERIFY_BURST,
            "verify_max_wait": VERIFY_MAX_WAIT,
        }
        values.update(overrides)
        return service_controller.Settings(
            **split_lanes(values, service_controller.ServiceConfig))

    async def start(self, mode: Mode) -> Run:
        client = await KubeClient.from_kubeconfig(self.kubeconfig)
        pool, pool_registry = mode.pool(self.proxy.url)
        manager = Manager(client, options=manager_options(), registry=CollectorRegistry())
        # One region snapshot for both, as `aiolbc run` wires them (controller/app.py).
        snapshot = RegionSnapshot(clock=manager.clock)
        tgb_controller.setup(manager, pool=pool, settings=self.tgb_settings(mode),
                             snapshot=snapshot)
        service_controller.setup(manager, pool=pool,
                                 settings=self.service_settings(**mode.service),
                                 snapshot=snapshot)
        await pool.warm()  # as `aiolbc run` does before its manager runs
        return Run(manager, asyncio.create_task(manager.run()), client, pool, pool_registry)

    # ---- Kubernetes objects -----------------------------------------------------------------

    async def create_service(self, name: str, index: int) -> None:
        body: Obj = {
            "metadata": {"name": name, "annotations": {
                PREFIX + "aws-load-balancer-nlb-target-type": "ip"}},
            "spec": {"type": "LoadBalancer", "loadBalancerClass": NLB_CLASS,
                     "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                "protocol": "TCP"}]}}
        for resource, obj in ((SERVICES, body), (ENDPOINTSLICES, endpoint_slice(name, index))):
            with contextlib.suppress(AlreadyExists):
                await self.client.create(resource, obj, NAMESPACE)

    async def services(self) -> dict[str, Obj]:
        listed = await self.client.list(SERVICES, NAMESPACE)
        return {str(s["metadata"]["name"]): s for s in listed["items"]}

    async def bindings(self) -> list[Obj]:
        return list((await self.client.list(TARGETGROUPBINDINGS, NAMESPACE))["items"])

    async def unchanged_checkpointed(self) -> int:
        """How many of the N unchanged Services and their bindings carry their checkpoint."""
        model = self.service_settings().model
        services = await self.services()
        bound = {str(b["spec"]["serviceRef"]["name"]) for b in await self.bindings()
                 if checkpoint.stored(b)}
        return sum(1 for i in range(self.n)
                   if (svc := services.get(unchanged_name(i))) is not None
                   and checkpoint.stored(svc) == checkpoint_of(svc, settings=model)
                   and unchanged_name(i) in bound)

    # ---- set-up and re-convergence --------------------------------------------------------

    async def converge(self, *, delete: str | None = None) -> None:
        run = await self.start(CONVERGE)
        try:
            if delete is not None:
                with contextlib.suppress(NotFound):
                    await self.client.delete(SERVICES, delete, NAMESPACE)
                with contextlib.suppress(NotFound):
                    await self.client.delete(ENDPOINTSLICES, f"{delete}-abc", NAMESPACE)
            last = CLOCK.now()
            while True:
                await asyncio.sleep(1.0)
                done = await self.unchanged_checkpointed()
                gone = delete is None or delete not in await self.services()
                if done == self.n and gone and await _held(run.idle, IDLE_HOLD):
                    return
                if CLOCK.now() - last >= 3:
                    log(f"converging: {done}/{self.n} checkpointed"
                        + ("" if gone else f", {delete} still being deleted"))
                    last = CLOCK.now()
        finally:
            await run.kill()

    async def setup(self) -> None:
        log(f"creating {self.n} Services with their EndpointSlices")
        await self.pod_enis()
        names = [(unchanged_name(i), i) for i in range(self.n)]
        for start in range(0, self.n, 64):
            await asyncio.gather(*(self.create_service(name, i)
                                   for name, i in names[start:start + 64]))
        await self.converge()
        self.unchanged_arns = await asyncio.to_thread(self._collect_arns)
        log(f"set-up done: {len(self.unchanged_arns)} ARNs of unchanged stacks")

    def _collect_arns(self) -> set[str]:
        arns: set[str] = set()
        lbs = [lb["LoadBalancerArn"] for page in self.elbv2.get_paginator(
            "describe_load_balancers").paginate() for lb in page["LoadBalancers"]]
        arns.update(lbs)
        arns.update(tg["TargetGroupArn"] for page in self.elbv2.get_paginator(
            "describe_target_groups").paginate() for tg in page["TargetGroups"])
        for lb in lbs:
            arns.update(lis["ListenerArn"] for lis in self.elbv2.describe_listeners(
                LoadBalancerArn=lb)["Listeners"])
        return arns

    # ---- one measured mode ------------------------------------------------------------------

    async def fresh_ready(self, name: str) -> bool:
        try:
            svc = await self.client.get(SERVICES, name, NAMESPACE)
        except NotFound:
            return False
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if not ingress or not ingress[0].get("hostname"):
            return False
        return await self.stack_ready(build_stack(svc, settings=self.service_settings().model))

    async def stack_ready(self, stack: Stack) -> bool:
        """The stack's load balancer is active and its one binding has both pods registered."""
        [lb] = stack.load_balancers.values()
        [tgb] = stack.target_group_bindings.values()
        try:
            binding = await self.client.get(TARGETGROUPBINDINGS, tgb.name, NAMESPACE)
        except NotFound:
            return False
        return await asyncio.to_thread(self._aws_ready, lb.name,
                                       str(binding["spec"]["targetGroupARN"]))

    def _aws_ready(self, lb_name: str, tg_arn: str) -> bool:
        try:
            [lb] = self.elbv2.describe_load_balancers(Names=[lb_name])["LoadBalancers"]
            health = self.elbv2.describe_target_health(TargetGroupArn=tg_arn)
        except self.elbv2.exceptions.ClientError:
            return False
        return bool(lb["State"]["Code"] == "active"
                    and len(health["TargetHealthDescriptions"]) == 2)

    async def measure(self, mode: Mode, *, cap: float) -> dict[str, Any]:
        fresh = f"fresh-{mode.name}"
        self.proxy.clear_log()
        self.proxy.enable_server_limits(self.limits)
        t0 = CLOCK.now()
        run = await self.start(mode)
        try:
            await self.create_service(fresh, self.n + 1)
            fresh_at: float | None = None
            idle_since: float | None = None
            verified_at: float | None = None
            last = t0
            while CLOCK.now() - t0 < cap:
                now = CLOCK.now()
                if fresh_at is None and await self.fresh_ready(fresh):
                    fresh_at = now - t0
                if run.idle():
                    idle_since = now if idle_since is None else idle_since
                    if fresh_at is not None and now - idle_since >= IDLE_HOLD:
                        verified_at = idle_since - t0
                        break
                else:
                    idle_since = None
                if now - last >= 5:
                    depth = {c.name: len(c.queue._items) + c.queue.in_flight + len(c.decisions)
                             for c in run.manager.controllers}
                    log(f"{mode.name}: {now - t0:.0f}s, fresh "
                        f"{'ready' if fresh_at is not None else 'pending'}, queues {depth}, "
                        f"{len(self.proxy.log)} AWS requests")
                    last = now
                await asyncio.sleep(0.1)
            elapsed = CLOCK.now() - t0
        finally:
            await run.kill()
            self.proxy.disable_server_limits()
        records = [r for r in self.proxy.log if r.time >= t0]
        figures = self.figures(records, t0=t0, elapsed=elapsed, fresh_at=fresh_at,
                               verified_at=verified_at, cap=cap)
        if mode.name == "lane":
            figures["pace"] = self.pace(records, t0=t0)
            figures["reconciles"] = run.reconciles()
            figures["pace"]["budget"] = budget_figures(
                run.verification_calls(), verified_at if verified_at is not None else elapsed,
                stacks=self.stacks(), comparisons=self.target_comparisons(records),
                target_groups=sum(1 for a in self.unchanged_arns if ":targetgroup/" in a))
        log(f"{mode.name}: {json.dumps(figures)}")
        return figures

    def figures(self, records: list[RequestRecord], *, t0: float, elapsed: float,
                fresh_at: float | None, verified_at: float | None,
                cap: float) -> dict[str, Any]:
        window = min(WINDOW, elapsed)
        first = [r for r in records if r.time - t0 <= window]
        mutating = [r for r in records if r.mutating]
        named = [r for r in mutating if _arns(r)]
        return {
            "fresh_change_latency_s": _round(fresh_at),
            "aws_calls_window_s": round(window, 1),
            "aws_calls_first_5min": dict(sorted(Counter(r.operation for r in first).items())),
            "aws_calls_total": len(records),
            "mutating_calls_total": len(mutating),
            "mutating_calls_for_unchanged": sum(
                1 for r in named if _arns(r) & self.unchanged_arns),
            "mutating_calls_unattributed": sum(
                1 for r in mutating if not _arns(r) and not r.operation.startswith("Create")),
            "all_verified_s": _round(verified_at),
            "all_verified_capped": verified_at is None,
            "cap_s": cap,
            "throttled_responses": sum(1 for r in records if r.source in ("limit", "injected")),
            "peak_calls_per_10s": _peak(sorted(r.time for r in records), 10.0),
            "security_groups": self.security_group_figures(records),
        }

    def security_group_figures(self, records: list[RequestRecord]) -> dict[str, Any]:
        """Reads per stack looked at: each verified unchanged stack (its load balancer's
        listeners read) and the new one, everything its groups and its bindings' target
        groups cost included, one-time look-ups (the backend group, the cluster's groups)
        too."""
        reads = Counter(r.operation for r in records if r.operation in _NETWORKING_READS)
        writes = Counter(r.operation for r in records if r.service == "ec2" and r.mutating)
        looked_at = {r.params.get("LoadBalancerArn") for r in records
                     if r.operation == "DescribeListeners"}
        return {"reads": dict(sorted(reads.items())), "writes": dict(sorted(writes.items())),
                "stacks_looked_at": len(looked_at),
                "verify_calls_per_stack": round(sum(reads.values()) / max(len(looked_at), 1),
                                                3)}

    def target_comparisons(self, records: list[RequestRecord]) -> int:
        """The bindings' comparisons of their targets with AWS: DescribeTargetHealth of the
        unchanged stacks' target groups, which only their verifications read."""
        return sum(1 for r in records if r.operation == "DescribeTargetHealth"
                   and r.params.get("TargetGroupArn") in self.unchanged_arns)

    def pace(self, records: list[RequestRecord], *, t0: float) -> dict[str, Any]:
        """The LOW lane as seen by AWS: when each unchanged stack was first looked at (its
        load balancer's listeners, its targets for a binding), against burst + qps * t."""
        out: dict[str, Any] = {"verify_qps": VERIFY_QPS, "verify_burst": VERIFY_BURST}
        for label, operation, key in ((self.kind, "DescribeListeners", "LoadBalancerArn"),
                                      ("targetgroupbinding", "DescribeTargetHealth",
                                       "TargetGroupArn")):
            first: dict[str, float] = {}
            for r in records:
                arn = r.params.get(key)
                if r.operation == operation and arn in self.unchanged_arns:
                    first.setdefault(str(arn), r.time)
            times = sorted(first.values())
            out[label] = {"verified": len(times),
                          "max_per_10s": _peak(times, 10.0),
                          "within_pace": _within_pace(times, VERIFY_QPS, VERIFY_BURST)}
        return out


_NETWORKING_READS = frozenset({"DescribeSecurityGroups", "DescribeNetworkInterfaces",
                               "DescribeInstances"})


def unchanged_name(i: int) -> str:
    return f"svc-{i:04d}"


def endpoint_slice(service: str, index: int) -> Obj:
    """Two ready pods for the `index`-th Service, port `http` 8080, IPs unique per index."""
    ips = [f"10.0.{4 + (2 * index + k) // 250}.{(2 * index + k) % 250 + 1}" for k in (0, 1)]
    return {
        "metadata": {"name": f"{service}-abc",
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True, "terminating": False},
                       "targetRef": {"kind": "Pod", "name": f"{service}-{k}",
                                     "uid": f"uid-{service}-{k}"}}
                      for k, ip in enumerate(ips)]}


def _arns(record: RequestRecord) -> set[str]:
    return {str(v) for k, v in record.params.items() if k.endswith("Arn")}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _peak(times: list[float], width: float) -> int:
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - width:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def _within_pace(times: list[float], qps: float, burst: int) -> bool:
    """Any k consecutive verifications span at least (k - burst) / qps seconds; one of slack
    for the time between a reconcile's start and its first call."""
    return all(j - i + 1 <= burst + qps * (times[j] - times[i]) + 1
               for i in range(len(times)) for j in range(i + 1, len(times)))


async def _held(check: Callable[[], bool], seconds: float) -> bool:
    end = CLOCK.now() + seconds
    while CLOCK.now() < end:
        if not check():
            return False
        await asyncio.sleep(0.05)
    return True


def budget_figures(calls: int, seconds: float, *, stacks: int, comparisons: int = 0,
                   target_groups: int = 0) -> dict[str, Any]:
    """The AWS calls verifications made, against the budget's burst + rate * time; per
    unchanged stack (their bindings' share included), and split: the stacks' own (load
    balancers, listeners, rules, target group facts, security groups) and the bindings'
    comparisons of their registered targets (one DescribeTargetHealth per target group after
    a restart)."""
    own = calls - comparisons
    return {"aws_qps": VERIFY_AWS_QPS, "aws_burst": VERIFY_AWS_BURST,
            "verification_aws_calls": calls,
            "verification_aws_calls_per_stack": round(calls / stacks, 2) if stacks else None,
            "stack_verification_aws_calls_per_stack": round(own / stacks, 2) if stacks else None,
            "target_comparisons": comparisons,
            "target_comparisons_per_target_group": (round(comparisons / target_groups, 2)
                                                    if target_groups else None),
            "verification_aws_calls_per_s": round(calls / seconds, 2) if seconds > 0 else None,
            "within_budget": calls <= VERIFY_AWS_BURST + VERIFY_AWS_QPS * seconds + 1}


def goal(modes: dict[str, dict[str, Any]], kind: str = "service") -> dict[str, Any]:
    lane = modes.get("lane")
    if lane is None:
        return {}
    fresh = lane["fresh_change_latency_s"]
    pace = lane["pace"]
    per_stack = pace["budget"].get("stack_verification_aws_calls_per_stack")
    per_tg = pace["budget"].get("target_comparisons_per_target_group")
    return {
        "fresh_change_le_2s": fresh is not None and fresh <= 2.0,
        "zero_mutating_calls_for_unchanged": lane["mutating_calls_for_unchanged"] == 0,
        "verification_within_pace": bool(pace[kind]["within_pace"]
                                          and pace["targetgroupbinding"]["within_pace"]),
        "verification_within_budget": bool(pace["budget"]["within_budget"]),
        # A stack's own verification (its bindings' target comparisons apart: one per target
        # group, each binding's targets compared with AWS once after a restart).
        "verification_le_3_calls_per_stack": per_stack is not None and per_stack <= 3.0,
        "targets_compared_at_most_once_per_target_group": per_tg is None or per_tg <= 1.0,
    }


def server_limits(describe: tuple[float, int]) -> ServerLimits:
    """ELBv2's published buckets, with the Describe bucket given (AWS documents 10/s, burst
    40; upstream's controller v3.2 reads 50/s, burst 200 from the same page)."""
    classes = tuple(OperationClass(c.name, c.operation, *describe) if c.name == "describe"
                    else c for c in ServerLimits().classes)
    return ServerLimits(classes=classes)


def _rate_burst(text: str) -> tuple[float, int]:
    rate, sep, burst = text.partition(":")
    try:
        value = (float(rate), int(burst))
    except ValueError:
        value = (0.0, 0)
    if not sep or value[0] <= 0 or value[1] < 1:
        raise argparse.ArgumentTypeError(f"expected RATE:BURST (e.g. 10:40), got {text!r}")
    return value


async def run(n: int, cap: float, modes: Iterable[Mode], *, limits: ServerLimits,
              bench_type: type[Bench] | None = None) -> dict[str, Any]:
    """Set up once, then measure each mode; `bench_type` says what the N objects are."""
    make = bench_type or Bench
    moto, moto_url = await _start_moto()
    try:
        seed = await asyncio.to_thread(seed_vpc, moto_url, cluster_name=CLUSTER, region=REGION)
        elbv2 = sync_client("elbv2", moto_url, region=REGION)
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = Path(tmp) / "kubeconfig"
            envtest = await _start_envtest(kubeconfig)
            try:
                async with AWSFaultProxy(moto_url) as proxy, \
                        await KubeClient.from_kubeconfig(kubeconfig) as client:
                    bench = make(n=n, kubeconfig=kubeconfig, seed=seed, proxy=proxy,
                                 client=client, elbv2=elbv2, proxy_upstream=moto_url,
                                 limits=limits)
                    await bench.setup()
                    results: dict[str, dict[str, Any]] = {}
                    previous: str | None = None
                    for mode in modes:
                        if previous is not None:
                            await bench.converge(delete=previous)
                        results[mode.name] = await bench.measure(mode, cap=cap)
                        previous = f"fresh-{mode.name}"
            finally:
                elbv2.close()
                await _stop(envtest)
    finally:
        await _stop(moto)
    describe = next(c for c in limits.classes if c.name == "describe")
    return {"n": n, **make.shape(n),
            "server_describe_limit": f"{describe.rate:g}:{describe.burst}",
            "modes": results, "goal": goal(results, make.kind)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 Services, short caps")
    parser.add_argument("--kind", choices=("service", "ingress"), default="service",
                        help="what the N unchanged objects are")
    parser.add_argument("--services", type=int, default=None,
                        help="unchanged Services, or Ingresses with --kind ingress (N)")
    parser.add_argument("--mode-cap", type=float, default=None,
                        help="seconds each mode may run (default: 20 with --quick, else 900)")
    parser.add_argument("--describe-limit", type=_rate_burst, default=(10.0, 40),
                        metavar="RATE:BURST",
                        help="the proxy's server-side Describe* bucket (default: 10:40, as "
                             "AWS documents)")
    parser.add_argument("--modes", default="off,skip,lane",
                        help="comma-separated subset of off,skip,lane")
    args = parser.parse_args(argv)
    n = args.services if args.services is not None else (50 if args.quick else 1000)
    cap = args.mode_cap if args.mode_cap is not None else (20.0 if args.quick else 900.0)
    if n < 1:
        parser.error("--services must be at least 1")
    if cap <= 0:
        parser.error("--mode-cap must be positive")
    by_name = {m.name: m for m in MODES}
    wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in by_name]
    if unknown or not wanted:
        parser.error(f"--modes: unknown mode(s) {unknown}; choose from off, skip, lane")
    configure_logging(level="error")  # stdout ends with the JSON line alone
    limits = server_limits(args.describe_limit)
    if args.kind == "ingress":  # its module sits next to this script and builds on it
        result = asyncio.run(importlib.import_module("_restart_ingress").run(
            n, cap, wanted, limits=limits))
    else:
        result = asyncio.run(run(n, cap, [by_name[m] for m in wanted], limits=limits))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
