"""The shipped RBAC is enough: with authorization on in the local API server, the controller runs
as ServiceAccount aiolbc-system/aiolbc with only manifests/rbac/ and the leader-election Role,
and registers, tracks (multi-cluster ConfigMaps), reports (Events, status) and finalizes without a
single request being refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.apis import TARGETGROUPBINDINGS
from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from runtime.client import KubeClient
from runtime.manager import ManagerOptions
from tests.support.aws import AwsInspector
from tests.support.cluster import TARGETGROUPBINDING, Cluster
from tests.support.rbac import NAMESPACE, authorized_server, rbac_documents
from tests.support.waiting import eventually


@pytest.fixture
async def rbac_cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                       tmp_path: Path) -> AsyncIterator[tuple[Cluster, KubeClient]]:
    """The cluster's own client is an administrator; the controller runs as `controller`."""
    async with authorized_server(rbac_documents(), tmp_path) as (server, admin, controller):
        cluster = Cluster(server=server, client=admin, pool=aws_pool, seed=aws_seed,
                          aws=aws_inspector, controllers=(TARGETGROUPBINDING,))
        try:
            yield cluster, controller
        finally:
            await cluster.close()


async def test_controller_needs_nothing_beyond_the_shipped_rbac(
        rbac_cluster: tuple[Cluster, KubeClient]) -> None:
    cluster, controller = rbac_cluster
    plain_arn = await cluster.target_group("plain-tg")
    shared_arn = await cluster.target_group("shared-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.5.0.1", "10.5.0.2"])
    await cluster.binding("plain", service="web", arn=plain_arn)
    await cluster.binding("shared", service="web", arn=shared_arn, multi_cluster=True)
    # Its own target group: sharing plain's, it could be refused for that before its Service
    # is looked at, depending on which binding is reconciled first.
    broken_arn = await cluster.target_group("broken-tg")
    await cluster.binding("broken", service="nowhere", arn=broken_arn)
    await cluster.start(client=controller, options=ManagerOptions(
        leader_election=True, leader_election_namespace=NAMESPACE,
        leader_election_id="aws-load-balancer-controller-leader",
        lease_duration=2.0, renew_deadline=1.5, retry_period=0.2))

    both = {("10.5.0.1", 8080), ("10.5.0.2", 8080)}

    async def converged() -> bool:
        return (await cluster.aws.registered(plain_arn) == both
                and await cluster.aws.registered(shared_arn) == both
                and await cluster.tracked("shared") == {"10.5.0.1:8080", "10.5.0.2:8080"}
                and any(e["reason"] == "InvalidSpec"
                        for e in await cluster.events("broken", of=TARGETGROUPBINDINGS)))

    await eventually(converged)
    await cluster.endpoints("web", ["10.5.0.2"])  # a deregistration and a tracked-set update
    await eventually(lambda: _registered_are(cluster, shared_arn, {("10.5.0.2", 8080)}))
    for name in ("plain", "shared", "broken"):
        await cluster.client.delete(TARGETGROUPBINDINGS, name, cluster.namespace)
    for name in ("plain", "shared", "broken"):
        await eventually(lambda n=name: cluster.gone(TARGETGROUPBINDINGS, n))  # type: ignore[misc]
    assert await cluster.tracked("shared") is None
    assert await cluster.aws.registered(shared_arn) == set()
    assert cluster.server.denials == []
    assert await cluster.stop() == 0


async def _registered_are(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
