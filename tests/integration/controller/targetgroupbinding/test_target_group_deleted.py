"""Regression: a binding whose target group was deleted behind the controller's back stayed
Ready=True (the registration of a new pod failed and was retried as an AWS error, from cached
facts and health), and its gated pods never became Ready with nothing on the pod saying why.
Now AWS's "target group not found", at any call, makes the binding Ready=False with reason
`TargetGroupNotFound`, and the readiness gate of every pod still waiting for it carries that
reason and message. Pods already Ready keep their gate. The controller runs as `aiolbc run`
sets it up from flags."""

from __future__ import annotations

import math

from controller.apis import TARGETGROUPBINDINGS, target_health_condition
from controller.standins import AWSFaultProxy, TargetHealthSettings
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES, PODS
from runtime.statusconditions import find_condition
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

GATE = target_health_condition("web")
WAITING = {"ContainersReady": "True", "Ready": "False"}


async def _gated_endpoint(cluster: Cluster, pod: str, ip: str) -> Obj:
    await cluster.pod(pod, labels={"app": "web"}, gates=[GATE], conditions=WAITING, ip=ip)
    endpoint = objects.endpoint(ip, ready=False, uid=str(
        (await cluster.get(PODS, pod))["metadata"]["uid"]))
    endpoint["targetRef"]["name"] = pod
    return endpoint


async def _gate(cluster: Cluster, pod: str) -> dict[str, str]:
    found = find_condition(await cluster.get(PODS, pod), GATE) or {}
    return {k: str(found.get(k, "")) for k in ("status", "reason", "message")}


async def _ready(cluster: Cluster) -> dict[str, str]:
    found = find_condition(await cluster.get(TARGETGROUPBINDINGS, "web"), "Ready") or {}
    return {k: str(found.get(k, "")) for k in ("status", "reason", "message")}


def _has(found: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(found.get(k) == v for k, v in wanted.items())


async def test_a_deleted_target_group_makes_the_binding_and_the_waiting_pods_say_why(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    health = aws_proxy.enable_target_health(TargetHealthSettings(health_check_delay=math.inf,
                                                                 deregistration_delay=0))
    arn = await cluster.target_group("web")
    lb = (await cluster.aws.elbv2("CreateLoadBalancer", Name="web-lb", Type="application",
                                  Subnets=list(cluster.seed.public_subnets))
          )["LoadBalancers"][0]["LoadBalancerArn"]
    listener = (await cluster.aws.elbv2(
        "CreateListener", Protocol="HTTP", Port=80, LoadBalancerArn=lb,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}]))["Listeners"][0]
    aws_proxy.routing_changed()
    await cluster.service("web")
    first = await _gated_endpoint(cluster, "web-a", "10.0.3.1")
    await cluster.create(ENDPOINTSLICES, objects.endpoint_slice("web", endpoints=[first]))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start_app("--targetgroupbinding-requeue-duration", "1s")

    async def registered() -> bool:
        return await cluster.aws.registered(arn) == {("10.0.3.1", 8080)}

    await eventually(registered)
    health.mark_healthy(arn, "10.0.3.1")

    async def first_ready() -> bool:
        return (_has(await _gate(cluster, "web-a"), {"status": "True"})
                and _has(await _ready(cluster), {"status": "True"}))

    await eventually(first_ready, timeout=30)

    # The target group goes behind the controller's back; then a new pod comes, gated.
    await cluster.aws.elbv2("DeleteListener", ListenerArn=listener["ListenerArn"])
    await cluster.aws.elbv2("DeleteTargetGroup", TargetGroupArn=arn)
    second = await _gated_endpoint(cluster, "web-b", "10.0.3.2")
    await cluster.patch(ENDPOINTSLICES, "web-1", {"endpoints": [first, second]})

    gone = {"status": "False", "reason": "TargetGroupNotFound"}

    async def binding_says() -> bool:
        return _has(await _ready(cluster), gone)

    async def pod_says() -> bool:
        return _has(await _gate(cluster, "web-b"), gone)

    await eventually(binding_says, timeout=30,
                     message="the binding of a deleted target group still says Ready")
    assert arn in (await _ready(cluster))["message"]
    await eventually(pod_says, timeout=30, message="the waiting pod does not say why")
    gate = await _gate(cluster, "web-b")
    assert gate["message"].startswith("TargetGroupBinding web: ")
    assert f"target group {arn} not found" in gate["message"]
    assert (await _gate(cluster, "web-a"))["status"] == "True"  # it serves: left alone
    events = await cluster.events("web", of=TARGETGROUPBINDINGS)
    assert [e["type"] for e in events if e.get("reason") == "TargetGroupNotFound"][:1] == [
        "Warning"]
    assert await cluster.stop() == 0
