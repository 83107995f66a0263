"""An Ingress can forward by ARN only to target groups its namespace may use: not to another
namespace's (made by that namespace's load balancer, or filled by its binding) and not to
another cluster's. The Ingress is left out with a Warning; no load balancer is made for it and
no target group is attached anywhere."""

from __future__ import annotations

import json

from controller.apis import INGRESS_ANNOTATION_PREFIX as ALB
from controller.apis import TARGETGROUPBINDINGS
from runtime.client import KubeClient
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.integration.isolation.tenancy import ATTACKER, VICTIM, Tenancy, http_path
from tests.waiting import eventually


def _forwarding(arn: str) -> tuple[dict[str, str], list[Obj]]:
    action = {"type": "forward", "forwardConfig": {"targetGroups": [{"targetGroupArn": arn}]}}
    paths = [{"path": "/", "pathType": "Prefix", "backend": {
        "service": {"name": "steal", "port": {"name": "use-annotation"}}}}]
    return {ALB + "actions.steal": json.dumps(action)}, paths


async def _refused(t: Tenancy, attacker: KubeClient, name: str, words: str) -> None:
    async def events() -> list[Obj]:
        return [e for e in await t.events(attacker, ATTACKER, name)
                if e["reason"] == "TargetGroupNotOwned" and words in e["message"]]

    await eventually(events, message=f"{name} was not refused: {words}")
    ing = await attacker.get(INGRESSES, name, ATTACKER)
    assert not ing["metadata"].get("finalizers")


async def test_forwarding_to_target_groups_of_others_is_refused(
        tenancy: Tenancy, attacker: KubeClient) -> None:
    t = tenancy
    await t.ingress_class("alb")
    await t.backend(t.client, VICTIM, "web", ["10.0.1.1"])
    await t.ingress(t.client, VICTIM, "front", [http_path("/", "web")])
    theirs = await t.target_group("theirs-tg", tags={"elbv2.k8s.aws/cluster": "staging"})
    await t.start()

    async def shop_target_group() -> str | None:
        listed = (await t.client.list(TARGETGROUPBINDINGS, VICTIM)).get("items") or []
        return str(listed[0]["spec"]["targetGroupARN"]) if listed else None

    shop_tg = await eventually(shop_target_group)
    await eventually(lambda: _one_lb(t))
    await t.settled()
    t.proxy.clear_log()

    annotations, paths = _forwarding(shop_tg)
    await t.ingress(attacker, ATTACKER, "into-shop", paths, annotations=annotations)
    annotations, paths = _forwarding(theirs)
    await t.ingress(attacker, ATTACKER, "into-staging", paths, annotations=annotations)
    await _refused(t, attacker, "into-shop", "namespace shop")
    await _refused(t, attacker, "into-staging", "cluster staging")
    await t.settled()
    assert len(await t.load_balancers()) == 1  # the team's only
    for arn in (shop_tg, theirs):
        (tg,) = (await t.elbv2("DescribeTargetGroups", TargetGroupArns=[arn]))["TargetGroups"]
        assert len(tg.get("LoadBalancerArns") or []) <= 1
    assert t.mutations() == []
    assert await t.stop() == 0


async def _one_lb(t: Tenancy) -> bool:
    return len(await t.load_balancers()) == 1
