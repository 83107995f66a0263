"""An NLB's security groups as the Service controller leaves them in moto (upstream's behaviour
since v2.6, NLBSecurityGroup on): the managed frontend group and its rules from source ranges,
prefix lists and ICMP, the backend group, user groups, PrivateLink, and none at all."""

from __future__ import annotations

from typing import Any

from controller.model import backend_security_group_name, service_security_group_name
from controller.standins import AwsSeed
from runtime.resources import SERVICES
from tests.support.aws import tags_of
from tests.support.cluster import Cluster
from tests.support.objects import hostname, service_port
from tests.support.waiting import eventually


async def _nlb(c: Cluster, name: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        svc = await c.find(SERVICES, name)
        dns = hostname(svc) if svc is not None else None
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


async def _managed(c: Cluster, name: str) -> dict[str, Any]:
    async def one() -> dict[str, Any] | None:
        groups = await c.aws.stack_security_groups(f"default/{name}", kind="service")
        return groups[0] if len(groups) == 1 else None

    group: dict[str, Any] = await eventually(one)
    return group


async def test_each_annotation_shapes_the_groups_and_their_rules(
        cluster: Cluster, aws_seed: AwsSeed) -> None:
    c = cluster
    pl = (await c.aws.call("ec2", "CreateManagedPrefixList", PrefixListName="office",
                           MaxEntries=2, AddressFamily="IPv4",
                           Entries=[{"Cidr": "198.51.100.0/24"}]))["PrefixList"]["PrefixListId"]
    mine = (await c.aws.call("ec2", "CreateSecurityGroup", GroupName="team-nlb",
                             Description="the team's", VpcId=aws_seed.vpc_id,
                             TagSpecifications=[{"ResourceType": "security-group", "Tags": [
                                 {"Key": "Name", "Value": "team-nlb"}]}]))["GroupId"]
    svc = await c.nlb_service("echo", ports=[
        service_port(80, 8080, "http"), service_port(53, 5353, "dns", protocol="UDP")])
    # The spec's source ranges win over the annotation's.
    await c.nlb_service("spec", {"load-balancer-source-ranges": "192.0.2.0/24"},
                        loadBalancerSourceRanges=["10.0.0.0/8"])
    await c.nlb_service("note", {"load-balancer-source-ranges": "192.0.2.0/24",
                                 "aws-load-balancer-enable-icmp-for-path-mtu-discovery": "on"})
    await c.nlb_service("dual", {"aws-load-balancer-ip-address-type": "dualstack",
                                 "aws-load-balancer-enable-icmp-for-path-mtu-discovery": "on"})
    await c.nlb_service("lists", {"aws-load-balancer-security-group-prefix-lists": pl})
    await c.nlb_service("plain", {"aws-load-balancer-security-groups": mine,
                                  "aws-load-balancer-inbound-sg-rules-on-private-link-traffic":
                                  "off"})
    await c.nlb_service("rules", {"aws-load-balancer-security-groups": "team-nlb",
                                  "aws-load-balancer-manage-backend-security-group-rules":
                                  "true"})
    await c.nlb_service("none", {"aws-load-balancer-disable-nlb-sg": "true"})
    await c.start()

    lb = await _nlb(c, "echo")
    managed = await _managed(c, "echo")
    # pkg/service/model_build_managed_sg.go: the name hashes cluster, name, namespace, UID.
    assert managed["GroupName"] == service_security_group_name(
        "test-cluster", "default", "echo", uid=svc["metadata"]["uid"])
    assert tags_of(managed) == {"elbv2.k8s.aws/cluster": "test-cluster",
                                "service.k8s.aws/stack": "default/echo",
                                "service.k8s.aws/resource": "ManagedLBSecurityGroup"}
    # One rule per Service port in its own protocol.
    await _rules_are(c, managed["GroupId"], {("tcp", 80, 80, "0.0.0.0/0", ""),
                                             ("udp", 53, 53, "0.0.0.0/0", "")})
    [backend] = await c.aws.backend_security_groups("test-cluster")
    assert backend["GroupName"] == backend_security_group_name("test-cluster")
    assert set(lb["SecurityGroups"]) == {managed["GroupId"], backend["GroupId"]}
    by_port = {b["spec"]["serviceRef"]["port"]: b["spec"]["networking"]
               for b in await c.bindings("echo")}
    source = [{"securityGroup": {"groupID": backend["GroupId"]}}]
    assert by_port[80] == {"ingress": [{"from": source,
                                        "ports": [{"protocol": "TCP", "port": 8080}]}]}
    # UDP targets are health-checked over TCP on the traffic port.
    assert by_port[53] == {"ingress": [{"from": source, "ports": [
        {"protocol": "TCP", "port": 5353}, {"protocol": "UDP", "port": 5353}]}]}

    await _rules_are(c, (await _managed(c, "spec"))["GroupId"], {
        ("tcp", 80, 80, "10.0.0.0/8", "")})
    # ICMP "fragmentation needed" per CIDR (pkg/shared_constants/icmp.go).
    await _rules_are(c, (await _managed(c, "note"))["GroupId"], {
        ("tcp", 80, 80, "192.0.2.0/24", ""), ("icmp", 3, 4, "192.0.2.0/24", "")})
    await _rules_are(c, (await _managed(c, "dual"))["GroupId"], {
        ("tcp", 80, 80, "0.0.0.0/0", ""), ("tcp", 80, 80, "::/0", ""),
        ("icmp", 3, 4, "0.0.0.0/0", ""), ("icmpv6", 2, 0, "::/0", "")})
    await _rules_are(c, (await _managed(c, "lists"))["GroupId"], {("tcp", 80, 80, pl, "")})

    plain, rules, none = (await _nlb(c, "plain"), await _nlb(c, "rules"),
                          await _nlb(c, "none"))
    assert plain["SecurityGroups"] == [mine]
    assert plain["EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic"] == "off"
    assert set(rules["SecurityGroups"]) == {mine, backend["GroupId"]}
    assert not none.get("SecurityGroups")
    for name in ("plain", "rules", "none"):
        assert await c.aws.stack_security_groups(f"default/{name}", kind="service") == []
    networking = {b["metadata"]["labels"]["service.k8s.aws/stack-name"]:
                  b["spec"].get("networking") for b in await c.bindings()}
    assert networking["plain"] is None
    assert networking["none"] is None
    assert networking["rules"]["ingress"][0]["from"] == source
