from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from controller.aws import AWSClientPool
from controller.standins import AwsSeed, MotoStandIn, sync_client
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from tests.integration.service.harness import CRDS, Cluster


@pytest.fixture
async def cluster(aws_seed: AwsSeed, aws_pool: AWSClientPool, moto_standin: MotoStandIn,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    elbv2 = sync_client("elbv2", moto_standin.url, region=aws_seed.region)
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("kc") / "kubeconfig")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            cluster = Cluster(server=server, client=client, pool=aws_pool, seed=aws_seed,
                              elbv2=elbv2)
            try:
                yield cluster
            finally:
                if cluster.task is not None:
                    cluster.task.cancel()
                    await asyncio.gather(cluster.task, return_exceptions=True)
                elbv2.close()
