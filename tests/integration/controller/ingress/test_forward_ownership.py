"""An Ingress can forward by ARN only to target groups its namespace may use: not to another
namespace's (made by that namespace's load balancer, or filled by its binding), not to
another cluster's, and not to one outside the cluster's VPC. The Ingress is left out with a
Warning; no load balancer is made for it and no target group is attached anywhere. The whole
controller runs as its ServiceAccount with the shipped RBAC."""

from __future__ import annotations

import json

from controller.apis import TARGETGROUPBINDINGS
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.tenancy import Tenancy, warnings
from tests.support.waiting import eventually


def _forwarding(arn: str) -> tuple[dict[str, str], list[Obj]]:
    action = {"type": "forward", "forwardConfig": {"targetGroups": [{"targetGroupArn": arn}]}}
    return {"actions.steal": json.dumps(action)}, [ingress_path("/", "steal", "use-annotation")]


async def _refused(attacker: Cluster, name: str, words: str) -> None:
    async def events() -> list[Obj]:
        return [e for e in warnings(await attacker.events(name), "TargetGroupNotOwned")
                if words in e["message"]]

    await eventually(events, message=f"{name} was not refused: {words}")
    ing = await attacker.get(INGRESSES, name)
    assert not ing["metadata"].get("finalizers")


async def test_forwarding_to_target_groups_of_others_is_refused(
        tenancy: Tenancy, attacker: Cluster) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    await t.admin.backend("web", endpoint_ips=["10.0.1.1"])
    await t.admin.ingress("front", paths=[ingress_path("/", "web")])
    theirs = await t.admin.target_group("theirs-tg", tags={"elbv2.k8s.aws/cluster": "staging"})
    other_vpc = (await t.aws.call("ec2", "CreateVpc", CidrBlock="10.9.0.0/16"))["Vpc"]["VpcId"]
    elsewhere = await t.admin.target_group("elsewhere-tg", vpc_id=other_vpc)
    await t.start()

    async def shop_target_group() -> str | None:
        listed = (await t.admin.client.list(TARGETGROUPBINDINGS, t.admin.namespace)
                  ).get("items") or []
        return str(listed[0]["spec"]["targetGroupARN"]) if listed else None

    shop_tg = await eventually(shop_target_group)
    await eventually(lambda: _lb_count(t, 1))
    await t.admin.settled()
    t.proxy.clear_log()

    annotations, paths = _forwarding(shop_tg)
    await attacker.ingress("into-shop", annotations, paths=paths)
    annotations, paths = _forwarding(theirs)
    await attacker.ingress("into-staging", annotations, paths=paths)
    annotations, paths = _forwarding(elsewhere)
    await attacker.ingress("into-vpc", annotations, paths=paths)
    await _refused(attacker, "into-shop", "namespace shop")
    await _refused(attacker, "into-staging", "cluster staging")
    await _refused(attacker, "into-vpc", f"in VPC {other_vpc}")
    await t.admin.settled()
    assert await _lb_count(t, 1)  # the team's only
    for arn in (shop_tg, theirs, elsewhere):
        (tg,) = (await t.aws.elbv2("DescribeTargetGroups", TargetGroupArns=[arn]))["TargetGroups"]
        assert len(tg.get("LoadBalancerArns") or []) <= 1
    assert t.mutations() == []
    assert await t.admin.stop() == 0


async def _lb_count(t: Tenancy, n: int) -> bool:
    return len(await t.aws.load_balancers()) == n
