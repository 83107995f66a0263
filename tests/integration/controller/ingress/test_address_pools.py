"""An Ingress's IPv4 IPAM pool (`ipam-ipv4-pool-id`, IngressClassParams `ipamConfiguration`) and
customer-owned IPv4 pool (`customer-owned-ipv4-pool`) against the stand-in: given at creation,
the IPAM pool changed and removed with ModifyIpPools, a converged one costing no call, and a
customer-owned pool that AWS cannot change left as it is with a Warning saying so."""

from __future__ import annotations

from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION
from controller.standins import AWSFaultProxy
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


async def the_lb(c: Cluster) -> dict[str, Any]:
    async def one() -> dict[str, Any] | None:
        lbs = await c.aws.load_balancers()
        return lbs[0] if len(lbs) == 1 else None
    found: dict[str, Any] = await eventually(one)
    return found


async def pool(c: Cluster, arn: str) -> str | None:
    [lb] = (await c.aws.elbv2("DescribeLoadBalancers", LoadBalancerArns=[arn]))[
        "LoadBalancers"]
    return (lb.get("IpamPools") or {}).get("Ipv4IpamPoolId")


async def deployed(c: Cluster, name: str = "shop") -> None:
    async def done() -> bool:
        await c.settled()
        ing = await c.find(INGRESSES, name)
        return ing is not None and CHECKPOINT_ANNOTATION in ing["metadata"]["annotations"]
    await eventually(done)


async def annotate(c: Cluster, values: dict[str, str | None]) -> None:
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: None, **{A + k: v for k, v in values.items()}}}})


async def warnings(c: Cluster, name: str = "shop") -> list[tuple[str, str]]:
    return [(str(e.get("reason")), str(e.get("message")))
            for e in await c.events(name, of=INGRESSES) if e.get("type") == "Warning"]


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_the_ipam_pool_follows_the_annotation(cluster: Cluster,
                                                    aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "ipam-ipv4-pool-id": "ipam-pool-0a1"}, backend="web")
    await c.start()
    lb = (await the_lb(c))["LoadBalancerArn"]
    create = [r for r in aws_proxy.log if r.operation == "CreateLoadBalancer"]
    assert len(create) == 1
    assert await pool(c, lb) == "ipam-pool-0a1"  # given at creation
    assert not [r for r in aws_proxy.log if r.operation == "ModifyIpPools"]
    await annotate(c, {"ipam-ipv4-pool-id": "ipam-pool-0b2"})
    await eventually(lambda: _equals(pool(c, lb), "ipam-pool-0b2"))
    # Converged: nothing to change.
    await deployed(c)
    aws_proxy.clear_log()
    await annotate(c, {"tags": "team=shop"})
    await deployed(c)
    assert not [r for r in aws_proxy.log if r.operation == "ModifyIpPools"]
    # Removed with the annotation (upstream's rule).
    await annotate(c, {"ipam-ipv4-pool-id": None})
    await eventually(lambda: _equals(pool(c, lb), None))
    await deployed(c)
    assert (await the_lb(c))["LoadBalancerArn"] == lb  # the same load balancer throughout


async def test_the_class_pool_wins(cluster: Cluster) -> None:
    c = cluster
    await c.class_params("params", {"ipamConfiguration": {"ipv4IPAMPoolId": "ipam-pool-0c3"}})
    await c.ingress_class("alb", params="params")
    await c.backend("web")
    await c.ingress("shop", {A + "ipam-ipv4-pool-id": "ipam-pool-0a1"}, backend="web")
    await c.start()
    lb = (await the_lb(c))["LoadBalancerArn"]
    await eventually(lambda: _equals(pool(c, lb), "ipam-pool-0c3"))


async def test_a_customer_owned_pool_is_given_at_creation_and_never_changed(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "customer-owned-ipv4-pool": "ipv4pool-coip-0a1"},
                    backend="web")
    await c.start()
    lb = await the_lb(c)
    assert lb["CustomerOwnedIpv4Pool"] == "ipv4pool-coip-0a1"
    await deployed(c)
    assert await warnings(c) == []
    await annotate(c, {"customer-owned-ipv4-pool": "ipv4pool-coip-0b2"})

    async def said() -> bool:
        return any(reason == "CustomerOwnedIPv4PoolImmutable" and "ipv4pool-coip-0a1" in text
                   and "ipv4pool-coip-0b2" in text and "delete and recreate" in text
                   for reason, text in await warnings(c))
    await eventually(said)
    await c.settled()
    after = await the_lb(c)
    assert (after["LoadBalancerArn"], after["CustomerOwnedIpv4Pool"]) == (
        lb["LoadBalancerArn"], "ipv4pool-coip-0a1")
    assert [r.operation for r in aws_proxy.log if r.operation in (
        "CreateLoadBalancer", "DeleteLoadBalancer")] == ["CreateLoadBalancer"]


async def test_a_bad_pool_deploys_nothing(cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "ipam-ipv4-pool-id": "pool-1"}, backend="web")
    await c.start()
    message = (f'annotation {A}ipam-ipv4-pool-id: "pool-1" is not an IPAM pool ID '
               "(ipam-pool- and letters or digits)")

    async def reported() -> bool:
        return any(message in text for _, text in await warnings(c))
    await eventually(reported)
    await c.settled()
    assert [r.operation for r in aws_proxy.log if r.mutating] == []
