"""Capacity reservations of a Service's NLB (`aws-load-balancer-minimum-load-balancer-capacity`,
the LBCapacityReservation gate) against the stand-in: set, changed, reset with 0, left alone
when the key goes (upstream), and nothing read with the gate off."""

from __future__ import annotations

from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION
from controller.config.featuregates import GATES
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import hostname
from tests.support.settings import service_settings
from tests.support.waiting import eventually

KEY = "service.beta.kubernetes.io/aws-load-balancer-minimum-load-balancer-capacity"


async def the_lb(c: Cluster) -> str:
    svc = await eventually(lambda: _deployed_service(c))
    lb = await c.aws.load_balancer_at(hostname(svc))
    assert lb is not None
    return str(lb["LoadBalancerArn"])


async def _deployed_service(c: Cluster) -> dict[str, Any] | None:
    svc = await c.find(SERVICES, "web")
    return svc if svc is not None and hostname(svc) else None


async def reserved(c: Cluster, arn: str) -> int | None:
    answer = await c.aws.elbv2("DescribeCapacityReservation", LoadBalancerArn=arn)
    return (answer.get("MinimumLoadBalancerCapacity") or {}).get("CapacityUnits")


async def set_capacity(c: Cluster, value: str | None) -> None:
    await c.patch(SERVICES, "web", {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: None, KEY: value}}})


async def deployed(c: Cluster) -> None:
    async def done() -> bool:
        await c.settled()
        svc = await c.find(SERVICES, "web")
        return svc is not None and CHECKPOINT_ANNOTATION in svc["metadata"]["annotations"]
    await eventually(done)


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_the_reservation_follows_the_annotation(cluster: Cluster,
                                                      aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {KEY: "CapacityUnits=3000"}, endpoint_ips=())
    await c.start()
    lb = await the_lb(c)
    await eventually(lambda: _equals(reserved(c, lb), 3000))
    await set_capacity(c, "CapacityUnits=4000")
    await eventually(lambda: _equals(reserved(c, lb), 4000))
    await set_capacity(c, "CapacityUnits=0")
    await eventually(lambda: _equals(reserved(c, lb), None))
    await set_capacity(c, "CapacityUnits=3500")
    await eventually(lambda: _equals(reserved(c, lb), 3500))
    aws_proxy.clear_log()
    await set_capacity(c, None)  # upstream does not reset it
    await deployed(c)
    assert await reserved(c, lb) == 3500
    assert [r.operation for r in aws_proxy.log if r.operation == "ModifyCapacityReservation"
            ] == []


async def test_the_gate_off_reads_nothing(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.nlb_service("web", {KEY: "CapacityUnits=nonsense"}, endpoint_ips=())
    await c.start(service=service_settings(
        c.seed, gates=GATES.parse("LBCapacityReservation=false")))
    lb = await the_lb(c)
    await deployed(c)
    assert await reserved(c, lb) is None
    assert not [r for r in aws_proxy.log if "Capacity" in r.operation]
    warnings = [e["message"] for e in await c.events("web") if e["type"] == "Warning"]
    assert warnings == [f"annotation {KEY} is not acted on (--feature-gates "
                        "LBCapacityReservation=false); it is ignored"]
