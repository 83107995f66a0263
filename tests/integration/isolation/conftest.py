"""Fixtures of the tenant isolation tests: `tenancy`, a `Tenancy` (tenancy.py) with the victim
and attacker namespaces created and the attacker's client (`attacker`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSSettings
from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn
from runtime.client import KubeClient
from tests.integration.isolation.tenancy import ATTACKER, VICTIM, Tenancy
from tests.integration.rbac_support import authorized_server, rbac_documents


@pytest.fixture
async def tenancy(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
                  moto_standin: MotoStandIn, tmp_path: Path) -> AsyncIterator[Tenancy]:
    direct = AWSSettings(region=aws_seed.region, endpoint_url=moto_standin.url,
                         access_key="testing", secret_key="testing")
    async with authorized_server(rbac_documents(), tmp_path) as (server, admin, controller), \
            AWSClientPool(direct, registry=CollectorRegistry()) as inspect:
        world = Tenancy(server=server, client=admin, controller=controller, pool=aws_pool,
                        inspect=inspect, proxy=aws_proxy, seed=aws_seed, tmp=tmp_path)
        await world.namespace(VICTIM, {"team": "shop"})
        await world.namespace(ATTACKER)
        try:
            yield world
        finally:
            if world.task is not None:
                await world.kill()


@pytest.fixture
async def attacker(tenancy: Tenancy) -> AsyncIterator[KubeClient]:
    client = await tenancy.tenant(ATTACKER)
    async with client:
        yield client
