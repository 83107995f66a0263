"""Deleting the TargetGroupBinding CRD deletes every binding (the API server's cascade; the local
API server does it as the real one does: Terminating, each binding's finalizer waited for). The
controller releases each binding without deregistering anything, says so on each, and lets the
CRD go; a binding deleted while the CRD stays still deregisters its targets."""

from __future__ import annotations

from functools import partial

from controller.apis import TARGETGROUPBINDINGS
from controller.standins import AWSFaultProxy
from controller.targetgroupbinding.crdguard import CRD_NAME
from runtime.errors import NotFound
from runtime.resources import CUSTOMRESOURCEDEFINITIONS
from tests.support.cluster import Cluster
from tests.support.waiting import eventually


async def _crd_gone(cluster: Cluster) -> bool:
    try:
        await cluster.client.get(CUSTOMRESOURCEDEFINITIONS, CRD_NAME)
    except NotFound:
        return True
    return False


async def test_deleting_the_crd_deregisters_no_target(cluster: Cluster,
                                                      aws_proxy: AWSFaultProxy) -> None:
    arns = {name: await cluster.target_group(f"{name}-tg") for name in ("web", "api")}
    for name, arn in arns.items():
        await cluster.service(name)
        await cluster.endpoints(name, ["10.0.1.1", "10.0.1.2"])
        await cluster.binding(name, service=name, arn=arn)
    await cluster.start()
    expected = {("10.0.1.1", 8080), ("10.0.1.2", 8080)}
    for arn in arns.values():
        await eventually(partial(_registered, cluster, arn, expected))
    await cluster.settled()

    aws_proxy.clear_log()
    await cluster.client.delete(CUSTOMRESOURCEDEFINITIONS, CRD_NAME)
    await eventually(lambda: _crd_gone(cluster), message="the CRD's deletion did not finish")
    await cluster.settled()
    # Every target stays registered; nothing was written to AWS.
    for arn in arns.values():
        assert await cluster.aws.registered(arn) == expected
    assert [r.operation for r in aws_proxy.log
            if not r.operation.startswith("Describe")] == []
    for name in arns:
        reasons = {e["reason"] for e in await cluster.events(name)}
        assert "CRDDeleting" in reasons, reasons


async def test_a_binding_deleted_on_its_own_still_deregisters(cluster: Cluster) -> None:
    arn = await cluster.target_group("web-tg")
    await cluster.service("web")
    await cluster.endpoints("web", ["10.0.1.1"])
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start()
    await eventually(lambda: _registered(cluster, arn, {("10.0.1.1", 8080)}))
    await cluster.client.delete(TARGETGROUPBINDINGS, "web", "default")
    await eventually(lambda: _registered(cluster, arn, set()))
    assert await cluster.find(TARGETGROUPBINDINGS, "web") is None


async def _registered(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
