"""WAFv2, WAF Classic and Shield Advanced on an Ingress's ALB, against moto (WAFv2, Shield) and
the fault proxy's WAF Classic Regional: create, change, `none`, the key removed, deletion, a name
that does not resolve, no Shield subscription, a flag turned off."""

from __future__ import annotations

from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION
from controller.model import SHIELD_PROTECTION_NAME
from controller.standins import AWSFaultProxy
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.settings import ingress_settings
from tests.support.tenancy import Tenancy
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


async def web_acl(c: Cluster, name: str) -> str:
    resp = await c.aws.call("wafv2", "CreateWebACL", Name=name, Scope="REGIONAL",
                            DefaultAction={"Allow": {}},
                            VisibilityConfig={"SampledRequestsEnabled": False,
                                              "CloudWatchMetricsEnabled": False,
                                              "MetricName": name})
    return str(resp["Summary"]["ARN"])


async def associated(c: Cluster, lb_arn: str) -> str:
    resp = await c.aws.call("wafv2", "GetWebACLForResource", ResourceArn=lb_arn)
    return str((resp.get("WebACL") or {}).get("ARN") or "")


async def the_lb(c: Cluster) -> str:
    async def one() -> str | None:
        lbs = await c.aws.load_balancers()
        return str(lbs[0]["LoadBalancerArn"]) if len(lbs) == 1 else None
    return str(await eventually(one))


async def deployed(c: Cluster, name: str = "shop") -> None:
    """The Ingress's latest version is deployed (its checkpoint written after it)."""
    async def done() -> bool:
        await c.settled()
        ing = await c.find(INGRESSES, name)
        return ing is not None and CHECKPOINT_ANNOTATION in ing["metadata"]["annotations"]
    await eventually(done)


async def set_annotations(c: Cluster, values: dict[str, str | None]) -> None:
    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: None, **{A + k: v for k, v in values.items()}}}})


async def warnings(c: Cluster, name: str = "shop") -> list[str]:
    return [str(e.get("message")) for e in await c.events(name, of=INGRESSES)
            if e.get("type") == "Warning"]


async def test_a_wafv2_web_acl_follows_the_ingress(cluster: Cluster,
                                                   aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    first, second = await web_acl(c, "first"), await web_acl(c, "second")
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "wafv2-acl-arn": first}, backend="web")
    await c.start()
    lb = await the_lb(c)
    await eventually(lambda: _equals(associated(c, lb), first))

    await set_annotations(c, {"wafv2-acl-arn": second})  # changed: replaced
    await eventually(lambda: _equals(associated(c, lb), second))
    await set_annotations(c, {"wafv2-acl-arn": "none"})  # none: removed
    await eventually(lambda: _equals(associated(c, lb), ""))
    await set_annotations(c, {"wafv2-acl-arn": None, "wafv2-acl-name": "first"})  # by name
    await eventually(lambda: _equals(associated(c, lb), first))

    # The key removed: upstream leaves the association as it is, and so does aiolbc.
    await set_annotations(c, {"wafv2-acl-name": None})
    await deployed(c)
    assert await associated(c, lb) == first
    # A verification of a converged stack reads the association once and changes nothing.
    aws_proxy.clear_log()
    await set_annotations(c, {"wafv2-acl-arn": first})
    await deployed(c)
    assert [r.operation for r in aws_proxy.log if r.service == "wafv2"] == [
        "GetWebACLForResource"]

    # Deleted: the load balancer goes, and AWS drops its association with it; aiolbc makes no
    # WAF call for it.
    aws_proxy.clear_log()
    await c.delete(INGRESSES, "shop")
    await eventually(lambda: _equals(c.aws.load_balancers(), []))
    assert not [r for r in aws_proxy.log if r.service in ("wafv2", "waf-regional", "shield")]


async def test_a_name_that_does_not_resolve_deploys_nothing(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "wafv2-acl-name": "missing"}, backend="web")
    await c.start()
    message = ("no REGIONAL WAFv2 web ACL is named 'missing' in this account and region")
    await eventually(lambda: _has(warnings(c), message))
    assert await c.aws.load_balancers() == []
    # Created later: the retry finds it, and the load balancer comes with its web ACL.
    arn = await web_acl(c, "missing")
    lb = await the_lb(c)
    await eventually(lambda: _equals(associated(c, lb), arn))


async def test_waf_classic_through_the_stand_in(cluster: Cluster,
                                                aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    waf = aws_proxy.waf_regional
    first, second = waf.create_web_acl("first"), waf.create_web_acl("second")
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "waf-acl-id": first}, backend="web")
    await c.start()
    lb = await the_lb(c)
    await eventually(lambda: _now(waf.association(lb) == first))
    await set_annotations(c, {"waf-acl-id": None, "web-acl-id": second})  # the older key
    await eventually(lambda: _now(waf.association(lb) == second))
    await set_annotations(c, {"web-acl-id": "none"})
    await eventually(lambda: _now(waf.association(lb) is None))
    # An ID no web ACL has: AWS's answer, on the Ingress.
    await set_annotations(c, {"web-acl-id": "a1b2c3"})
    await eventually(lambda: _has(warnings(c), "WAFNonexistentItemException"))
    await c.delete(INGRESSES, "shop")
    await eventually(lambda: _equals(c.aws.load_balancers(), []))
    assert waf.association(lb) is None


async def test_shield_protection_needs_a_subscription(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "shield-advanced-protection": "true"}, backend="web")
    await c.start()
    await eventually(lambda: _has(warnings(c), "no active Shield Advanced subscription"))
    assert await c.aws.load_balancers() == []

    await c.aws.call("shield", "CreateSubscription")
    lb = await the_lb(c)

    async def protection() -> dict[str, Any] | None:
        try:
            resp = await c.aws.call("shield", "DescribeProtection", ResourceArn=lb)
        except Exception as exc:
            if "ResourceNotFound" in str(exc):
                return None
            raise
        found: dict[str, Any] = resp["Protection"]
        return found

    created = await eventually(protection)
    assert created["Name"] == SHIELD_PROTECTION_NAME
    await set_annotations(c, {"shield-advanced-protection": "false"})
    await eventually(lambda: _equals(protection(), None))
    # Someone else's protection is left alone.
    await c.aws.call("shield", "CreateProtection", Name="the security team's", ResourceArn=lb)
    await set_annotations(c, {"shield-advanced-protection": "0"})
    await deployed(c)
    assert (await protection() or {}).get("Name") == "the security team's"


async def test_a_flag_turned_off_refuses_what_it_would_ignore(cluster: Cluster) -> None:
    c = cluster
    arn = await web_acl(c, "first")
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", {A + "wafv2-acl-arn": arn}, backend="web")
    await c.start(ingress=ingress_settings(c.seed, enable_wafv2=False))
    await eventually(lambda: _has(warnings(c), "(--enable-wafv2=false)"))
    await c.settled()
    assert await c.aws.load_balancers() == []


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _has(messages: Any, text: str) -> bool:
    return any(text in m for m in await messages)


async def _now(value: bool) -> bool:
    return value


async def test_a_namespace_cannot_strip_another_teams_web_acl(tenancy: Tenancy,
                                                              attacker: Cluster) -> None:
    """The attacker names the team's ALB (and then a load balancer made outside the
    controller) and asks for no web ACL and no protection: nothing of theirs is touched."""
    t = tenancy
    arn = await web_acl(t.admin, "shop-acl")
    await t.aws.call("shield", "CreateSubscription")
    await t.admin.ingress_class("alb")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("front", {A + "load-balancer-name": "shop-front",
                                    A + "wafv2-acl-arn": arn,
                                    A + "shield-advanced-protection": "true"}, backend="web")
    await t.start()
    lb = await the_lb(t.admin)
    await eventually(lambda: _equals(associated(t.admin, lb), arn))
    await t.admin.settled()
    t.proxy.clear_log()

    strip = {A + "wafv2-acl-arn": "none", A + "shield-advanced-protection": "false"}
    await attacker.backend("web", endpoint_ips=["10.0.2.1"])
    await attacker.ingress("steal", {A + "load-balancer-name": "shop-front", **strip},
                           backend="web")
    await attacker.ingress("join", {A + "group.name": "shop", **strip}, backend="web")
    await eventually(lambda: _has(warnings_of(attacker, "steal"), "shop-front"))
    await t.admin.settled()
    assert await associated(t.admin, lb) == arn
    protection = await t.aws.call("shield", "DescribeProtection", ResourceArn=lb)
    assert protection["Protection"]["Name"] == SHIELD_PROTECTION_NAME
    assert [op for op, _ in t.mutations()
            if op in ("AssociateWebACL", "DisassociateWebACL", "DeleteProtection")] == []
    assert await t.admin.stop() == 0


async def warnings_of(c: Cluster, name: str) -> list[str]:
    return [str(e.get("message")) for e in await c.events(name) if e.get("type") == "Warning"]
