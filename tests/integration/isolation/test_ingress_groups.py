"""A namespace user cannot get into another team's Ingress group: not by naming it (with any
group.order), not through the legacy class annotation or a class without the enforced
parameters, and an outsider's conflicting annotations do not block the team's own changes.
The outsider is told why in a Warning; the team's load balancer does not change."""

from __future__ import annotations

from controller.apis import INGRESS_ANNOTATION_PREFIX as ALB
from runtime.client import KubeClient
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.integration.isolation.tenancy import ATTACKER, VICTIM, Tenancy, http_path
from tests.waiting import eventually

GROUP = ALB + "group.name"
ORDER = ALB + "group.order"


async def _team(t: Tenancy, annotations: dict[str, str] | None = None,
                class_name: str = "alb") -> None:
    await t.backend(t.client, VICTIM, "web", ["10.0.1.1"])
    await t.ingress(t.client, VICTIM, "front", [http_path("/shop", "web")],
                    annotations={GROUP: "storefront", **(annotations or {})},
                    class_name=class_name)


async def _deployed(t: Tenancy, paths: int = 1) -> tuple[str, list[tuple[int, list[str],
                                                                          list[str]]]]:
    async def ready() -> tuple[str, list[tuple[int, list[str], list[str]]]] | None:
        lbs = await t.load_balancers()
        if len(lbs) != 1:
            return None
        rules = await t.rules(str(lbs[0]["LoadBalancerArn"]))
        return (str(lbs[0]["LoadBalancerArn"]), rules) if len(rules) == paths else None

    found: tuple[str, list[tuple[int, list[str], list[str]]]] = await eventually(
        ready, message="the team's load balancer is not deployed")
    return found


async def _outsider(t: Tenancy, attacker: KubeClient, name: str, *,
                    annotations: dict[str, str], class_name: str | None = "alb") -> None:
    await t.backend(attacker, ATTACKER, f"{name}-pods", ["10.66.0.1"])
    await t.ingress(attacker, ATTACKER, name, [http_path("/shop", f"{name}-pods")],
                    annotations=annotations, class_name=class_name)


async def _told(t: Tenancy, attacker: KubeClient, name: str, words: str) -> Obj:
    async def events() -> list[Obj]:
        return [e for e in await t.events(attacker, ATTACKER, name)
                if e["reason"] == "ExcludedFromGroup" and words in e["message"]]

    found: list[Obj] = await eventually(events, message=f"{name} was not told: {words}")
    (event,) = found
    ing = await attacker.get(INGRESSES, name, ATTACKER)
    assert not ing["metadata"].get("finalizers")
    assert not (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")
    return event


async def test_an_outsider_cannot_take_over_a_group_by_naming_it(
        tenancy: Tenancy, attacker: KubeClient) -> None:
    t = tenancy
    await t.ingress_class("alb")
    await _team(t)
    await t.start()
    lb_arn, before = await _deployed(t)
    await t.settled()
    t.proxy.clear_log()

    await _outsider(t, attacker, "grab", annotations={GROUP: "storefront", ORDER: "-1000"})
    event = await _told(t, attacker, "grab", "belongs to namespace shop")
    assert "--ingress-group-namespaces=params" in event["message"]
    await t.settled()
    assert await t.rules(lb_arn) == before  # priority 1 for /shop is still the team's
    assert t.mutations() == []

    # The team's own change still deploys.
    await t.client.patch(INGRESSES, "front", {"spec": {"rules": [{"http": {"paths": [
        http_path("/shop", "web"), http_path("/cart", "web")]}}]}}, VICTIM)
    _, after = await _deployed(t, paths=2)
    assert [paths for _, paths, _ in after] == [["/shop", "/shop/*"], ["/cart", "/cart/*"]]
    assert await t.stop() == 0


async def test_class_parameters_cannot_be_bypassed(tenancy: Tenancy,
                                                   attacker: KubeClient) -> None:
    t = tenancy
    await t.class_params("storefront", {"group": {"name": "storefront"},
                                        "namespaceSelector": {"matchLabels": {"team": "shop"}}})
    await t.ingress_class("alb", params="storefront")
    await t.ingress_class("plain")
    await _team(t, class_name="alb")
    await t.start()
    lb_arn, before = await _deployed(t)
    await t.settled()
    t.proxy.clear_log()

    # The legacy annotation names class alb: its parameters (and their namespaceSelector)
    # apply as to spec.ingressClassName.
    await _outsider(t, attacker, "legacy", class_name=None,
                    annotations={"kubernetes.io/ingress.class": "alb"})
    await _told(t, attacker, "legacy", "not selected by the namespaceSelector")
    # Naming the enforced group from a class without those parameters.
    await _outsider(t, attacker, "named", class_name="plain",
                    annotations={GROUP: "storefront", ORDER: "-1000"})
    await _told(t, attacker, "named", "enforced by IngressClassParams storefront")
    await t.settled()
    assert len(await t.load_balancers()) == 1
    assert await t.rules(lb_arn) == before
    assert t.mutations() == []
    assert await t.stop() == 0


async def test_an_outsiders_conflict_does_not_block_the_team(
        tenancy: Tenancy, attacker: KubeClient) -> None:
    """Even where groups may span namespaces (upstream's behaviour, asked for by flag), a
    member whose Exclusive annotation conflicts is left out, not the whole group."""
    t = tenancy
    await t.ingress_class("alb")
    await _team(t, {ALB + "scheme": "internal"})
    await t.start("--ingress-group-namespaces", "any")
    lb_arn, before = await _deployed(t)
    await t.settled()
    t.proxy.clear_log()

    await _outsider(t, attacker, "clash", annotations={GROUP: "storefront",
                                                       ALB + "scheme": "internet-facing"})
    event = await _told(t, attacker, "clash", "conflicts")
    assert "shop/front" in event["message"]
    await t.settled()
    assert await t.rules(lb_arn) == before
    assert t.mutations() == []

    await t.client.patch(INGRESSES, "front", {"spec": {"rules": [{"http": {"paths": [
        http_path("/shop", "web"), http_path("/cart", "web")]}}]}}, VICTIM)
    await _deployed(t, paths=2)
    (lb,) = await t.load_balancers()
    assert lb["Scheme"] == "internal"
    assert await t.stop() == 0
