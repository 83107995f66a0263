"""Failover end to end, with real processes: the local API server (RBAC on, the installation
applied with `kubectl apply -k manifests/`) and two `aiolbc run` replicas authenticated as the
installation's ServiceAccount (one Lease, short election timings), against moto behind the fault
proxy, registering the endpoints of several TargetGroupBindings while the test churns some.

1. SIGKILL the leader mid-churn. The standby takes over once the lease expires (not before: no
   split brain), starts warm (no list request reaches the API server after the kill; it was
   ready before), makes no AWS call for bindings whose endpoints did not change (their
   checkpoints match), and in the end every target group holds exactly its binding's ready
   endpoints: no mutation lost or duplicated.
2. A replacement replica joins; SIGTERM on the leader releases the Lease (holderIdentity ""),
   the replacement takes over within about two retry periods, and the stopped process exits 0.
Throughout, the API server refuses none of the controllers' requests: the shipped RBAC suffices.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controller.apis import TARGETGROUPBINDINGS
from controller.defaults import DEFAULT_LEADER_ELECTION_ID
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn
from controller.targetgroupbinding import CONTROLLER_NAME
from runtime.client import KubeClient
from runtime.reconcile import LOW, NORMAL
from runtime.resources import ENDPOINTSLICES, LEASES, SERVICES
from tests.e2e.processes import ControllerProcess, EnvTestProcess, controller_environment
from tests.support import objects
from tests.support.aws import AwsInspector
from tests.support.kubectl import Kubectl
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
CRDS = MANIFESTS / "crds"

# The installation's namespace and ServiceAccount; the Lease lives there (POD_NAMESPACE), under
# the only name the shipped Role lets the controller update.
NAMESPACE = "aiolbc-system"
SERVICE_ACCOUNT = f"{NAMESPACE}/aiolbc"
TOKEN = "e2e-controller-token"
LEASE = DEFAULT_LEADER_ELECTION_ID
WORKLOAD_NAMESPACE = "default"
LEASE_DURATION = 2.0
RENEW_DEADLINE = 1.0
RETRY_PERIOD = 0.2
JITTER = 1.2  # client-go's acquire jitter factor
# Process scheduling on a shared two-core machine, HTTP round trips and the 20 ms polling of
# the metrics endpoint.
SLACK = 1.0
# Before this, only an expired lease lets a standby in (its last renewal was observed at most
# one retry period before the leader died).
EXPIRY_AT_THE_EARLIEST = LEASE_DURATION - JITTER * RETRY_PERIOD
TARGET_PORT = 8080
CHURNED = ("churn-a", "churn-b", "churn-c")
STABLE = ("stable-a", "stable-b", "stable-c")

Targets = set[tuple[str, int]]


@dataclass
class Workload:
    """Services with one EndpointSlice each; the slices' endpoints are the expected targets."""

    client: KubeClient
    rng: random.Random
    endpoints: dict[str, dict[str, bool]] = field(default_factory=dict)  # ip → ready
    slices: dict[str, dict[str, Any]] = field(default_factory=dict)
    arns: dict[str, str] = field(default_factory=dict)
    _ips: Iterator[int] = field(default_factory=lambda: itertools.count(10))
    changes: int = 0

    def expected(self, service: str) -> Targets:
        return {(ip, TARGET_PORT) for ip, ready in self.endpoints[service].items() if ready}

    def _ip(self, service: str) -> str:
        return f"10.0.{list(self.endpoints).index(service) + 1}.{next(self._ips)}"

    def _slice(self, service: str) -> dict[str, Any]:
        return objects.endpoint_slice(service, sorted(self.endpoints[service]),
                              namespace=WORKLOAD_NAMESPACE, ports=(("http", TARGET_PORT),),
                              not_ready=[ip for ip, ready in self.endpoints[service].items()
                                         if not ready])

    async def add(self, service: str, arn: str, *, size: int) -> None:
        self.arns[service] = arn
        self.endpoints[service] = {}
        self.endpoints[service] = {self._ip(service): True for _ in range(size)}
        await self.client.create(SERVICES, objects.service(
            service, selector={"app": service},
            ports=[objects.service_port(80, "http", protocol=None)]), WORKLOAD_NAMESPACE)
        self.slices[service] = await self.client.create(
            ENDPOINTSLICES, self._slice(service), WORKLOAD_NAMESPACE)
        await self.client.create(TARGETGROUPBINDINGS, objects.target_group_binding(
            service, service=service, arn=arn), WORKLOAD_NAMESPACE)

    async def churn_once(self, service: str) -> None:
        """Scale up, scale down or flip one endpoint's readiness, as rollouts do."""
        current = self.endpoints[service]
        move = self.rng.choice(("add", "remove", "flip") if len(current) > 2 else ("add",))
        if move == "add":
            current[self._ip(service)] = self.rng.random() < 0.8
        elif move == "remove":
            del current[self.rng.choice(sorted(current))]
        else:
            ip = self.rng.choice(sorted(current))
            current[ip] = not current[ip]
        body = self._slice(service)
        body["metadata"]["resourceVersion"] = self.slices[service]["metadata"]["resourceVersion"]
        self.slices[service] = await self.client.update(ENDPOINTSLICES, body)
        self.changes += 1

    async def churn(self, services: tuple[str, ...], *, interval: float) -> None:
        for service in itertools.cycle(services):
            await self.churn_once(service)
            await asyncio.sleep(interval)


async def converged(aws: AwsInspector, workload: Workload) -> bool:
    for service, arn in workload.arns.items():
        if await aws.registered(arn) != workload.expected(service):
            return False
    return True


async def enqueued(http: aiohttp.ClientSession, replica: ControllerProcess, *,
                   priority: int) -> float:
    """Requests the event handlers queued at `priority`; a replayed binding whose checkpoint
    matches goes to the paced LOW lane, anything else is NORMAL."""
    return await replica.metric(http, "aiolbc_controller_enqueues_total",
                                {"controller": CONTROLLER_NAME, "priority": str(priority)})


async def reconciles(http: aiohttp.ClientSession, replica: ControllerProcess) -> float:
    return await replica.metric(http, "controller_runtime_reconcile_total",
                                {"controller": CONTROLLER_NAME})


@contextlib.asynccontextmanager
async def lease_watch(client: KubeClient) -> AsyncIterator[list[tuple[float, dict[str, Any]]]]:
    """(monotonic time, spec) of every change of the Lease, from a watch stream."""
    seen: list[tuple[float, dict[str, Any]]] = []
    current = await client.get(LEASES, LEASE, NAMESPACE)

    async def follow() -> None:
        version = current["metadata"]["resourceVersion"]
        while True:
            async for event in client.watch(LEASES, NAMESPACE, resource_version=version,
                                            field_selector=f"metadata.name={LEASE}"):
                obj = event["object"]
                version = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    seen.append((time.monotonic(), dict(obj.get("spec") or {})))

    task = asyncio.create_task(follow())
    try:
        await asyncio.sleep(0.1)  # the watch is open before anything happens
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _flags(kubeconfig: Path, aws_url: str, vpc_id: str) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", "--cluster-name=e2e", "--aws-region=us-west-2",
            f"--aws-vpc-id={vpc_id}",
            f"--aws-endpoint-url={aws_url}", f"--leader-election-id={LEASE}",
            f"--leader-election-lease-duration={LEASE_DURATION}s",
            f"--leader-election-renew-deadline={RENEW_DEADLINE}s",
            f"--leader-election-retry-period={RETRY_PERIOD}s",
            "--log-level=info"]


@pytest.mark.slow
async def test_failover(tmp_path: Path, moto_standin: MotoStandIn, aws_seed: AwsSeed,
                        aws_proxy: AWSFaultProxy) -> None:
    envtest = EnvTestProcess(tmp_path, crds=[CRDS], service_accounts={SERVICE_ACCOUNT: TOKEN})
    replicas: list[ControllerProcess] = []
    timings: dict[str, float] = {}
    churn: asyncio.Task[None] | None = None
    try:
        await envtest.start()
        home = tmp_path / "kubectl-home"
        home.mkdir()
        kubectl = Kubectl(envtest.kubeconfig, home)
        # The CRDs came with the server; the namespace is applied on its own (manifests/README.md).
        await kubectl("apply", "-k", str(MANIFESTS / "namespace"), timeout=60)
        await kubectl("apply", "-k", str(MANIFESTS), timeout=60)
        env = controller_environment(POD_NAMESPACE=NAMESPACE)
        flags = _flags(envtest.kubeconfig_for(TOKEN), aws_proxy.url, aws_seed.vpc_id)
        # The test's own AWS calls go straight to moto: the proxy logs the controllers' only.
        async with await KubeClient.from_kubeconfig(envtest.kubeconfig) as client, \
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5),
                                      connector=aiohttp.TCPConnector(
                                          ssl=envtest.ssl_context() or True)) as http, \
                AwsInspector.open(moto_standin.url, region=aws_seed.region) as aws:
            workload = Workload(client, random.Random(7))
            for index, service in enumerate(CHURNED + STABLE):
                arn = await aws.create_target_group(f"e2e-{service}", vpc_id=aws_seed.vpc_id)
                await workload.add(service, arn, size=2 + index % 3)

            for name in ("replica-1", "replica-2"):
                replicas.append(ControllerProcess(name, tmp_path, flags=flags, env=env))
            await asyncio.gather(*(r.start() for r in replicas))

            async def one_leader_all_ready() -> ControllerProcess | None:
                for replica in replicas:
                    assert replica.running, f"{replica.name} exited:\n{replica.log_tail()}"
                leading = [r for r in replicas if await r.leading(http)]
                ready = [await r.ready(http) for r in replicas]
                return leading[0] if len(leading) == 1 and all(ready) else None

            leader = await eventually(one_leader_all_ready, timeout=20,
                                      message="no leader with two ready replicas")
            assert leader is not None
            standby = next(r for r in replicas if r is not leader)
            await eventually(lambda: converged(aws, workload), timeout=15,
                             message="initial registration did not converge")

            # ---- SIGKILL the leader while endpoints churn ----------------------------------
            churn = asyncio.create_task(workload.churn(CHURNED, interval=0.05))
            await eventually(lambda: asyncio.sleep(0, workload.changes >= 10), timeout=10)
            assert await standby.ready(http)
            assert not await standby.leading(http)
            await envtest.clear_requests(http)
            aws_proxy.clear_log()
            killed_at = time.monotonic()
            leader.signal(signal.SIGKILL)
            await eventually(lambda: standby.leading(http), timeout=LEASE_DURATION * 4,
                             message="the standby did not take over")
            timings["takeover_after_sigkill"] = time.monotonic() - killed_at
            assert await leader.wait() == -signal.SIGKILL

            # Keep churning across the takeover, then let it settle.
            changes_at_takeover = workload.changes
            await eventually(lambda: asyncio.sleep(0, workload.changes >= changes_at_takeover
                                                   + 10), timeout=10)
            churn.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await churn
            churn = None
            # Every binding was replayed to the new leader (warm start: an initial-list add).
            await eventually(lambda: _at_least(reconciles(http, standby),
                                               len(workload.arns)), timeout=10)
            await eventually(lambda: converged(aws, workload), timeout=15,
                             message="targets did not converge after the takeover")

            # Not before the lease expired (no two leaders), not much after.
            assert timings["takeover_after_sigkill"] >= EXPIRY_AT_THE_EARLIEST
            assert timings["takeover_after_sigkill"] <= (LEASE_DURATION + JITTER * RETRY_PERIOD
                                                         + SLACK)
            # Warm start: the informers were synced before the kill; nothing was relisted.
            served = await envtest.requests(http)
            assert any(r["verb"] == "update" and "/leases/" in r["path"] for r in served)
            lists = [r for r in served if r["verb"] == "list"]
            assert lists == [], lists
            # Checkpoints: bindings whose endpoints never changed get one paced verification
            # (a read) each, and never a RegisterTargets or DeregisterTargets.
            stable_arns = {workload.arns[s] for s in STABLE}
            touched = [r for r in aws_proxy.log if r.params.get("TargetGroupArn") in stable_arns]
            assert [(r.operation, r.params) for r in touched if r.mutating] == []
            per_arn = [r.params["TargetGroupArn"] for r in touched]
            assert all(per_arn.count(arn) <= 1 for arn in stable_arns), per_arn
            moved = {r.operation for r in aws_proxy.log if r.mutating}
            assert moved == {"RegisterTargets", "DeregisterTargets"}, moved
            assert _repeated_moves(aws_proxy) == []
            for service in STABLE:
                assert await aws.registered(workload.arns[service]) \
                    == workload.expected(service)

            # ---- SIGTERM the new leader: the Lease is released, a replacement takes over ----
            replacement = ControllerProcess("replica-3", tmp_path, flags=flags, env=env)
            replicas.append(replacement)
            await replacement.start()
            await eventually(lambda: replacement.ready(http), timeout=20,
                             message="the replacement replica never became ready")
            new_leader = standby
            aws_proxy.clear_log()
            async with lease_watch(client) as changes:
                terminated_at = time.monotonic()
                new_leader.signal(signal.SIGTERM)
                await eventually(lambda: replacement.leading(http), timeout=5,
                                 message="the replacement did not take over after SIGTERM")
                took_over_at = time.monotonic()
                assert await new_leader.wait() == 0, new_leader.log_tail()
                await eventually(lambda: asyncio.sleep(0, changes and changes[-1][1].get(
                    "holderIdentity")), timeout=2)
            released = [t for t, spec in changes if not spec.get("holderIdentity")]
            assert released, f"the Lease was never released: {changes}"
            timings["takeover_after_sigterm"] = took_over_at - terminated_at
            timings["takeover_after_release"] = took_over_at - released[0]
            # Sooner than any expiry could explain: the release let the replacement in.
            assert timings["takeover_after_sigterm"] < EXPIRY_AT_THE_EARLIEST
            assert timings["takeover_after_release"] <= 2 * RETRY_PERIOD + SLACK / 2
            final = await client.get(LEASES, LEASE, NAMESPACE)
            assert final["spec"]["holderIdentity"] not in ("", None)
            assert final["spec"]["leaseTransitions"] >= 2
            # The replacement verified every binding and, nothing having changed, moved nothing.
            await eventually(lambda: _at_least(reconciles(http, replacement),
                                               len(workload.arns)), timeout=10)
            assert [r.operation for r in aws_proxy.log if r.mutating] == []
            # Every replayed binding matched its checkpoint: all went to the paced LOW lane.
            assert await enqueued(http, replacement, priority=LOW) >= len(workload.arns)
            assert await enqueued(http, replacement, priority=NORMAL) == 0
            assert await converged(aws, workload)
            assert await envtest.denials(http) == []
            print(f"failover timings: {timings}")
    finally:
        if churn is not None:
            churn.cancel()
            await asyncio.gather(churn, return_exceptions=True)
        await asyncio.gather(*(r.close() for r in replicas), return_exceptions=True)
        await envtest.close()


def _repeated_moves(proxy: AWSFaultProxy) -> list[tuple[str, str, str]]:
    """(operation, target group, target) where the same target was registered (or
    deregistered) twice in a row: a duplicated mutation. IPs are never reused, so a target's
    accepted moves must alternate."""
    last: dict[tuple[str, str], str] = {}
    repeated = []
    for record in proxy.log:
        if record.operation not in ("RegisterTargets", "DeregisterTargets") \
                or record.outcome != "ok":
            continue
        for target in record.params["Targets"]:
            key = (record.params["TargetGroupArn"], target)
            if last.get(key) == record.operation:
                repeated.append((record.operation, *key))
            last[key] = record.operation
    return repeated


async def _at_least(value: Any, minimum: float) -> bool:
    return bool(await value >= minimum)
