"""AWS failures: a failed deploy or cleanup is reported (Warning Event, condition) and retried
until it succeeds."""

from __future__ import annotations

from typing import Any

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname
from tests.support.waiting import eventually


async def _warning(cluster: Cluster, name: str, reason: str) -> dict[str, Any] | None:
    for event in await cluster.events(name):
        if event["type"] == "Warning" and event["reason"] == reason:
            return event
    return None


async def test_failed_deploy_and_cleanup_are_reported_and_retried(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    fault = aws_proxy.inject("ValidationError", operation="CreateLoadBalancer",
                             message="subnet quota reached")
    await cluster.nlb_service("web", endpoint_ips=())
    await cluster.start()

    event = await eventually(lambda: _warning(cluster, "web", "FailedDeployModel"))
    assert "subnet quota reached" in event["message"]

    async def failed_condition() -> bool:
        cond = condition(await cluster.get(SERVICES, "web"), CONDITION_TYPE)
        return cond is not None and cond["status"] == "False" and \
            cond["reason"] == "FailedDeployModel" and "subnet quota reached" in cond["message"]

    await eventually(failed_condition)
    aws_proxy.remove(fault)

    async def ready() -> bool:
        svc = await cluster.get(SERVICES, "web")
        cond = condition(svc, CONDITION_TYPE)
        return bool(hostname(svc)) and cond is not None and cond["status"] == "True"

    await eventually(ready, message="deploy not retried")

    await cluster.settled()
    fault = aws_proxy.inject("ValidationError", operation="DeleteLoadBalancer",
                             message="deletion protection is on")
    await cluster.delete(SERVICES, "web")
    event = await eventually(lambda: _warning(cluster, "web", "FailedCleanup"))
    assert "deletion protection is on" in event["message"]
    assert not await cluster.gone(SERVICES, "web")  # the finalizer holds it
    aws_proxy.remove(fault)
    await eventually(lambda: cluster.gone(SERVICES, "web"), message="cleanup not retried")
    assert await cluster.aws.load_balancers() == []
    assert await cluster.stop() == 0
