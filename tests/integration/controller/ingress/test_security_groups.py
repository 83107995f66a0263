"""An ALB's security groups as the Ingress controller leaves them in moto: the managed frontend
group (name, tags and exactly the rules its annotations ask for), the shared backend group, the
groups the ALB carries, and what the managed bindings ask of their targets' groups."""

from __future__ import annotations

from typing import Any

from controller.model import backend_security_group_name, ingress_security_group_name
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.resources import INGRESSES
from tests.support.aws import tags_of
from tests.support.cluster import Cluster
from tests.support.objects import hostname
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
DESCRIPTION = "[k8s] Managed SecurityGroup for LoadBalancer"


async def _alb(c: Cluster, name: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        ing = await c.find(INGRESSES, name)
        dns = hostname(ing) if ing is not None else None
        return await c.aws.load_balancer_at(dns) if dns else None

    lb: dict[str, Any] = await eventually(found, timeout=30)
    return lb


async def _rules_are(c: Cluster, group_id: str, expected: set[Any]) -> None:
    """The group's inbound rules become exactly `expected` (a create and its rules are two
    calls)."""
    async def same() -> bool:
        return await c.aws.group_rules(group_id) == expected

    try:
        await eventually(same)
    except AssertionError:
        assert await c.aws.group_rules(group_id) == expected


async def _managed(c: Cluster, stack: str) -> dict[str, Any]:
    async def one() -> dict[str, Any] | None:
        groups = await c.aws.stack_security_groups(stack)
        return groups[0] if len(groups) == 1 else None

    group: dict[str, Any] = await eventually(one)
    return group


async def test_each_annotation_shapes_the_groups_and_their_rules(
        cluster: Cluster, aws_seed: AwsSeed) -> None:
    c = cluster
    await c.ingress_class("alb")
    pl = (await c.aws.call(
        "ec2", "CreateManagedPrefixList", PrefixListName="office", MaxEntries=2,
        AddressFamily="IPv4", Entries=[{"Cidr": "198.51.100.0/24"}]))["PrefixList"][
        "PrefixListId"]
    mine = (await c.aws.call("ec2", "CreateSecurityGroup", GroupName="team-alb",
                             Description="the team's", VpcId=aws_seed.vpc_id,
                             TagSpecifications=[{"ResourceType": "security-group", "Tags": [
                                 {"Key": "Name", "Value": "team-alb"}]}]))["GroupId"]
    for name in ("web", "api"):
        await c.backend(name)
    await c.ingress("shop", {A + "scheme": "internet-facing"}, backend="web")
    await c.ingress("v4", {A + "inbound-cidrs": "10.0.0.0/8, 2001:db8::/32",
                           A + "listen-ports": '[{"HTTP": 80}, {"HTTP": 8080}]'}, backend="web")
    await c.ingress("dual", {A + "inbound-cidrs": "10.0.0.0/8, 2001:db8::/32",
                             A + "ip-address-type": "dualstack",
                             A + "security-group-prefix-lists": pl}, backend="api")
    await c.ingress("lists", {A + "security-group-prefix-lists": pl}, backend="api")
    await c.ingress("plain", {A + "security-groups": "team-alb"}, backend="web")
    await c.ingress("ruled", {A + "security-groups": mine,
                              A + "manage-backend-security-group-rules": "true"}, backend="api")
    await c.start()

    # The default: a managed group with upstream's name, description and tags
    # (pkg/ingress/model_build_managed_sg.go, pkg/networking/backend_sg_provider.go), so a
    # group upstream made is the same group, and the shared backend group.
    lb = await _alb(c, "shop")
    managed = await _managed(c, "default/shop")
    assert managed["GroupName"] == ingress_security_group_name("test-cluster", "default", "shop")
    assert managed["Description"] == DESCRIPTION
    assert managed["VpcId"] == aws_seed.vpc_id
    assert tags_of(managed) == {"elbv2.k8s.aws/cluster": "test-cluster",
                                "ingress.k8s.aws/stack": "default/shop",
                                "ingress.k8s.aws/resource": "ManagedLBSecurityGroup"}
    await _rules_are(c, managed["GroupId"], {("tcp", 80, 80, "0.0.0.0/0", "")})
    [backend] = await c.aws.backend_security_groups("test-cluster")
    assert backend["GroupName"] == backend_security_group_name("test-cluster")
    assert backend["Description"] == "[k8s] Shared Backend SecurityGroup for LoadBalancer"
    await _rules_are(c, backend["GroupId"], set())
    assert set(lb["SecurityGroups"]) == {managed["GroupId"], backend["GroupId"]}
    by_stack = {b["metadata"]["labels"]["ingress.k8s.aws/stack-name"]: b["spec"]
                for b in await c.bindings()}
    assert by_stack["shop"]["networking"] == {"ingress": [{
        "from": [{"securityGroup": {"groupID": backend["GroupId"]}}],
        "ports": [{"protocol": "TCP", "port": 8080}]}]}

    # CIDRs, IPv6 ones only for a dualstack ALB, prefix lists (alone: no default CIDR).
    v4 = await _managed(c, "default/v4")
    await _rules_are(c, v4["GroupId"], {("tcp", 80, 80, "10.0.0.0/8", ""),
                                        ("tcp", 8080, 8080, "10.0.0.0/8", "")})
    await _rules_are(c, (await _managed(c, "default/dual"))["GroupId"], {
        ("tcp", 80, 80, "10.0.0.0/8", ""), ("tcp", 80, 80, "2001:db8::/32", ""),
        ("tcp", 80, 80, pl, "")})
    await _rules_are(c, (await _managed(c, "default/lists"))["GroupId"],
                     {("tcp", 80, 80, pl, "")})

    # User groups: the name resolved in the VPC; the backend group only with managed rules.
    assert (await _alb(c, "plain"))["SecurityGroups"] == [mine]
    assert set((await _alb(c, "ruled"))["SecurityGroups"]) == {mine, backend["GroupId"]}
    for name in ("plain", "ruled"):
        assert await c.aws.stack_security_groups(f"default/{name}") == []
    assert "networking" not in by_stack["plain"]
    assert by_stack["ruled"]["networking"]["ingress"][0]["from"] == [
        {"securityGroup": {"groupID": backend["GroupId"]}}]

    # Narrowing the CIDRs revokes what is no longer wanted.
    await c.annotate(INGRESSES, "v4", {A + "inbound-cidrs": "10.1.0.0/16"})
    await _rules_are(c, v4["GroupId"], {("tcp", 80, 80, "10.1.0.0/16", ""),
                                        ("tcp", 8080, 8080, "10.1.0.0/16", "")})


async def test_two_ingresses_share_the_backend_group_and_deletion_removes_ours(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.backend("api")
    await c.ingress("one", backend="web")
    await c.ingress("two", backend="api")
    await c.start()
    one, two = await _alb(c, "one"), await _alb(c, "two")
    [backend] = await c.aws.backend_security_groups("test-cluster")
    assert backend["GroupId"] in one["SecurityGroups"]
    assert backend["GroupId"] in two["SecurityGroups"]
    managed_one = await _managed(c, "default/one")

    # The first deletion keeps the backend group: the other ALB carries it. AWS refuses the
    # managed group's deletion for a while (the ALB's interfaces linger); the controller retries.
    aws_proxy.inject("DependencyViolation", operation="DeleteSecurityGroup", count=2,
                     message="resource has a dependent object")
    await c.delete(INGRESSES, "one")
    await eventually(lambda: c.gone(INGRESSES, "one"), timeout=30)
    assert await c.aws.security_group(managed_one["GroupId"]) is None
    assert [r.outcome for r in aws_proxy.records(operation="DeleteSecurityGroup")][:2] == [
        "DependencyViolation", "DependencyViolation"]
    assert [g["GroupId"] for g in await c.aws.backend_security_groups("test-cluster")] == [
        backend["GroupId"]]

    # The last one takes the backend group with it.
    await c.delete(INGRESSES, "two")
    await eventually(lambda: c.gone(INGRESSES, "two"), timeout=30)
    assert await c.aws.backend_security_groups("test-cluster") == []
    assert await c.aws.stack_security_groups("default/two") == []
    assert await c.aws.load_balancers() == []
