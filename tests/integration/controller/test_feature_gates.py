"""Feature gates that decide which controllers `aiolbc run` sets up, in both states."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller import service
from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster
from tests.support.waiting import eventually


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        yield c


@pytest.mark.parametrize(("flags", "served"), [
    ((), True),
    (("--feature-gates=EnableServiceController=true",), True),
    (("--feature-gates=EnableServiceController=false",), False),
])
async def test_enable_service_controller(cluster: Cluster, flags: tuple[str, ...],
                                         served: bool) -> None:
    manager = await cluster.start_app(*flags)
    names = {c.name for c in manager.controllers}
    assert (service.CONTROLLER_NAME in names) is served
    assert "targetGroupBinding" in names or any("binding" in n.lower() for n in names)
    await cluster.stop()


async def _nlb_in_vpc(cluster: Cluster) -> bool:
    return any(lb.get("VpcId") == cluster.seed.vpc_id and lb.get("Type") == "network"
               for lb in await cluster.aws.load_balancers())


async def test_service_type_load_balancer_only_off_serves_a_node_port_service(
        cluster: Cluster) -> None:
    """Upstream's default: a NodePort Service asking for an NLB by annotation gets one."""
    await cluster.nlb_service("legacy", type_="NodePort")
    await cluster.start_app()
    await eventually(lambda: _nlb_in_vpc(cluster), timeout=60)
    await cluster.stop()


async def test_service_type_load_balancer_only_on_leaves_it_alone(cluster: Cluster) -> None:
    await cluster.nlb_service("legacy", type_="NodePort")
    await cluster.start_app("--feature-gates=ServiceTypeLoadBalancerOnly=true")
    await cluster.settled()
    assert not await _nlb_in_vpc(cluster)
    await cluster.stop()
