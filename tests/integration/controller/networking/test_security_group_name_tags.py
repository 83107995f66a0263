"""Regression: a value of the `security-groups` annotations (Ingress `alb.ingress.kubernetes.io/
security-groups`, Service `service.beta.kubernetes.io/aws-load-balancer-security-groups`) that
is not a group ID matched the group's GroupName, where upstream matches its `Name` tag in the
VPC (`pkg/networking/security_group_resolver.go`): a manifest written for upstream attached
another group, or none. Now the `Name` tag is read; a name that matches no group, or several, is
an error naming it, and nothing is created for that load balancer."""

from __future__ import annotations

from typing import Any

from runtime.objects import Obj
from tests.support.cluster import INGRESS, SERVICE, TARGETGROUPBINDING, Cluster
from tests.support.fixtures.cluster import MakeCluster
from tests.support.tenancy import warnings
from tests.support.waiting import eventually


async def _group(c: Cluster, group_name: str, name_tag: str | None) -> str:
    extra: dict[str, Any] = {} if name_tag is None else {"TagSpecifications": [{
        "ResourceType": "security-group", "Tags": [{"Key": "Name", "Value": name_tag}]}]}
    created = await c.aws.call("ec2", "CreateSecurityGroup", GroupName=group_name,
                               Description=group_name, VpcId=c.seed.vpc_id, **extra)
    return str(created["GroupId"])


async def _refused(c: Cluster, name: str, words: str) -> Obj:
    async def event() -> Obj | None:
        found = [e for e in warnings(await c.events(name), "FailedDeployModel")
                 if words in e["message"]]
        return found[0] if found else None

    found: Obj = await eventually(event, message=f"{name} was not refused: {words}")
    return found


async def test_a_name_is_the_name_tag_and_must_match_one_group(
        make_cluster: MakeCluster) -> None:
    c = await make_cluster(INGRESS, SERVICE, TARGETGROUPBINDING)
    tagged = await _group(c, "launch-wizard-7", "web-lb")
    # A group whose GroupName is the name asked for, but whose Name tag is not: not it.
    await _group(c, "web-lb", None)
    twins = sorted([await _group(c, "twin-a", "twin"), await _group(c, "twin-b", "twin")])
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("named", {"security-groups": "web-lb"}, backend="web")
    await c.nlb_service("named-nlb", {"aws-load-balancer-security-groups": "web-lb"})
    await c.ingress("ambiguous", {"security-groups": "twin"}, backend="web")
    await c.nlb_service("nowhere", {"aws-load-balancer-security-groups": "nowhere"})
    await c.start()

    async def both() -> list[dict[str, Any]] | None:
        found = await c.aws.load_balancers()
        return found if len(found) == 2 else None

    for lb in await eventually(both, timeout=60):
        assert lb["SecurityGroups"] == [tagged], lb["Type"]

    await _refused(c, "ambiguous", f"security group name 'twin' matches 2 groups in VPC "
                   f"{c.seed.vpc_id} ({', '.join(twins)}); use group IDs")
    await _refused(c, "nowhere", f"security groups not found in VPC {c.seed.vpc_id}: nowhere")
    await c.settled()
    assert len(await c.aws.load_balancers()) == 2
    assert await c.stop() == 0
