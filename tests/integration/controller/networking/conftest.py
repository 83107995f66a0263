"""The networking tests' cluster: NLB Services and the TargetGroupBinding controller, which keeps
the rules their managed bindings ask for on the targets' security groups."""

from __future__ import annotations

import pytest

from tests.support.cluster import SERVICE, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(SERVICE, TARGETGROUPBINDING)
