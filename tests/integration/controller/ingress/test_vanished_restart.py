"""A named group records its members on each of them after every deploy, so a controller that
was down while a member vanished still holds the group when it starts: the vanished member's
rules and target groups stay until an Ingress of that name exists again. A member that left by
its finalizer while the controller was down holds nothing."""

from __future__ import annotations

import json

from controller.apis import GROUP_MEMBERS_ANNOTATION
from controller.ingress.vanished import UNKNOWN_MEMBERS_METRIC
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.objects import ingress_path
from tests.support.tenancy import RuleRow, Tenancy, warnings
from tests.support.waiting import eventually

GROUP = "group.name"


def _unknown(t: Tenancy) -> float | None:
    return t.admin.registry.get_sample_value(UNKNOWN_MEMBERS_METRIC, {"group": "storefront"})


async def _warned(t: Tenancy, name: str) -> list[Obj]:
    return warnings(await t.admin.events(name), "UnknownGroupMember")


async def _recorded(t: Tenancy, name: str) -> object:
    found = await t.admin.find(INGRESSES, name)
    assert found is not None
    raw = (found["metadata"].get("annotations") or {}).get(GROUP_MEMBERS_ANNOTATION)
    return json.loads(raw) if isinstance(raw, str) else None


async def _deployed(t: Tenancy, rules: int) -> tuple[str, list[RuleRow]] | None:
    lbs = await t.aws.load_balancers()
    if len(lbs) != 1:
        return None
    found = await t.rules(str(lbs[0]["LoadBalancerArn"]))
    return (str(lbs[0]["LoadBalancerArn"]), found) if len(found) == rules else None


async def _target_groups(t: Tenancy) -> set[str]:
    return {str(tg["TargetGroupArn"]) for tg in await t.aws.target_groups()}


async def _two_members(t: Tenancy) -> tuple[str, list[RuleRow]]:
    await t.admin.ingress_class("alb")
    for name in ("front", "cart"):
        await t.admin.backend(name, endpoint_ips=["10.0.1.1"])
        await t.admin.ingress(name, {GROUP: "storefront"}, paths=[ingress_path(f"/{name}", name)])
    await t.start()
    deployed: tuple[str, list[RuleRow]] = await eventually(lambda: _deployed(t, 2))
    await t.admin.settled()
    ns = t.admin.namespace
    wanted = {"group": "storefront", "members": [f"{ns}/cart", f"{ns}/front"]}
    for name in ("front", "cart"):
        assert await _recorded(t, name) == wanted
    assert await t.admin.stop() == 0
    return deployed


async def test_a_member_that_vanished_while_the_controller_was_down_holds_its_group(
        tenancy: Tenancy) -> None:
    t = tenancy
    lb_arn, before = await _two_members(t)
    target_groups = await _target_groups(t)
    assert len(target_groups) == 2
    # Gone without a finalizer-gated deletion: nobody released the finalizer but us.
    await t.admin.patch(INGRESSES, "cart", {"metadata": {"finalizers": None}})
    await t.admin.delete(INGRESSES, "cart")
    assert await t.admin.find(INGRESSES, "cart") is None
    t.proxy.clear_log()

    await t.start()  # a new process: it never saw cart go
    warned = await eventually(lambda: _warned(t, "front"), message="the group was not told")
    assert f"{t.admin.namespace}/cart" in str(warned[0].get("message"))
    assert await eventually(lambda: _warned(t, "cart"), message="cart was not named")
    await t.admin.settled()
    assert _unknown(t) == 1.0
    assert await t.rules(lb_arn) == before
    assert await _target_groups(t) == target_groups
    assert t.mutations() == []

    # Re-created: the hold clears and the group deploys with it again.
    await t.admin.ingress("cart", {GROUP: "storefront"}, paths=[ingress_path("/cart", "cart")])

    async def rejoined() -> bool:
        found = await t.admin.find(INGRESSES, "cart")
        return found is not None and bool(found.get("status", {}).get("loadBalancer"))

    await eventually(rejoined, message="cart did not rejoin")
    await t.admin.settled()
    assert _unknown(t) is None
    assert len(await t.rules(lb_arn)) == 2

    # Deleted from there, its resources go with its finalizer.
    await t.admin.delete(INGRESSES, "cart")
    await eventually(lambda: _deployed(t, 1), message="cart's rule stayed")

    async def gone() -> bool:
        return await t.admin.find(INGRESSES, "cart") is None

    await eventually(gone, message="cart's finalizer was not released")
    await eventually(lambda: _tg_count(t, 1), message="cart's target group stayed")
    assert await _recorded(t, "front") == {
        "group": "storefront", "members": [f"{t.admin.namespace}/front"]}
    assert await t.admin.stop() == 0


async def test_a_member_deleted_while_the_controller_was_down_leaves_by_its_finalizer(
        tenancy: Tenancy) -> None:
    t = tenancy
    await _two_members(t)
    await t.admin.delete(INGRESSES, "cart")  # its finalizer keeps it, being deleted

    await t.start()

    async def gone() -> bool:
        return await t.admin.find(INGRESSES, "cart") is None

    await eventually(gone, message="cart's finalizer was not released")
    await eventually(lambda: _deployed(t, 1), message="cart's rule stayed")
    await eventually(lambda: _tg_count(t, 1), message="cart's target group stayed")
    await t.admin.settled()
    assert _unknown(t) is None
    assert await _warned(t, "front") == []
    assert await _recorded(t, "front") == {
        "group": "storefront", "members": [f"{t.admin.namespace}/front"]}

    # And the next process finds nothing to hold either.
    assert await t.admin.stop() == 0
    t.proxy.clear_log()
    await t.start()
    await t.admin.settled()
    assert _unknown(t) is None
    assert await _warned(t, "front") == []
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def _tg_count(t: Tenancy, n: int) -> bool:
    return len(await _target_groups(t)) == n
