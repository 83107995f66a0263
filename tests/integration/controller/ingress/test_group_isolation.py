"""A namespace user cannot get into another team's Ingress group: not by naming it (with any
group.order), not through the legacy class annotation or a class without the enforced
parameters, nor by writing the group's finalizer on its own Ingress, and an outsider's
conflicting annotations do not block the team's own changes.
The outsider is told why in a Warning; the team's load balancer does not change. The whole
controller runs as its ServiceAccount with the shipped RBAC."""

from __future__ import annotations

from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress, ingress_path
from tests.support.tenancy import RuleRow, Tenancy, warnings
from tests.support.waiting import eventually

GROUP = "group.name"
ORDER = "group.order"
FINALIZER = "group.ingress.k8s.aws/storefront"


async def _team(t: Tenancy, annotations: dict[str, str] | None = None,
                class_name: str = "alb") -> None:
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("front", {GROUP: "storefront", **(annotations or {})},
                          paths=[ingress_path("/shop", "web")], class_name=class_name)


async def _deployed(t: Tenancy, paths: int = 1) -> tuple[str, list[RuleRow]]:
    async def ready() -> tuple[str, list[RuleRow]] | None:
        lbs = await t.aws.load_balancers()
        if len(lbs) != 1:
            return None
        rules = await t.rules(str(lbs[0]["LoadBalancerArn"]))
        return (str(lbs[0]["LoadBalancerArn"]), rules) if len(rules) == paths else None

    found: tuple[str, list[RuleRow]] = await eventually(
        ready, message="the team's load balancer is not deployed")
    return found


async def _outsider(attacker: Cluster, name: str, *, annotations: dict[str, str],
                    class_name: str | None = "alb") -> None:
    await attacker.backend(f"{name}-pods", endpoint_ips=["10.66.0.1"])
    await attacker.ingress(name, annotations, paths=[ingress_path("/shop", f"{name}-pods")],
                           class_name=class_name)


async def _told(attacker: Cluster, name: str, words: str) -> Obj:
    async def events() -> list[Obj]:
        return [e for e in warnings(await attacker.events(name), "ExcludedFromGroup")
                if words in e["message"]]

    found: list[Obj] = await eventually(events, message=f"{name} was not told: {words}")
    (event,) = found
    ing = await attacker.get(INGRESSES, name)
    assert not ing["metadata"].get("finalizers")
    assert not (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")
    return event


async def _add_cart(t: Tenancy) -> None:
    await t.admin.patch(INGRESSES, "front", {"spec": {"rules": [{"http": {"paths": [
        ingress_path("/shop", "web"), ingress_path("/cart", "web")]}}]}})


async def test_an_outsider_cannot_take_over_a_group_by_naming_it(
        tenancy: Tenancy, attacker: Cluster) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    await _team(t)
    await t.start()
    lb_arn, before = await _deployed(t)
    await t.admin.settled()
    t.proxy.clear_log()

    await _outsider(attacker, "grab", annotations={GROUP: "storefront", ORDER: "-1000"})
    event = await _told(attacker, "grab", "belongs to namespace shop")
    assert "--ingress-group-namespaces=params" in event["message"]
    await t.admin.settled()
    assert await t.rules(lb_arn) == before  # priority 1 for /shop is still the team's
    assert t.mutations() == []

    # The team's own change still deploys.
    await _add_cart(t)
    _, after = await _deployed(t, paths=2)
    assert [paths for _, paths, _ in after] == [["/shop", "/shop/*"], ["/cart", "/cart/*"]]
    assert await t.admin.stop() == 0


async def test_class_parameters_cannot_be_bypassed(tenancy: Tenancy,
                                                   attacker: Cluster) -> None:
    t = tenancy
    await t.admin.class_params("storefront", {
        "group": {"name": "storefront"},
        "namespaceSelector": {"matchLabels": {"team": "shop"}}})
    await t.admin.ingress_class("alb", params="storefront")
    await t.admin.ingress_class("plain")
    await _team(t, class_name="alb")
    await t.start()
    lb_arn, before = await _deployed(t)
    await t.admin.settled()
    t.proxy.clear_log()

    # The legacy annotation names class alb: its parameters (and their namespaceSelector)
    # apply as to spec.ingressClassName.
    await _outsider(attacker, "legacy", class_name=None,
                    annotations={"kubernetes.io/ingress.class": "alb"})
    await _told(attacker, "legacy", "not selected by the namespaceSelector")
    # Naming the enforced group from a class without those parameters.
    await _outsider(attacker, "named", class_name="plain",
                    annotations={GROUP: "storefront", ORDER: "-1000"})
    await _told(attacker, "named", "enforced by IngressClassParams storefront")
    await t.admin.settled()
    assert len(await t.aws.load_balancers()) == 1
    assert await t.rules(lb_arn) == before
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def test_an_outsiders_conflict_does_not_block_the_team(
        tenancy: Tenancy, attacker: Cluster) -> None:
    """Even where groups may span namespaces (upstream's behaviour, asked for by flag), a
    member whose Exclusive annotation conflicts is left out, not the whole group."""
    t = tenancy
    await t.admin.ingress_class("alb")
    await _team(t, {"scheme": "internal"})
    await t.start("--ingress-group-namespaces", "any")
    lb_arn, before = await _deployed(t)
    await t.admin.settled()
    t.proxy.clear_log()

    await _outsider(attacker, "clash", annotations={GROUP: "storefront",
                                                    "scheme": "internet-facing"})
    event = await _told(attacker, "clash", "conflicts")
    assert "shop/front" in event["message"]
    await t.admin.settled()
    assert await t.rules(lb_arn) == before
    assert t.mutations() == []

    await _add_cart(t)
    await _deployed(t, paths=2)
    (lb,) = await t.aws.load_balancers()
    assert lb["Scheme"] == "internal"
    assert await t.admin.stop() == 0


async def test_a_finalizer_written_by_hand_buys_no_place_in_the_group(
        tenancy: Tenancy, attacker: Cluster) -> None:
    """The group's finalizer on an outsider's Ingress does not make it a member the group was
    deployed with: it is left out like any outsider, and does not hold the team's changes."""
    t = tenancy
    await t.admin.ingress_class("alb")
    await _team(t)
    await t.start()
    lb_arn, before = await _deployed(t)
    await t.admin.settled()
    t.proxy.clear_log()

    await attacker.backend("grab-pods", endpoint_ips=["10.66.0.1"])
    await attacker.create(INGRESSES, ingress(
        "grab", {GROUP: "storefront", ORDER: "-1000"},
        paths=[ingress_path("/shop", "grab-pods")], finalizers=[FINALIZER]))

    async def told() -> list[Obj]:
        return [e for e in warnings(await attacker.events("grab"), "ExcludedFromGroup")
                if "belongs to namespace shop" in e["message"]]

    await eventually(told, message="the outsider was not told")
    await t.admin.settled()
    assert await t.rules(lb_arn) == before
    assert t.mutations() == []
    await _add_cart(t)  # not held
    await _deployed(t, paths=2)
    # The proxy records a call once moto answered it, so the rule can be seen before its
    # CreateRule is recorded: the log is cleared once that reconcile is over.
    await t.admin.settled()

    # Deleted, it is no member the group leaves: its finalizer is released, nothing else.
    t.proxy.clear_log()
    await attacker.delete(INGRESSES, "grab")
    await eventually(lambda: attacker.gone(INGRESSES, "grab"), message="grab is stuck")
    await t.admin.settled()
    assert len(await t.rules(lb_arn)) == 2
    assert t.mutations() == []
    assert await t.admin.stop() == 0
