from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from tests.integration.ingress.harness import CRDS, IngressCluster


@pytest.fixture
async def icluster(aws_seed: AwsSeed, aws_pool: AWSClientPool,
                   tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[IngressCluster]:
    async with EnvTestServer(crds=[CRDS], bookmark_interval=0.5) as server:
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("kc") / "kubeconfig")
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            cluster = IngressCluster(server=server, client=client, pool=aws_pool, seed=aws_seed)
            try:
                yield cluster
            finally:
                if cluster.task is not None:
                    await cluster.kill()
