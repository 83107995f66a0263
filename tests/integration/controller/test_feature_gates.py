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
