"""Regression: the `security-groups` annotations (Ingress `alb.ingress.kubernetes.io/
security-groups`, Service `service.beta.kubernetes.io/aws-load-balancer-security-groups`) could
name any group of the VPC, another team's managed frontend group included; the load balancer
built with it then kept that team's deletion stuck on DependencyViolation. Now a named group
is checked like every AWS resource the stack did not create: another stack's managed group, or
a group tagged for another cluster, is refused with a Warning (and the Service's condition),
and nothing is created or changed in AWS. The whole controller runs as its ServiceAccount with
the shipped RBAC; the attacker works in its own namespace only."""

from __future__ import annotations

from typing import Any

from runtime.objects import Obj
from runtime.resources import INGRESSES, SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, ingress_path
from tests.support.tenancy import Tenancy, warnings
from tests.support.waiting import eventually

SERVICE_CONDITION = "aiolbc/LoadBalancerReady"


async def _refused(cluster: Cluster, name: str, words: str) -> Obj:
    async def event() -> Obj | None:
        found = [e for e in warnings(await cluster.events(name), "FailedDeployModel")
                 if words in e["message"]]
        return found[0] if found else None

    found: Obj = await eventually(event, message=f"{name} was not refused: {words}")
    return found


async def test_another_stack_s_managed_group_or_another_cluster_s_group_is_refused(
        tenancy: Tenancy, attacker: Cluster) -> None:
    t = tenancy
    await t.admin.ingress_class("alb")
    await t.admin.nlb_service("web")
    staging = (await t.aws.call(
        "ec2", "CreateSecurityGroup", GroupName="staging-lb", Description="another cluster's",
        VpcId=t.admin.seed.vpc_id, TagSpecifications=[{
            "ResourceType": "security-group",
            "Tags": [{"Key": "elbv2.k8s.aws/cluster", "Value": "staging"},
                     {"Key": "Name", "Value": "staging-lb"}]}]))["GroupId"]
    await t.start()

    async def victim_group() -> dict[str, Any] | None:
        groups = await t.aws.stack_security_groups("shop/web", kind="service")
        return groups[0] if groups and len(await t.aws.load_balancers()) == 1 else None

    theirs = str((await eventually(victim_group, timeout=30))["GroupId"])
    await t.admin.settled()
    t.proxy.clear_log()

    # By ID, the victim's managed group; by name, a group tagged for another cluster.
    await attacker.nlb_service("steal", {"aws-load-balancer-security-groups": theirs})
    await attacker.nlb_service("borrow", {"aws-load-balancer-security-groups": "staging-lb"})
    await attacker.backend("be")
    await attacker.ingress("steal-alb", {"security-groups": theirs},
                           paths=[ingress_path("/", "be")])
    await attacker.ingress("borrow-alb", {"security-groups": staging},
                           paths=[ingress_path("/", "be")])

    managed = "is the managed security group of service shop/web"
    event = await _refused(attacker, "steal", f"security group {theirs}, named in the "
                           f"security-groups annotation, {managed}")
    await _refused(attacker, "borrow", f"security group staging-lb ({staging}), named in the "
                   "security-groups annotation, is tagged for cluster staging")
    await _refused(attacker, "steal-alb", managed)
    await _refused(attacker, "borrow-alb", "is tagged for cluster staging")
    assert event["type"] == "Warning"
    for name in ("steal", "borrow"):
        cond = condition(await attacker.get(SERVICES, name), SERVICE_CONDITION) or {}
        assert cond.get("status") == "False"
        assert "security-groups annotation" in str(cond.get("message")), name
    for name in ("steal-alb", "borrow-alb"):
        ing = await attacker.get(INGRESSES, name)
        assert not ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress")
    await t.admin.settled()

    # Nothing was created or changed in AWS for them: no load balancer, no target group, no
    # security group or rule; the victim's group is attached to its own load balancer only.
    assert t.mutations() == []
    assert len(await t.aws.load_balancers()) == 1
    assert [lb for lb in await t.aws.load_balancers()
            if theirs in (lb.get("SecurityGroups") or [])] != []
    assert await t.admin.stop() == 0
