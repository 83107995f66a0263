"""Pod readiness gates, from the TargetGroupBinding controller's side, with target health as AWS
reports it (the fault proxy's model): a pod whose containers are ready but whose gate is not yet
True is registered; its condition says what AWS says (`initial`, with AWS's reason) until its
target is healthy, then True; a pod that is not ready for other reasons is left alone; and a
deleted binding releases its pods' gates."""

from __future__ import annotations

import math

from controller.apis import TARGETGROUPBINDINGS, target_health_condition
from controller.standins import AWSFaultProxy, TargetHealthSettings
from runtime.resources import ENDPOINTSLICES, PODS
from runtime.statusconditions import find_condition
from tests.support import objects
from tests.support.cluster import Cluster
from tests.support.settings import tgb_settings
from tests.support.waiting import eventually

GATE = target_health_condition("web")
WAITING = {"ContainersReady": "True", "Ready": "False"}


async def _condition(cluster: Cluster, pod: str) -> dict[str, str]:
    found = find_condition(await cluster.get(PODS, pod), GATE) or {}
    return {k: found[k] for k in ("status", "reason", "message") if k in found}


async def test_a_gated_pod_is_registered_and_its_gate_follows_target_health(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    health = aws_proxy.enable_target_health(TargetHealthSettings(health_check_delay=math.inf,
                                                                 deregistration_delay=0))
    arn = await cluster.target_group("web")
    lb = await cluster.aws.elbv2("CreateLoadBalancer", Name="web-lb", Type="application",
                                 Subnets=list(cluster.seed.public_subnets))
    await cluster.aws.elbv2("CreateListener", Protocol="HTTP", Port=80,
                            LoadBalancerArn=lb["LoadBalancers"][0]["LoadBalancerArn"],
                            DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}])
    aws_proxy.routing_changed()
    await cluster.service("web")
    for name, ip, conditions in (("web-a", "10.0.3.1", WAITING),
                                 ("web-b", "10.0.3.2", WAITING),
                                 ("web-c", "10.0.3.3", {"ContainersReady": "False"})):
        await cluster.pod(name, labels={"app": "web"}, gates=[GATE], conditions=conditions,
                          ip=ip)
    endpoints = [objects.endpoint(ip, ready=False, uid=str((await cluster.get(PODS, name))[
        "metadata"]["uid"])) for name, ip in (("web-a", "10.0.3.1"), ("web-b", "10.0.3.2"),
                                                ("web-c", "10.0.3.3"))]
    for endpoint, name in zip(endpoints, ("web-a", "web-b", "web-c"), strict=True):
        endpoint["targetRef"]["name"] = name
    await cluster.create(ENDPOINTSLICES, objects.endpoint_slice(
        "web", endpoints=endpoints))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start(targetgroupbinding=tgb_settings(cluster.seed, requeue_duration=0.05))

    # Registered although not ready: only its gate keeps it back. web-c is not ready at all.
    async def registered() -> bool:
        return await cluster.aws.registered(arn) == {("10.0.3.1", 8080), ("10.0.3.2", 8080)}

    await eventually(registered)
    initial = {"status": "False", "reason": "Elb.RegistrationInProgress",
               "message": "Target registration is in progress"}
    await eventually(lambda: _is(cluster, "web-a", initial))
    assert await _condition(cluster, "web-c") == {}

    # Healthy at AWS: True. The other pod still waits, so the binding keeps looking.
    health.mark_healthy(arn, "10.0.3.1")
    await eventually(lambda: _is(cluster, "web-a", {"status": "True", "reason": "",
                                                    "message": ""}))
    health.mark_unhealthy(arn, "10.0.3.2", reason="Target.Timeout")
    await eventually(lambda: _is(cluster, "web-b", {
        "status": "False", "reason": "Target.Timeout", "message": "Request timed out"}))

    # The binding goes: its pods must not wait for it any more.
    await cluster.delete(TARGETGROUPBINDINGS, "web")
    await eventually(lambda: cluster.gone(TARGETGROUPBINDINGS, "web"))
    assert await _is(cluster, "web-b", {"status": "True", "reason": "",
                                        "message": "Target Group Binding is deleted"})


async def _is(cluster: Cluster, pod: str, wanted: dict[str, str]) -> bool:
    current = await _condition(cluster, pod)
    return {k: current.get(k, "") for k in wanted} == wanted


async def test_a_binding_for_a_service_nobody_used_registers_its_gated_pods(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    """The slice cache kept only index entries of the Service's slices when the binding came:
    which endpoints wait for their gates is read from the slices themselves, fetched."""
    health = aws_proxy.enable_target_health(TargetHealthSettings(health_check_delay=math.inf,
                                                                 deregistration_delay=0))
    arn = await cluster.target_group("web")
    lb = await cluster.aws.elbv2("CreateLoadBalancer", Name="web-lb", Type="application",
                                 Subnets=list(cluster.seed.public_subnets))
    await cluster.aws.elbv2("CreateListener", Protocol="HTTP", Port=80,
                            LoadBalancerArn=lb["LoadBalancers"][0]["LoadBalancerArn"],
                            DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}])
    aws_proxy.routing_changed()
    await cluster.service("web")
    await cluster.pod("web-a", labels={"app": "web"}, gates=[GATE], conditions=WAITING,
                      ip="10.0.4.1")
    endpoint = objects.endpoint("10.0.4.1", ready=False, uid=str((await cluster.get(
        PODS, "web-a"))["metadata"]["uid"]))
    endpoint["targetRef"]["name"] = "web-a"
    await cluster.create(ENDPOINTSLICES, objects.endpoint_slice("web", endpoints=[endpoint]))
    await cluster.start(targetgroupbinding=tgb_settings(cluster.seed, requeue_duration=0.05))
    await cluster.binding("web", service="web", arn=arn)

    async def registered() -> bool:
        return await cluster.aws.registered(arn) == {("10.0.4.1", 8080)}

    await eventually(registered)
    await eventually(lambda: _is(cluster, "web-a", {"status": "False",
                                                    "reason": "Elb.RegistrationInProgress"}))
    health.mark_healthy(arn, "10.0.4.1")
    await eventually(lambda: _is(cluster, "web-a", {"status": "True"}))
    assert await cluster.stop() == 0


async def test_the_gates_flip_is_measured_as_upstream_does(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    """awslbc_readiness_gate_ready_seconds: one observation per pod whose gate turns True,
    labelled with the binding."""
    health = aws_proxy.enable_target_health(TargetHealthSettings(health_check_delay=math.inf,
                                                                 deregistration_delay=0))
    arn = await cluster.target_group("web")
    lb = await cluster.aws.elbv2("CreateLoadBalancer", Name="web-lb", Type="application",
                                 Subnets=list(cluster.seed.public_subnets))
    await cluster.aws.elbv2("CreateListener", Protocol="HTTP", Port=80,
                            LoadBalancerArn=lb["LoadBalancers"][0]["LoadBalancerArn"],
                            DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}])
    aws_proxy.routing_changed()
    await cluster.service("web")
    await cluster.pod("web-a", labels={"app": "web"}, gates=[GATE], conditions=WAITING,
                      ip="10.0.3.1")
    endpoint = objects.endpoint("10.0.3.1", ready=False, uid=str(
        (await cluster.get(PODS, "web-a"))["metadata"]["uid"]))
    endpoint["targetRef"]["name"] = "web-a"
    await cluster.create(ENDPOINTSLICES, objects.endpoint_slice("web", endpoints=[endpoint]))
    await cluster.binding("web", service="web", arn=arn)
    await cluster.start(targetgroupbinding=tgb_settings(cluster.seed, requeue_duration=0.05))
    labels = {"namespace": cluster.namespace, "name": "web"}

    def observed() -> float:
        return cluster.registry.get_sample_value(
            "awslbc_readiness_gate_ready_seconds_count", labels) or 0.0

    await eventually(lambda: _is(cluster, "web-a", {
        "status": "False", "reason": "Elb.RegistrationInProgress",
        "message": "Target registration is in progress"}))
    assert observed() == 0
    health.mark_healthy(arn, "10.0.3.1")
    await eventually(lambda: _is(cluster, "web-a", {"status": "True", "reason": "",
                                                    "message": ""}))

    async def measured() -> bool:
        return observed() == 1

    await eventually(measured)
