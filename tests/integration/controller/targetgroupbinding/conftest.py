"""The TargetGroupBinding tests' cluster: that controller alone. Its AWS calls are in
`aws_proxy.log`; the test's own looks (`cluster.aws`) are not."""

from __future__ import annotations

import pytest

from tests.support.cluster import TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster(TARGETGROUPBINDING)
