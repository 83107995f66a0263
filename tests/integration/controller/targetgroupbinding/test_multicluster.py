"""Two clusters share one target group: two local API servers, two controllers, one moto, each
controller's AWS calls recorded by its own fault proxy. Under random endpoint churn, restarts
(cache loss) and a deleted tracking ConfigMap, no controller ever deregisters a target it did
not register itself, and the target group ends up holding exactly both clusters' ready
endpoints."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool, AWSSettings
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn
from controller.targetgroupbinding.multicluster import configmap_name
from runtime.resources import CONFIGMAPS
from tests.support.aws import AwsInspector
from tests.support.cluster import TARGETGROUPBINDING, Cluster, local_cluster
from tests.support.waiting import eventually

CHANGES = 500
BATCH = 20  # changes per round, split over both clusters
PORT = 8080


@dataclass
class Member:
    """One cluster, its controller's own view of AWS, and the endpoints it wants."""

    name: str
    prefix: str  # disjoint address ranges, so every target says which cluster it belongs to
    cluster: Cluster
    proxy: AWSFaultProxy
    endpoints: dict[str, bool] = field(default_factory=dict)  # ip → ready

    def ready(self) -> set[tuple[str, int]]:
        return {(ip, PORT) for ip, ok in self.endpoints.items() if ok}

    async def publish(self) -> None:
        await self.cluster.endpoints(
            "web", sorted(self.endpoints), ports=(("http", PORT),),
            not_ready=tuple(ip for ip, ok in self.endpoints.items() if not ok))

    def churn(self, rng: random.Random, changes: int) -> None:
        for _ in range(changes):
            ip = f"{self.prefix}.{rng.randrange(4)}.{rng.randrange(1, 40)}"
            if ip not in self.endpoints:
                self.endpoints[ip] = rng.random() < 0.8  # a new pod, mostly ready
            elif rng.random() < 0.5:
                del self.endpoints[ip]  # scaled down
            else:
                self.endpoints[ip] = not self.endpoints[ip]  # readiness flips


@pytest.fixture
async def members(moto_standin: MotoStandIn, aws_seed: AwsSeed, aws_inspector: AwsInspector,
                  no_retry_backoff: None, tmp_path: Path) -> AsyncIterator[list[Member]]:
    async with AsyncExitStack() as stack:
        made: list[Member] = []
        for name, prefix in (("east", "10.10"), ("west", "10.20")):
            proxy = await stack.enter_async_context(AWSFaultProxy(moto_standin.url))
            pool = await stack.enter_async_context(AWSClientPool(
                AWSSettings(region=aws_seed.region, endpoint_url=proxy.url,
                            access_key="testing", secret_key="testing"),
                registry=CollectorRegistry()))
            directory = tmp_path / name
            directory.mkdir()
            cluster = await stack.enter_async_context(local_cluster(
                seed=aws_seed, pool=pool, aws=aws_inspector, directory=directory,
                controllers=(TARGETGROUPBINDING,)))
            made.append(Member(name, prefix, cluster, proxy))
        yield made


def _check_deregistrations(member: Member) -> int:
    """Every DeregisterTargets of this cluster names only targets it registered before."""
    registered: set[str] = set()
    checked = 0
    for record in member.proxy.log:
        targets = set(record.params.get("Targets") or ())
        if record.operation == "RegisterTargets":
            registered |= targets
        elif record.operation == "DeregisterTargets":
            foreign = targets - registered
            assert not foreign, f"{member.name} deregistered {sorted(foreign)} it never registered"
            assert all(t.startswith(member.prefix + ".") for t in targets)
            checked += len(targets)
    return checked


async def test_two_clusters_deregister_only_their_own_targets(
        members: list[Member], aws_inspector: AwsInspector) -> None:
    east, west = members
    rng = random.Random(3853)
    arn = await aws_inspector.create_target_group("shared", vpc_id=east.cluster.seed.vpc_id)
    for member in members:
        member.churn(rng, 15)
        await member.cluster.service("web")
        await member.publish()
        await member.cluster.binding("shared", service="web", arn=arn, multi_cluster=True)
        await member.cluster.start()

    async def group_holds_both() -> bool:
        return await aws_inspector.registered(arn) == east.ready() | west.ready()

    await eventually(group_holds_both)

    rounds = CHANGES // BATCH
    for round_ in range(rounds):
        for member in members:
            member.churn(rng, BATCH // 2)
        if round_ == rounds // 4:
            await east.cluster.kill()  # a crash: caches gone; west keeps changing meanwhile
        if round_ == rounds // 4 + 2:
            await east.cluster.start()
        if round_ == rounds // 2:
            # Someone deletes west's tracking ConfigMap while its controller runs.
            await west.cluster.client.delete(CONFIGMAPS, configmap_name("shared"), "default")
        if round_ == 3 * rounds // 4:
            await west.cluster.kill()
            await west.publish()
            await west.cluster.start()
        await asyncio.gather(*(m.publish() for m in members))
        await asyncio.sleep(0.05)

    await eventually(group_holds_both, timeout=30,
                     message="target group is not the union of both clusters' endpoints")
    for member in members:
        await member.cluster.settled()
        assert await member.cluster.tracked("shared") == {f"{ip}:{port}"
                                                          for ip, port in member.ready()}
        assert _check_deregistrations(member) > 0, f"{member.name} never deregistered"
    assert await group_holds_both()
    for member in members:
        assert await member.cluster.stop() == 0


async def test_lost_tracking_deregisters_nothing_and_says_so(cluster: Cluster) -> None:
    """The documented limit: with the ConfigMap deleted *and* the controller's memory of it gone
    (a restart), the targets this cluster dropped meanwhile cannot be told from other clusters'.
    Upstream's rule holds (nothing deregistered on that pass), a Warning Event names the problem,
    and tracking resumes from the current set."""
    arn = await cluster.target_group("shared")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.30.0.1", "10.30.0.2"])
    await cluster.binding("shared", service="web", arn=arn, multi_cluster=True)
    await cluster.start()
    await eventually(lambda: _tracked_is(cluster, {"10.30.0.1:8080", "10.30.0.2:8080"}))
    await cluster.settled()
    await cluster.kill()

    await cluster.client.delete(CONFIGMAPS, configmap_name("shared"), "default")
    await cluster.endpoints("web", ["10.30.0.1", "10.30.0.3"])
    await cluster.start()
    await eventually(lambda: _tracked_is(cluster, {"10.30.0.1:8080", "10.30.0.3:8080"}))

    async def warned() -> bool:
        return any(e["type"] == "Warning" and e["reason"] == "TrackingMissing"
                   for e in await cluster.events("shared", of=TARGETGROUPBINDINGS))

    await eventually(warned)
    leaked = ("10.30.0.2", 8080)
    assert await cluster.aws.registered(arn) == {("10.30.0.1", 8080), ("10.30.0.3", 8080), leaked}

    # Tracking works again from here on.
    await cluster.endpoints("web", ["10.30.0.3"])
    await eventually(lambda: _tracked_is(cluster, {"10.30.0.3:8080"}))
    await eventually(lambda: _registered_is(cluster, arn, {("10.30.0.3", 8080), leaked}))
    assert await cluster.stop() == 0


async def _tracked_is(cluster: Cluster, expected: set[str]) -> bool:
    return await cluster.tracked("shared") == expected


async def _registered_is(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
