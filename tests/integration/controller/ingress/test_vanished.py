"""An Ingress that vanishes without its finalizer being released — what a relist after an API
server restore shows — takes nothing with it: its group is held (its rules, target groups and
bindings stay), a Warning names it and `aiolbc_ingress_group_unknown_members` counts it, until
an Ingress of that name exists again. A group whose members all vanished keeps its load
balancer, also after a restart has forgotten them and an outsider writes the group's finalizer
on an Ingress of its own. The whole controller runs as its ServiceAccount with the shipped RBAC."""

from __future__ import annotations

from controller.ingress.vanished import UNKNOWN_MEMBERS_METRIC
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress, ingress_path
from tests.support.tenancy import RuleRow, Tenancy, warnings
from tests.support.waiting import eventually

GROUP = "group.name"
FINALIZER = "group.ingress.k8s.aws/storefront"


async def _vanish(t: Tenancy, name: str) -> None:
    """Make an Ingress disappear the way a restore does: while the controller's Ingress watch
    is down, the object goes (finalizers and all) and the history is compacted, so the
    controller's relist finds it missing and knows only its last state."""
    t.server.faults.fail_next(10_000, verb="watch", resource="ingresses", status=429)
    await t.server.close_watches()
    await t.admin.patch(INGRESSES, name, {"metadata": {"finalizers": None}})
    await t.admin.delete(INGRESSES, name)
    t.server.compact()
    t.server.faults.clear()


def _unknown(t: Tenancy, group: str) -> float | None:
    return t.admin.registry.get_sample_value(UNKNOWN_MEMBERS_METRIC, {"group": group})


async def _warned(t: Tenancy, name: str) -> list[Obj]:
    return warnings(await t.admin.events(name), "UnknownGroupMember")


async def _bindings(t: Tenancy) -> set[str]:
    return {str(b["metadata"]["name"]) for b in await t.admin.bindings()}


async def test_a_vanished_member_keeps_its_rules_until_it_is_back(tenancy: Tenancy) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    for name in ("front", "cart"):
        await t.admin.backend(name, endpoint_ips=["10.0.1.1"])
        await t.admin.ingress(name, {GROUP: "storefront"}, paths=[ingress_path(f"/{name}", name)])
    await t.start()

    async def deployed() -> tuple[str, list[RuleRow]] | None:
        lbs = await t.aws.load_balancers()
        if len(lbs) != 1:
            return None
        rules = await t.rules(str(lbs[0]["LoadBalancerArn"]))
        return (str(lbs[0]["LoadBalancerArn"]), rules) if len(rules) == 2 else None

    lb_arn, before = await eventually(deployed)
    await t.admin.settled()
    bindings = await _bindings(t)
    assert len(bindings) == 2
    t.proxy.clear_log()

    await _vanish(t, "cart")
    assert await eventually(lambda: _warned(t, "front"), message="the group was not told")
    assert await eventually(lambda: _warned(t, "cart"), message="cart was not told")
    assert _unknown(t, "storefront") == 1.0
    # The team changes its other member meanwhile: the group stays as it was.
    await t.admin.annotate(INGRESSES, "front", {
        "alb.ingress.kubernetes.io/scheme": "internet-facing"})
    await t.admin.settled()
    assert await t.rules(lb_arn) == before
    assert await _bindings(t) == bindings
    assert t.mutations() == []

    # Re-created (as GitOps would): the group deploys again, cart's rules adopted.
    await t.admin.ingress("cart", {GROUP: "storefront"}, paths=[ingress_path("/cart", "cart")])
    await eventually(lambda: _scheme_is(t, "internet-facing"))
    assert _unknown(t, "storefront") is None
    lbs = await t.aws.load_balancers()
    assert len(await t.rules(str(lbs[0]["LoadBalancerArn"]))) == 2
    assert await t.admin.stop() == 0


async def test_a_group_whose_members_all_vanished_keeps_its_load_balancer(
        tenancy: Tenancy) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("solo", paths=[ingress_path("/", "web")])
    await t.start()
    await eventually(lambda: _lb_count(t, 1))
    await t.admin.settled()
    t.proxy.clear_log()

    await _vanish(t, "solo")
    assert await eventually(lambda: _warned(t, "solo"), message="no Warning")
    assert _unknown(t, f"{t.admin.namespace}/solo") == 1.0
    await t.admin.settled()
    assert await _lb_count(t, 1)
    assert len(await _bindings(t)) == 1
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_a_finalizer_written_by_hand_deletes_no_group(tenancy: Tenancy,
                                                           attacker: Cluster) -> None:
    """After a restart the record of a vanished member is gone, and the group is left with no
    member at all. An outsider writing the group's finalizer on an Ingress of its own does not
    make one that leaves the group: its finalizer is released, the load balancer stays."""
    t = tenancy
    await t.admin.ingress_class("alb")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("front", {GROUP: "storefront"}, paths=[ingress_path("/", "web")])
    await t.start()
    await eventually(lambda: _lb_count(t, 1))
    await t.admin.settled()
    await _vanish(t, "front")
    await eventually(lambda: _warned(t, "front"), message="no Warning")
    await t.admin.kill()
    await t.start()
    await t.admin.settled()
    assert _unknown(t, "storefront") is None  # forgotten
    t.proxy.clear_log()

    await attacker.backend("pods", endpoint_ips=["10.66.0.1"])
    await attacker.create(INGRESSES, ingress("stray", paths=[ingress_path("/", "pods")],
                                             class_name=None, finalizers=[FINALIZER]))

    async def released() -> bool:
        stray = await attacker.find(INGRESSES, "stray")
        return stray is not None and not stray["metadata"].get("finalizers")

    await eventually(released, message="the written finalizer was not released")
    await t.admin.settled()
    assert await _lb_count(t, 1)
    assert len(await _bindings(t)) == 1
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def _lb_count(t: Tenancy, n: int) -> bool:
    return len(await t.aws.load_balancers()) == n


async def _scheme_is(t: Tenancy, scheme: str) -> bool:
    lbs = await t.aws.load_balancers()
    return len(lbs) == 1 and lbs[0]["Scheme"] == scheme
