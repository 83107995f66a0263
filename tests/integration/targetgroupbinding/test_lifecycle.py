"""TargetGroupBinding lifecycle against the local API server and moto behind the fault proxy."""

from __future__ import annotations

import asyncio

from controller.targetgroupbinding.checkpoint import CHECKPOINT_ANNOTATION
from controller.targetgroupbinding.spec import TARGETGROUPBINDINGS
from controller.testing import AWSFaultProxy
from tests.integration.targetgroupbinding.harness import Cluster, eventually


async def test_ip_targets_follow_endpoints(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2"], not_ready=("10.0.1.2",))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()

    async def targets_are(expected: set[tuple[str, int]]) -> bool:
        return await cluster.registered(arn) == expected

    await eventually(lambda: targets_are({("10.0.1.1", 8080)}))
    # scale up, then the first pod goes unready
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"])
    await eventually(lambda: targets_are({("10.0.1.1", 8080), ("10.0.1.2", 8080),
                                          ("10.0.1.3", 8080)}))
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3"],
                            not_ready=("10.0.1.1",))
    await eventually(lambda: targets_are({("10.0.1.2", 8080), ("10.0.1.3", 8080)}))

    tgb = await cluster.get_binding("web")
    assert "elbv2.k8s.aws/resources" in tgb["metadata"]["finalizers"]
    assert tgb["metadata"]["annotations"][CHECKPOINT_ANNOTATION].count("/") == 1
    ready = next(c for c in tgb["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert tgb["status"]["observedGeneration"] == tgb["metadata"]["generation"]

    # Changes that leave the targets alone cost no AWS call (checkpoint match).
    await cluster.settled()
    aws_proxy.clear_log()
    before = cluster.reconciles()
    await cluster.client.patch(TARGETGROUPBINDINGS, "web", {"metadata": {"labels": {"x": "y"}}},
                               "default")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.9"],
                            not_ready=("10.0.1.1", "10.0.1.9"))
    await eventually(lambda: asyncio.sleep(0, cluster.reconciles() >= before + 2))
    await cluster.settled()
    assert [r.operation for r in aws_proxy.log] == []

    # deletion deregisters everything and drops the finalizer
    await cluster.client.delete(TARGETGROUPBINDINGS, "web", "default")
    await eventually(lambda: targets_are(set()))

    async def gone() -> bool:
        try:
            await cluster.get_binding("web")
        except Exception:
            return True
        return False

    await eventually(gone)
    assert await cluster.stop() == 0
