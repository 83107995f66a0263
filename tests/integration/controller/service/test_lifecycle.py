"""A Service's NLB from creation to deletion, with the TargetGroupBinding controller registering
the targets: create, change ports and annotations, a binding deleted by hand, deletion, and a
Service that stops asking for an NLB."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.apis import (
    CHECKPOINT_ANNOTATION,
    CHECKPOINT_TIMESTAMP_ANNOTATION,
    SERVICE_FINALIZER,
    TARGETGROUPBINDINGS,
)
from controller.service.model import MODEL_VERSION
from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname, service_port
from tests.support.waiting import eventually

HC_INTERVAL = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"


async def _deployed(cluster: Cluster, name: str) -> dict[str, Any] | None:
    svc = await cluster.get(SERVICES, name)
    ready = condition(svc, CONDITION_TYPE)
    if hostname(svc) and ready and ready["status"] == "True" and \
            CHECKPOINT_ANNOTATION in (svc["metadata"].get("annotations") or {}):
        return svc
    return None


async def test_create_change_delete(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    await cluster.nlb_service("web")
    await cluster.endpoints("web", ["10.0.1.1", "10.0.1.2"])
    await cluster.start()

    svc = await eventually(lambda: _deployed(cluster, "web"), message="web not deployed")
    lb = await cluster.aws.load_balancer_at(hostname(svc))
    assert lb is not None
    assert lb["Type"] == "network"
    assert lb["Scheme"] == "internal"
    assert {z["SubnetId"] for z in lb["AvailabilityZones"]} == set(cluster.seed.private_subnets)
    lb_arn = lb["LoadBalancerArn"]
    listeners = await cluster.aws.listeners(lb_arn)
    assert {p: lis["Protocol"] for p, lis in listeners.items()} == {80: "TCP"}
    [binding] = await cluster.bindings("web")
    assert binding["spec"]["targetType"] == "ip"
    assert binding["spec"]["serviceRef"] == {"name": "web", "port": 80}
    tg_arn = binding["spec"]["targetGroupARN"]
    action = listeners[80]["DefaultActions"][0]
    forwarded = action.get("TargetGroupArn") or action["ForwardConfig"]["TargetGroups"][0][
        "TargetGroupArn"]
    assert forwarded == tg_arn
    await eventually(lambda: _registered_are(cluster, tg_arn, {
        ("10.0.1.1", 8080), ("10.0.1.2", 8080)}), message="targets not registered")
    assert SERVICE_FINALIZER in svc["metadata"]["finalizers"]
    assert svc["metadata"]["annotations"][CHECKPOINT_ANNOTATION].startswith(f"v{MODEL_VERSION}:")
    await eventually(lambda: _has_event(cluster, "web", "SuccessfullyReconciled"))

    # Our own writes and the TGB controller's, and an unrelated label, cost no AWS call.
    await cluster.settled()
    aws_proxy.clear_log()
    await cluster.patch(SERVICES, "web", {"metadata": {"labels": {"team": "a"}}})
    await asyncio.sleep(0.2)
    await cluster.settled()
    assert [r.operation for r in aws_proxy.log] == []

    # A second port and a health-check annotation: a new listener, target group and binding;
    # the first target group's health check is modified in place.
    await cluster.endpoints("web", ["10.0.1.1"], ports=(("http", 8080), ("https", 8443)))
    await cluster.patch(SERVICES, "web", {
        "metadata": {"annotations": {HC_INTERVAL: "20"}},
        "spec": {"ports": [service_port(), service_port(443, 8443, "https")]}})

    async def two_ports() -> bool:
        found = await cluster.bindings("web")
        return len(found) == 2 and set(await cluster.aws.listeners(lb_arn)) == {80, 443}

    await eventually(two_ports, message="second port not deployed")
    https = next(b for b in await cluster.bindings("web")
                 if b["spec"]["serviceRef"]["port"] == 443)
    await eventually(lambda: _registered_are(cluster, https["spec"]["targetGroupARN"],
                                             {("10.0.1.1", 8443)}))
    await eventually(lambda: _registered_are(cluster, tg_arn, {("10.0.1.1", 8080)}))
    intervals = {tg["TargetGroupArn"]: tg["HealthCheckIntervalSeconds"]
                 for tg in await cluster.aws.target_groups()}
    assert intervals == {tg_arn: 20, https["spec"]["targetGroupARN"]: 20}

    # A managed binding deleted by hand comes back.
    await cluster.settled()
    await cluster.client.delete(TARGETGROUPBINDINGS, https["metadata"]["name"], "default")

    async def recreated() -> bool:
        found = {b["metadata"]["name"]: b for b in await cluster.bindings("web")}
        again = found.get(https["metadata"]["name"])
        return again is not None and again["metadata"]["uid"] != https["metadata"]["uid"]

    await eventually(recreated, message="deleted binding not recreated")

    # Port 80 goes away, and its listener, target group and binding with it.
    await cluster.settled()
    await cluster.patch(SERVICES, "web", {"spec": {"ports": [service_port(443, 8443, "https")]}})

    async def one_port() -> bool:
        found = await cluster.bindings("web")
        return (len(found) == 1 and set(await cluster.aws.listeners(lb_arn)) == {443}
                and tg_arn not in {t["TargetGroupArn"] for t in
                                   await cluster.aws.target_groups()})

    await eventually(one_port, message="removed port not cleaned up")

    # Deletion: the binding (its targets deregistered), the NLB, the target groups, and only
    # then the finalizer.
    await cluster.settled()
    aws_proxy.clear_log()
    await cluster.client.delete(SERVICES, "web", "default")
    await eventually(lambda: cluster.gone(SERVICES, "web"), message="service not deleted")
    assert await cluster.bindings("web") == []
    assert await cluster.aws.load_balancers() == []
    assert await cluster.aws.target_groups() == []
    operations = [r.operation for r in aws_proxy.log if r.mutating]
    assert operations.index("DeregisterTargets") < operations.index("DeleteLoadBalancer") \
        < operations.index("DeleteTargetGroup")
    assert await cluster.stop() == 0


async def test_service_that_stops_qualifying_is_cleaned_up(cluster: Cluster) -> None:
    await cluster.nlb_service("api")
    await cluster.endpoints("api", ["10.0.2.1"])
    await cluster.start()
    svc = await eventually(lambda: _deployed(cluster, "api"), message="api not deployed")
    assert await cluster.aws.load_balancer_at(hostname(svc)) is not None

    # Type LoadBalancer → NodePort (the API requires the class to go with it).
    await cluster.patch(SERVICES, "api", {"spec": {"type": "NodePort",
                                                 "loadBalancerClass": None}})

    async def cleaned() -> dict[str, Any] | None:
        current = await cluster.get(SERVICES, "api")
        meta = current["metadata"]
        done = (SERVICE_FINALIZER not in (meta.get("finalizers") or [])
                and not await cluster.aws.load_balancers()
                and not await cluster.aws.target_groups())
        return current if done else None

    svc = await eventually(cleaned, message="resources of a non-qualifying service remain")
    assert await cluster.bindings("api") == []
    assert hostname(svc) is None
    assert condition(svc, CONDITION_TYPE) is None
    annotations = svc["metadata"].get("annotations") or {}
    assert CHECKPOINT_ANNOTATION not in annotations
    assert CHECKPOINT_TIMESTAMP_ANNOTATION not in annotations
    await eventually(lambda: _has_event(cluster, "api", "DeletedLoadBalancer"))

    # Asking again gives a new NLB.
    await cluster.patch(SERVICES, "api", {"spec": {"type": "LoadBalancer",
                                                 "loadBalancerClass": "service.k8s.aws/nlb"}})
    await eventually(lambda: _deployed(cluster, "api"), message="api not redeployed")
    assert len(await cluster.aws.load_balancers()) == 1
    assert await cluster.stop() == 0


async def _has_event(cluster: Cluster, name: str, reason: str) -> bool:
    return any(e["reason"] == reason for e in await cluster.events(name))


async def _registered_are(cluster: Cluster, arn: str, expected: set[tuple[str, int]]) -> bool:
    return await cluster.aws.registered(arn) == expected
