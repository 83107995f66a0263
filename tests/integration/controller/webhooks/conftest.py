"""The webhook tests' cluster: every controller (the Events a denial must match, the load
balancers of the rollout), aiolbc's webhook server on loopback, and the real kubectl."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cluster import INGRESS, SERVICE, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.kubectl import Kubectl
from tests.support.webhooks import WebhookHarness


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(SERVICE, INGRESS, TARGETGROUPBINDING)


@pytest.fixture
def cluster_kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    assert cluster.kubeconfig is not None
    home = tmp_path / "kubectl-home"
    home.mkdir()
    return Kubectl(cluster.kubeconfig, home)


@pytest.fixture
def hooks(cluster: Cluster, cluster_kubectl: Kubectl, tmp_path: Path) -> WebhookHarness:
    return WebhookHarness(cluster, cluster_kubectl, tmp_path)
