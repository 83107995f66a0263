"""`aws-load-balancer-listener-attributes.<PROTOCOL>-<port>` on an NLB Service: AWS's listener
after create and update, and a key naming no listener as one message with no AWS call."""

from __future__ import annotations

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
IDLE = "tcp.idle_timeout.seconds"


async def _idle_timeout(c: Cluster) -> str | None:
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listener = (await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))).get(80)
    if listener is None:
        return None
    resp = await c.aws.call("elbv2", "DescribeListenerAttributes",
                            ListenerArn=listener["ListenerArn"])
    return {a["Key"]: a["Value"] for a in resp["Attributes"]}.get(IDLE)


async def test_listener_attributes_reach_the_listener_and_follow_changes(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {"aws-load-balancer-listener-attributes.TCP-80": f"{IDLE}=120"})
    await c.start()

    async def idle(value: str) -> bool:
        return await _idle_timeout(c) == value

    await eventually(lambda: idle("120"))
    await c.annotate(SERVICES, "web", {P + "aws-load-balancer-listener-attributes.TCP-80":
                                       f"{IDLE}=600"})
    await eventually(lambda: idle("600"))
    modified = aws_proxy.records(operation="ModifyListenerAttributes")
    assert len(modified) == 2  # one per change; converged passes write nothing


async def test_a_key_naming_no_listener_is_one_message(cluster: Cluster,
                                                       aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {"aws-load-balancer-listener-attributes.TCP-81": f"{IDLE}=120"},
                        endpoint_ips=())
    await c.start()
    message = (f"service default/web: annotation {P}aws-load-balancer-listener-attributes."
               "TCP-81 names no listener of it (its listeners: TCP-80)")

    async def reported() -> bool:
        svc = await c.get(SERVICES, "web")
        cond = condition(svc, CONDITION_TYPE)
        return cond is not None and cond["message"] == message

    await eventually(reported)
    assert not aws_proxy.records(operation="CreateLoadBalancer")
