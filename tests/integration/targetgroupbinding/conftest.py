"""Fixtures of the TargetGroupBinding tests.

- `cluster`: a `Cluster` (harness.py) on its own local API server, with the CRDs, using the
  `aws_pool` (through the fault proxy, so `aws_proxy.log` holds the controller's calls).
- `inspect_pool`: a pool straight to moto for the test's own looks at AWS; `cluster.registered`
  uses it, so polling never shows up in the proxy log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSSettings
from controller.standins import AwsSeed, MotoStandIn
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from tests.integration.targetgroupbinding.harness import CRDS, Cluster


@pytest.fixture
async def inspect_pool(moto_standin: MotoStandIn, aws_seed: AwsSeed
                       ) -> AsyncIterator[AWSClientPool]:
    """A pool straight to moto, for the test's own looks at AWS: they stay out of the fault
    proxy's log, which then holds only the controller's calls."""
    settings = AWSSettings(region=aws_seed.region, endpoint_url=moto_standin.url,
                           access_key="testing", secret_key="testing")
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        yield pool


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, inspect_pool: AWSClientPool,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("kc") / "kubeconfig")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            cluster = Cluster(server=server, client=client, pool=aws_pool, seed=aws_seed,
                              inspect=inspect_pool)
            try:
                yield cluster
            finally:
                if cluster.task is not None:
                    await cluster.kill()
