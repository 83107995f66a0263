"""Routing as upstream: a forward to a target group by name (its ARN looked up, the same
ownership checks as by ARN), a name that names nothing refused with one Warning."""

from __future__ import annotations

import json

from controller.apis import TARGETGROUPBINDINGS
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import hostname, ingress_path
from tests.support.tenancy import Tenancy, warnings
from tests.support.waiting import eventually


def _by_name(name: str) -> dict[str, str]:
    # upstream docs: {"type":"forward","targetGroupName": "name-of-your-target-group"}
    return {"actions.by-name": json.dumps({"type": "forward", "targetGroupName": name})}


async def test_forward_by_target_group_name(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    arn = await c.target_group("mine-tg")
    await c.ingress("named", _by_name("mine-tg"),
                    paths=[ingress_path("/", "by-name", "use-annotation")])
    await c.ingress("nothing", _by_name("no-such-tg"),
                    paths=[ingress_path("/", "by-name", "use-annotation")])
    await c.start()

    async def deployed() -> Obj | None:
        ing = await c.find(INGRESSES, "named")
        return ing if ing is not None and hostname(ing) else None

    ing = await eventually(deployed)
    lb = await c.aws.load_balancer_at(hostname(ing))
    assert lb is not None
    listeners = await c.aws.listeners(str(lb["LoadBalancerArn"]))
    (rule,) = await c.aws.rules(listeners[80]["ListenerArn"])
    (forward,) = rule["Actions"]
    assert [g["TargetGroupArn"] for g in forward["ForwardConfig"]["TargetGroups"]] == [arn]

    async def refused() -> list[Obj]:
        return [e for e in warnings(await c.events("nothing"))
                if "target group named 'no-such-tg': not found" in e["message"]]

    await eventually(refused, message="a name naming nothing was not reported")
    assert not (await c.get(INGRESSES, "nothing"))["metadata"].get("finalizers")
    assert len(await c.aws.load_balancers()) == 1
    await c.stop()


async def test_a_missing_backend_answers_503_until_it_exists(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", paths=[ingress_path("/later", "later"), ingress_path("/", "web")])
    await c.start()

    async def actions() -> list[str] | None:
        ing = await c.find(INGRESSES, "shop")
        if ing is None or not hostname(ing):
            return None
        lb = await c.aws.load_balancer_at(hostname(ing))
        assert lb is not None
        listeners = await c.aws.listeners(str(lb["LoadBalancerArn"]))
        rules = await c.aws.rules(listeners[80]["ListenerArn"])
        return [r["Actions"][-1]["Type"] for r in rules]

    assert await eventually(actions) == ["fixed-response", "forward"]
    (rule, _) = await _rules(c)
    assert rule["Actions"][-1]["FixedResponseConfig"] == {
        "StatusCode": "503", "ContentType": "text/plain",
        "MessageBody": "Backend service does not exist"}

    async def told() -> list[Obj]:
        return [e for e in warnings(await c.events("shop"), "BackendNotFound")
                if "backend Service default/later not found" in e["message"]]

    await eventually(told, message="the missing Service was not named in a Warning")
    await c.backend("later")

    async def forwarding() -> bool:
        return await actions() == ["forward", "forward"]

    await eventually(forwarding, message="the rule did not forward once the Service existed")
    await c.stop()


async def _rules(c: Cluster) -> list[Obj]:
    ing = await c.get(INGRESSES, "shop")
    lb = await c.aws.load_balancer_at(hostname(ing))
    assert lb is not None
    listeners = await c.aws.listeners(str(lb["LoadBalancerArn"]))
    return await c.aws.rules(listeners[80]["ListenerArn"])


async def test_a_forward_by_name_to_another_namespaces_target_group_is_refused(
        tenancy: Tenancy, attacker: Cluster) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("front", paths=[ingress_path("/", "web")])
    await t.start()

    async def shop_target_group() -> str | None:
        listed = (await t.admin.client.list(TARGETGROUPBINDINGS, t.admin.namespace)
                  ).get("items") or []
        return str(listed[0]["metadata"]["name"]) if listed else None

    # The managed binding has its target group's name.
    name = await eventually(shop_target_group)
    await t.admin.settled()
    t.proxy.clear_log()
    await attacker.ingress("into-shop", _by_name(name),
                           paths=[ingress_path("/", "by-name", "use-annotation")])

    async def refused() -> list[Obj]:
        return [e for e in warnings(await attacker.events("into-shop"), "TargetGroupNotOwned")
                if "namespace shop" in e["message"] and repr(name) in e["message"]]

    await eventually(refused, message="a forward by name into shop was not refused")
    assert not (await attacker.get(INGRESSES, "into-shop"))["metadata"].get("finalizers")
    await t.admin.settled()
    assert len(await t.aws.load_balancers()) == 1
    assert t.mutations() == []
    assert await t.admin.stop() == 0
