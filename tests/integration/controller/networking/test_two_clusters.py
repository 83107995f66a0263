"""Two clusters whose pods' interfaces share one node group: two controllers (`--cluster-name`
test-cluster and cluster-b, each with its own API server, set up from `aiolbc run` flags), each
writing its rules with its own cluster in the description. Through a bounded run of work on one
side (rules narrowed, widened and moved, a binding added and deleted, the controller killed and
restarted, so that its first pass looks at the shared group again) the other side's rules never
go, not even for a moment (the group is sampled throughout); then the sides swap."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy, AwsSeed
from tests.support.aws import AwsInspector, Rules
from tests.support.cluster import TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.waiting import eventually

GRANT = ("--targetgroupbinding-networking-unrestricted-namespaces", "*")
ROUNDS = 8
RESTART_EVERY = 3


def _description(cluster: str) -> str:
    return f"elbv2.k8s.aws/cluster={cluster},elbv2.k8s.aws/targetGroupBinding=shared"


@dataclass
class Side:
    name: str  # its cluster name
    cluster: Cluster
    flags: tuple[str, ...]
    octet: int  # its CIDRs are 10.<octet>.<n>.0/24
    pod: str

    def cidrs(self, *subnets: int) -> list[str]:
        return [f"10.{self.octet}.{n}.0/24" for n in subnets]

    def rules(self, cidrs: Sequence[str]) -> Rules:
        return {("tcp", 8080, 8080, cidr, _description(self.name)) for cidr in cidrs}

    async def binding(self, name: str, cidrs: Sequence[str]) -> None:
        await self.cluster.binding(name, service="app", arn=await self.cluster.target_group(
            f"{self.name}-{name}"), extra=_networking(cidrs))

    async def ask(self, name: str, cidrs: Sequence[str]) -> None:
        await self.cluster.patch(TARGETGROUPBINDINGS, name, {"spec": _networking(cidrs)})

    async def start(self) -> None:
        await self.cluster.start_app(*self.flags, *GRANT)

    async def restart(self) -> None:
        await self.cluster.kill()
        await self.start()


def _networking(cidrs: Sequence[str]) -> dict[str, object]:
    return {"networking": {"ingress": [{"from": [{"ipBlock": {"cidr": c}} for c in cidrs],
                                        "ports": [{"port": 8080}]}]}}


@dataclass
class Sampler:
    """The node group's rules read over and over; every moment `kept` was not all there."""

    aws: AwsInspector
    group: str
    kept: Rules
    samples: int = 0
    missing: list[Rules] = field(default_factory=list)

    async def run(self) -> None:
        while True:
            rules = await self.aws.group_rules(self.group)
            self.samples += 1
            if not self.kept <= rules:
                self.missing.append(self.kept - rules)
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def sampling(sampler: Sampler) -> AsyncIterator[Sampler]:
    task = asyncio.create_task(sampler.run())
    try:
        yield sampler
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _node_rules_of(side: Side, aws: AwsInspector, group: str) -> Rules:
    ours = _description(side.name)
    return {r for r in await aws.group_rules(group) if r[4] == ours}


async def _work(side: Side, aws: AwsInspector, group: str) -> int:
    """Rounds of changes on `side`, each awaited until AWS shows it; the rounds done."""
    plan = [(1,), (1, 2), (2,), (3, 4, 5), (4,), (6,), (6, 7), (8,)]
    extra: list[str] = []
    for i, subnets in enumerate(plan[:ROUNDS]):
        main = side.cidrs(*subnets)
        await side.ask("main", main)
        if i == 2:
            extra = side.cidrs(20)
            await side.binding("extra", extra)
        if i == 5:
            await side.cluster.delete(TARGETGROUPBINDINGS, "extra")
            extra = []
        if i % RESTART_EVERY == RESTART_EVERY - 1:
            await side.restart()

        await eventually(partial(_has_exactly, side, aws, group, side.rules([*main, *extra])),
                         timeout=30, message=f"{side.name} round {i}")
    return len(plan[:ROUNDS])


async def test_two_clusters_on_one_node_group_never_revoke_each_others_rules(
        make_cluster: MakeCluster, aws_seed: AwsSeed, aws_proxy: AWSFaultProxy) -> None:
    first = await make_cluster(TARGETGROUPBINDING)
    second = await make_cluster(TARGETGROUPBINDING)
    aws, group = first.aws, aws_seed.node_security_group_id
    sides = [Side("test-cluster", first, (), 21, "10.0.4.10"),
             Side("cluster-b", second, ("--cluster-name", "cluster-b"), 22, "10.0.5.10")]
    for side in sides:
        await side.cluster.service("app")
        await side.cluster.endpoints("app", [side.pod])
        await side.binding("main", side.cidrs(0))
        await side.start()
    for side in sides:
        await eventually(partial(_shown, side, aws, group), timeout=30)

    aws_proxy.clear_log()
    for busy, still in (sides, sides[::-1]):
        kept = await _node_rules_of(still, aws, group)
        assert kept == still.rules(still.cidrs(0))
        async with sampling(Sampler(aws, group, kept)) as sampler:
            assert await _work(busy, aws, group) == ROUNDS
            await still.cluster.settled()
        assert sampler.samples > ROUNDS
        assert sampler.missing == [], f"{busy.name} revoked {still.name}'s rules"
        await busy.ask("main", busy.cidrs(0))
        await eventually(partial(_shown, busy, aws, group))
    # The work revoked rules: each side its own.
    assert sum(r.operation == "RevokeSecurityGroupIngress" for r in aws_proxy.log) >= 2 * 5
    for side in sides:
        await side.cluster.kill()


async def _has_exactly(side: Side, aws: AwsInspector, group: str, want: Rules) -> bool:
    return await _node_rules_of(side, aws, group) == want


async def _shown(side: Side, aws: AwsInspector, group: str) -> bool:
    return await _has_exactly(side, aws, group, side.rules(side.cidrs(0)))
