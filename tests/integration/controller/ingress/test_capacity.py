"""Capacity reservations of an Ingress's ALB (`minimum-load-balancer-capacity`, IngressClassParams
`minimumLoadBalancerCapacity`, the LBCapacityReservation gate), against the stand-in's
ModifyCapacityReservation: set, changed, reset with 0, left alone when the key goes (upstream),
the class over the annotation, a bad value, the gate off, and a load balancer still
provisioning (upstream's stabilization monitor)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.apis import CHECKPOINT_ANNOTATION
from controller.config.featuregates import GATES
from controller.standins import AWSFaultProxy, moto_capacity
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.settings import ingress_settings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
KEY = A + "minimum-load-balancer-capacity"


async def the_lb(c: Cluster) -> str:
    async def one() -> str | None:
        lbs = await c.aws.load_balancers()
        return str(lbs[0]["LoadBalancerArn"]) if len(lbs) == 1 else None
    return str(await eventually(one))


async def reserved(c: Cluster, arn: str) -> int | None:
    answer = await c.aws.elbv2("DescribeCapacityReservation", LoadBalancerArn=arn)
    return (answer.get("MinimumLoadBalancerCapacity") or {}).get("CapacityUnits")


async def deployed(c: Cluster, name: str = "shop") -> None:
    async def done() -> bool:
        await c.settled()
        ing = await c.find(INGRESSES, name)
        return ing is not None and CHECKPOINT_ANNOTATION in ing["metadata"]["annotations"]
    await eventually(done)


async def set_capacity(c: Cluster, value: str | None) -> None:
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: None, KEY: value}}})


async def warnings(c: Cluster, name: str = "shop") -> list[str]:
    return [str(e.get("message")) for e in await c.events(name, of=INGRESSES)
            if e.get("type") == "Warning"]


def modifications(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.operation == "ModifyCapacityReservation"]


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _has(messages: Any, text: str) -> bool:
    return any(text in m for m in await messages)


@pytest.fixture
def held() -> Iterator[set[str]]:
    yield moto_capacity.HELD_PROVISIONING
    moto_capacity.HELD_PROVISIONING.clear()


async def test_the_reservation_follows_the_annotation(cluster: Cluster,
                                                      aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {KEY: "CapacityUnits=300"}, backend="web")
    await c.start()
    lb = await the_lb(c)
    await eventually(lambda: _equals(reserved(c, lb), 300))
    await set_capacity(c, "CapacityUnits=500")
    await eventually(lambda: _equals(reserved(c, lb), 500))
    await set_capacity(c, "CapacityUnits=0")  # resets
    await eventually(lambda: _equals(reserved(c, lb), None))
    await set_capacity(c, "CapacityUnits=400")
    await eventually(lambda: _equals(reserved(c, lb), 400))
    # The key removed: upstream leaves the reservation as it is, and so does aiolbc.
    aws_proxy.clear_log()
    await set_capacity(c, None)
    await deployed(c)
    assert await reserved(c, lb) == 400
    assert modifications(aws_proxy) == []
    # Converged: one read, no change.
    await set_capacity(c, "CapacityUnits=400")
    await deployed(c)
    assert [r.operation for r in aws_proxy.log if "Capacity" in r.operation] == [
        "DescribeCapacityReservation"]
    assert modifications(aws_proxy) == []
    aws_proxy.clear_log()
    await c.delete(INGRESSES, "shop")
    await eventually(lambda: _equals(c.aws.load_balancers(), []))
    assert modifications(aws_proxy) == []


async def test_the_class_wins_over_the_annotation(cluster: Cluster) -> None:
    c = cluster
    await c.class_params("params", {"minimumLoadBalancerCapacity": {"capacityUnits": 700}})
    await c.ingress_class("alb", params="params")
    await c.backend("web")
    await c.ingress("shop", {KEY: "CapacityUnits=300"}, backend="web")
    await c.start()
    lb = await the_lb(c)
    await eventually(lambda: _equals(reserved(c, lb), 700))


async def test_a_bad_value_deploys_nothing(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {KEY: "CapacityUnits=-3"}, backend="web")
    await c.start()
    message = (f'annotation {KEY}: "CapacityUnits=-3" has CapacityUnits "-3", which is out of '
               "range: want 0..2147483647")
    await eventually(lambda: _has(warnings(c), message))
    await c.settled()
    assert [r.operation for r in aws_proxy.log if r.mutating] == []
    assert await c.aws.load_balancers() == []
    # Fixed: deployed with its reservation.
    await set_capacity(c, "CapacityUnits=100")
    lb = await the_lb(c)
    await eventually(lambda: _equals(reserved(c, lb), 100))


async def test_the_gate_off_reads_nothing(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {KEY: "CapacityUnits=300"}, backend="web")
    await c.start(ingress=ingress_settings(
        c.seed, gates=GATES.parse("LBCapacityReservation=false")))
    lb = await the_lb(c)
    await deployed(c)
    assert await reserved(c, lb) is None
    assert not [r for r in aws_proxy.log if "Capacity" in r.operation]
    await eventually(lambda: _has(warnings(c), "LBCapacityReservation=false"))


async def test_a_load_balancer_still_provisioning_is_waited_for(
        cluster: Cluster, aws_proxy: AWSFaultProxy, held: set[str]) -> None:
    c = cluster
    held.add("shop-alb")
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {KEY: "CapacityUnits=300", A + "load-balancer-name": "shop-alb"},
                    backend="web")
    await c.start(ingress=ingress_settings(c.seed, stabilization_interval=1.0))
    lb = await the_lb(c)

    async def looked_again() -> bool:
        return sum(r.operation == "DescribeLoadBalancers" and lb in str(r.params)
                   for r in aws_proxy.log) >= 2
    await eventually(looked_again)
    assert modifications(aws_proxy) == []
    assert await reserved(c, lb) is None
    # No checkpoint while the reservation waits: a restart deploys it again.
    ing = await c.get(INGRESSES, "shop")
    assert not ing["metadata"]["annotations"].get(CHECKPOINT_ANNOTATION)
    held.clear()
    await eventually(lambda: _equals(reserved(c, lb), 300))
    await deployed(c)
