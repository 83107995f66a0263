"""A switch of controllers: the local API server with the CRDs and an IngressClass, moto
freshly seeded, and `aiolbc run` as the controller (through the fault proxy, so that
`aws_proxy.log` holds every AWS call it makes)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from tests.support.aws import AwsInspector
from tests.support.cluster import Cluster, local_cluster


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                  tmp_path: Path) -> AsyncIterator[Cluster]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=()) as c:
        await c.ingress_class("alb")
        yield c
