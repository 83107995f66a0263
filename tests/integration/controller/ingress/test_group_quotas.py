"""An Ingress group planned against the ALB quotas (rules per listener here), with the whole
controller set up from `aiolbc run` flags.

Before: a group past a quota failed as a whole (every member told, nothing of the group
converging), or, upstream, failed halfway through a deploy (`TooManyRules`). Now the members
are admitted in the group's order and the one that would take the group past the quota is left
out alone, with a Warning naming the quota, its value and the member; the rest of the group
deploys and keeps converging, and the group can still be deleted."""

from __future__ import annotations

from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import hostname, ingress_path
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


def _member(order: int) -> dict[str, str]:
    return {A + "group.name": "shop", A + "group.order": str(order), A + "target-type": "ip"}


async def _paths(cluster: Cluster) -> list[str] | None:
    """The path patterns of listener 80's rules, in priority order."""
    lbs = await cluster.aws.load_balancers()
    if len(lbs) != 1:
        return None
    listeners = await cluster.aws.listeners(lbs[0]["LoadBalancerArn"])
    if 80 not in listeners:
        return None
    return [v for rule in await cluster.aws.rules(listeners[80]["ListenerArn"])
            for c in rule["Conditions"] if c["Field"] == "path-pattern"
            for v in c.get("Values") or c["PathPatternConfig"]["Values"]]


async def test_the_member_past_a_quota_is_left_out_alone_and_the_group_can_be_deleted(
        cluster: Cluster) -> None:
    await cluster.ingress_class("alb")
    await cluster.backend("web")
    # Quota 3 rules: a (order 1) brings 2, b (order 2) 2 more: past it; c (order 3) 1: fits.
    await cluster.ingress("c", _member(3), paths=[ingress_path("/c", "web")])
    await cluster.ingress("b", _member(2), paths=[ingress_path("/b1", "web"),
                                                  ingress_path("/b2", "web")])
    await cluster.ingress("a", _member(1), paths=[ingress_path("/a1", "web"),
                                                  ingress_path("/a2", "web")])
    await cluster.start_app("--default-target-type", "ip", "--max-rules-per-listener", "3")

    async def deployed() -> list[str] | None:
        paths = await _paths(cluster)
        return paths if paths and len(paths) == 6 else None

    paths = await eventually(deployed, timeout=60, message="the group did not deploy")
    # a's and c's rules, in the group's order; b's none.
    assert paths == ["/a1", "/a1/*", "/a2", "/a2/*", "/c", "/c/*"]

    async def told() -> Obj | None:
        found = [e for e in warnings(await cluster.events("b"), "ExcludedFromGroup")
                 if "quota" in e["message"]]
        return found[0] if found else None

    event: Obj = await eventually(told, timeout=30, message="b was not told")
    assert event["message"].startswith(
        "not part of group shop: Ingress default/b would take the group past an AWS quota: "
        "load balancer ")
    assert event["message"].endswith(
        "listener 80: 4 rules besides the default one, more than the quota of 3 "
        "(--max-rules-per-listener)")
    for name in ("a", "c"):
        assert hostname(await cluster.get(INGRESSES, name))
        assert not [e for e in warnings(await cluster.events(name)) if "quota" in e["message"]]
    refused = await cluster.get(INGRESSES, "b")
    assert hostname(refused) is None
    assert not refused["metadata"].get("finalizers")

    # The rest keeps converging: c's path changes.
    # A patch: the controller writes c (status, checkpoint) meanwhile, so an update of what was
    # read could meet a newer resourceVersion.
    c = await cluster.get(INGRESSES, "c")
    rules = c["spec"]["rules"]
    rules[0]["http"]["paths"] = [ingress_path("/c-new", "web")]
    await cluster.patch(INGRESSES, "c", {"spec": {"rules": rules}})

    async def moved() -> bool:
        return await _paths(cluster) == ["/a1", "/a1/*", "/a2", "/a2/*", "/c-new", "/c-new/*"]

    await eventually(moved, timeout=60, message="c's change did not converge")

    # The group that once exceeded a quota is deleted whole.
    for name in ("a", "b", "c"):
        await cluster.delete(INGRESSES, name)

    async def gone() -> bool:
        return (not await cluster.aws.load_balancers()
                and not await cluster.aws.stack_security_groups("shop")
                and all([await cluster.gone(INGRESSES, n) for n in ("a", "b", "c")]))

    await eventually(gone, timeout=60, message="the group was not deleted")
    assert await cluster.stop() == 0
