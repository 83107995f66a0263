"""The Ingress tests' cluster: the Ingress and TargetGroupBinding controllers."""

from __future__ import annotations

import pytest

from tests.support.cluster import INGRESS, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(INGRESS, TARGETGROUPBINDING)
