"""Ingress groups: one ALB for several Ingresses, rule order, members leaving, conflicts."""

from __future__ import annotations

from typing import Any

from runtime.resources import EVENTS, INGRESSES
from tests.support.aws import rule_paths
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.waiting import eventually

GROUP = "alb.ingress.kubernetes.io/group.name"
ORDER = "alb.ingress.kubernetes.io/group.order"


async def _rules_of_only_lb(c: Cluster) -> list[list[str]] | None:
    lbs = await c.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listeners = await c.aws.listeners(str(lbs[0]["LoadBalancerArn"]))
    if 80 not in listeners:
        return None
    return [rule_paths(r) for r in await c.aws.rules(listeners[80]["ListenerArn"])]


async def test_group_of_three(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    for name in ("a", "b", "c"):
        await c.backend(name)
    await c.ingress("first", paths=[ingress_path("/a", "a")],
                    annotations={GROUP: "shared", ORDER: "10"})
    await c.ingress("second", paths=[ingress_path("/b", "b")],
                    annotations={GROUP: "shared", ORDER: "-5"})
    await c.ingress("third", paths=[ingress_path("/c", "c")], annotations={GROUP: "shared"})
    await c.start()

    async def ordered(expected: list[list[str]]) -> bool:
        return await _rules_of_only_lb(c) == expected

    # group.order -5 (second), 0 (third), 10 (first)
    await eventually(lambda: ordered([["/b", "/b/*"], ["/c", "/c/*"], ["/a", "/a/*"]]))
    lb_arn = (await c.aws.load_balancers())[0]["LoadBalancerArn"]
    dns = (await c.aws.load_balancers())[0]["DNSName"]

    async def statuses_written() -> bool:
        for name in ("first", "second", "third"):
            ing = await c.find(INGRESSES, name)
            if ing is None or ((ing.get("status") or {}).get("loadBalancer") or {}).get(
                    "ingress") != [{"hostname": dns}]:
                return False
        return True

    await eventually(statuses_written)
    for name in ("first", "second", "third"):
        ing = await c.find(INGRESSES, name)
        assert ing is not None
        assert ing["metadata"]["finalizers"] == ["group.ingress.k8s.aws/shared"]
    bindings = await c.bindings()
    assert len(bindings) == 3
    assert {b["metadata"]["labels"]["ingress.k8s.aws/stack"] for b in bindings} == {"shared"}

    # A member leaves the group (annotation removed): its rules go, the ALB stays, and its
    # group finalizer goes once they are gone; it gets its own ALB.
    await c.patch(INGRESSES, "third", {"metadata": {"annotations": {GROUP: None}}})
    await eventually(lambda: _group_rules_are(c, str(lb_arn), [["/b", "/b/*"], ["/a", "/a/*"]]))

    async def third_moved() -> bool:
        ing = await c.find(INGRESSES, "third")
        return ing is not None and ing["metadata"].get("finalizers") == [
            "ingress.k8s.aws/resources"]

    await eventually(third_moved)
    await eventually(lambda: _count_lbs(c, 2))

    # Deleting members: the ALB stays until the last one goes.
    await c.delete(INGRESSES, "first")
    await eventually(lambda: _group_rules_are(c, str(lb_arn), [["/b", "/b/*"]]))
    assert any(lb["LoadBalancerArn"] == lb_arn for lb in await c.aws.load_balancers())
    await c.delete(INGRESSES, "second")

    async def shared_gone() -> bool:
        lbs = await c.aws.load_balancers()
        return (all(lb["LoadBalancerArn"] != lb_arn for lb in lbs)
                and await c.find(INGRESSES, "second") is None)

    await eventually(shared_gone, timeout=20)
    names = {b["metadata"]["name"] for b in await c.bindings()}
    assert len(names) == 1  # the third Ingress's own binding
    assert await c.stop() == 0


async def _group_rules_are(c: Cluster, lb_arn: str, expected: list[list[str]]) -> bool:
    listeners = await c.aws.listeners(lb_arn)
    return [rule_paths(r) for r in await c.aws.rules(listeners[80]["ListenerArn"])] == expected


async def _count_lbs(c: Cluster, n: int) -> bool:
    return len(await c.aws.load_balancers()) == n


async def _warnings(c: Cluster, name: str) -> list[dict[str, Any]]:
    events = (await c.client.list(EVENTS, c.namespace)).get("items") or []
    return [e for e in events if e.get("type") == "Warning"
            and e.get("involvedObject", {}).get("name") == name]


async def test_conflicting_exclusive_annotations(cluster: Cluster) -> None:
    """The newer member whose Exclusive annotation conflicts is left out of the group with
    its own Warning (naming both members); the rest of the group deploys."""
    c = cluster
    await c.ingress_class("alb")
    await c.backend("a")
    await c.ingress("one", paths=[ingress_path("/a", "a")],
                    annotations={GROUP: "g", "alb.ingress.kubernetes.io/scheme": "internal"})
    await c.ingress("two", paths=[ingress_path("/b", "a")],
                    annotations={GROUP: "g",
                                 "alb.ingress.kubernetes.io/scheme": "internet-facing"})
    await c.start()

    async def warned() -> list[dict[str, Any]] | None:
        return [e for e in await _warnings(c, "two") if e["reason"] == "ExcludedFromGroup"]

    events = await eventually(warned)
    message = events[0]["message"]
    assert "scheme" in message
    assert "conflicts" in message
    assert "default/one" in message
    assert "default/two" in message
    await eventually(lambda: _count_lbs(c, 1))
    await c.settled()
    assert not await _warnings(c, "one")
    (lb,) = await c.aws.load_balancers()
    assert lb["Scheme"] == "internal"
    assert await _rules_of_only_lb(c) == [["/a", "/a/*"]]
    two = await c.find(INGRESSES, "two")
    assert two is not None
    assert not two["metadata"].get("finalizers")

    # Fixing the member lets it join.
    await c.patch(INGRESSES, "two", {"metadata": {"annotations": {
        "alb.ingress.kubernetes.io/scheme": "internal"}}})
    await eventually(lambda: _group_rules_are(c, str(lb["LoadBalancerArn"]),
                                              [["/a", "/a/*"], ["/b", "/b/*"]]))
    assert await c.stop() == 0
