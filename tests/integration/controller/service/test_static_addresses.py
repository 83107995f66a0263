"""Static NLB addresses through the Service controller and moto: Elastic IPs and private IPv4
addresses as SubnetMappings on CreateLoadBalancer; a change AWS cannot make in place leaves the
load balancer as it is with a Warning Event saying so (upstream makes no call and replaces
nothing); a count that does not match the discovered subnets is one message and nothing is
created; deleting the Service leaves the account's Elastic IPs allocated."""

from __future__ import annotations

import ipaddress
import itertools
from typing import Any

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition, hostname, service_port
from tests.support.waiting import eventually

P = "service.beta.kubernetes.io/"
EIPS = P + "aws-load-balancer-eip-allocations"
PUBLIC = {"aws-load-balancer-scheme": "internet-facing"}


async def _nlb(c: Cluster, name: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        svc = await c.find(SERVICES, name)
        dns = hostname(svc) if svc is not None else None
        return await c.aws.load_balancer_at(dns) if dns else None

    lb: dict[str, Any] = await eventually(found, timeout=30)
    return lb


def _addresses(lb: dict[str, Any], key: str) -> dict[str, str]:
    return {z["SubnetId"]: z["LoadBalancerAddresses"][0][key] for z in lb["AvailabilityZones"]
            if z.get("LoadBalancerAddresses")}


async def _allocate(c: Cluster, count: int) -> list[str]:
    return [(await c.aws.call("ec2", "AllocateAddress", Domain="vpc"))["AllocationId"]
            for _ in range(count)]


async def _warnings(c: Cluster, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in await c.events(name) if e["type"] == "Warning"]


async def test_elastic_ips_on_create_kept_on_change_and_left_on_delete(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    c = cluster
    first, second, spare = await _allocate(c, 3)
    subnets = sorted(aws_seed.public_subnets)
    await c.nlb_service("static", {**PUBLIC, "aws-load-balancer-eip-allocations":
                                   f"{first}, {second}"}, endpoint_ips=())
    await c.start()

    lb = await _nlb(c, "static")
    # In the order of the subnets' IDs, as upstream pairs them.
    assert _addresses(lb, "AllocationId") == {subnets[0]: first, subnets[1]: second}
    [create] = aws_proxy.records(operation="CreateLoadBalancer")
    assert create.outcome == "ok"
    await c.settled()

    aws_proxy.clear_log()
    await c.annotate(SERVICES, "static", {EIPS: f"{spare}, {second}"})
    expected = ("StaticAddressesKept",
                f"load balancer {lb['LoadBalancerName']}: subnet {subnets[0]} keeps {first} "
                f"({spare} asked): AWS cannot change the addresses of a subnet a network load "
                "balancer already uses, and the load balancer is not replaced for it (as "
                "upstream); to change them, delete the Service and create it again")

    async def warned() -> bool:
        return expected in await _warnings(c, "static")

    await eventually(warned, message="no Warning about the kept Elastic IP")
    await c.settled()
    assert not aws_proxy.records(operation="SetSubnets")
    assert not aws_proxy.records(operation="CreateLoadBalancer")
    assert not aws_proxy.records(operation="DeleteLoadBalancer")
    same = await c.aws.load_balancer(lb["LoadBalancerName"])
    assert same is not None
    assert same["LoadBalancerArn"] == lb["LoadBalancerArn"]
    assert _addresses(same, "AllocationId") == {subnets[0]: first, subnets[1]: second}

    await c.delete(SERVICES, "static")
    await eventually(lambda: c.gone(SERVICES, "static"), timeout=30)
    assert await c.aws.load_balancers() == []
    held = await c.aws.call("ec2", "DescribeAddresses", AllocationIds=[first, second, spare])
    assert len(held["Addresses"]) == 3
    assert await c.stop() == 0


async def test_private_addresses_and_a_count_that_does_not_match(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    c = cluster
    a, b = sorted(aws_seed.private_subnets)
    # The seed's private subnets are 10.0.2.0/24 and 10.0.3.0/24: matched by CIDR, not order.
    cidr = {s["SubnetId"]: s["CidrBlock"] for s in (await c.aws.call(
        "ec2", "DescribeSubnets", SubnetIds=[a, b]))["Subnets"]}
    ip_a = cidr[a].replace("0/24", "20")
    ip_b = cidr[b].replace("0/24", "20")
    await c.nlb_service("private", {"aws-load-balancer-private-ipv4-addresses":
                                    f"{ip_b},{ip_a}"}, endpoint_ips=())
    await c.nlb_service("short", {**PUBLIC, "aws-load-balancer-eip-allocations":
                                  "eipalloc-0123456789"}, endpoint_ips=())
    # Listed subnets pair with the Elastic IPs in the order listed, the last ID first here.
    low, high = sorted(aws_seed.public_subnets)
    one, two = await _allocate(c, 2)
    await c.nlb_service("listed", {**PUBLIC, "aws-load-balancer-subnets": f"{high},{low}",
                                   "aws-load-balancer-eip-allocations": f"{one},{two}"},
                        endpoint_ips=())
    await c.start()

    lb = await _nlb(c, "private")
    assert _addresses(lb, "PrivateIPv4Address") == {a: ip_a, b: ip_b}
    assert _addresses(await _nlb(c, "listed"), "AllocationId") == {high: one, low: two}

    public = ", ".join(sorted(aws_seed.public_subnets))

    async def refused() -> bool:
        svc = await c.get(SERVICES, "short")
        cond = condition(svc, CONDITION_TYPE)
        return (cond is not None and cond["status"] == "False" and cond["message"].endswith(
            f": count of EIP allocations (1) and subnets (2: {public}) must match"))

    await eventually(refused, message="no clear report of the count")
    creates = [r for r in aws_proxy.records(operation="CreateLoadBalancer") if r.outcome == "ok"]
    assert len(creates) == 2  # not the short one
    assert len(await c.aws.load_balancers()) == 2
    assert await c.stop() == 0


async def _ipv6(c: Cluster, seed: AwsSeed, subnets: tuple[str, ...]) -> dict[str, str]:
    """IPv6 CIDRs for the VPC and `subnets`: subnet -> its /64."""
    block = await c.aws.call("ec2", "AssociateVpcCidrBlock", VpcId=seed.vpc_id,
                             AmazonProvidedIpv6CidrBlock=True)
    vpc = ipaddress.IPv6Network(block["Ipv6CidrBlockAssociation"]["Ipv6CidrBlock"])
    cidrs = {}
    for subnet, net in zip(subnets, vpc.subnets(new_prefix=64), strict=False):
        await c.aws.call("ec2", "AssociateSubnetCidrBlock", SubnetId=subnet,
                         Ipv6CidrBlock=str(net))
        cidrs[subnet] = str(net)
    return cidrs


def _prefixes(lb: dict[str, Any]) -> dict[str, list[str]]:
    return {z["SubnetId"]: z.get("SourceNatIpv6Prefixes") or [] for z in lb["AvailabilityZones"]}


DNS = [service_port(53, 5353, "dns", protocol="UDP")]
DUAL = {"aws-load-balancer-ip-address-type": "dualstack"}
NAT = "aws-load-balancer-enable-prefix-for-ipv6-source-nat"
PREFIXES = "aws-load-balancer-source-nat-ipv6-prefixes"


async def test_ipv6_addresses_and_source_nat(
        cluster: Cluster, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    c = cluster
    a, b = sorted(aws_seed.private_subnets)
    cidrs = await _ipv6(c, aws_seed, (a, b))
    ip_a, ip_b = (str(ipaddress.IPv6Network(cidrs[s])[10]) for s in (a, b))
    by_80 = {s: [str(n) for n in itertools.islice(
        ipaddress.IPv6Network(cidrs[s]).subnets(new_prefix=80), 8)] for s in (a, b)}
    # Discovered subnets pair with the prefixes in the order of their IDs.
    await c.nlb_service("udp", {**DUAL, "aws-load-balancer-ipv6-addresses": f"{ip_b},{ip_a}",
                                NAT: "on", PREFIXES: f"auto_assigned,{by_80[b][3]}"},
                        ports=DNS, endpoint_ips=())
    await c.nlb_service("tcp", {**DUAL, NAT: "on"}, endpoint_ips=())
    # Internet-facing: the public subnets, which have no IPv6 CIDR.
    await c.nlb_service("no-cidr", {**DUAL, **PUBLIC, NAT: "on"}, endpoint_ips=())
    await c.start()

    udp = await _nlb(c, "udp")
    assert udp["EnablePrefixForIpv6SourceNat"] == "on"
    assert _addresses(udp, "IPv6Address") == {a: ip_a, b: ip_b}
    picked = _prefixes(udp)
    assert picked[b] == [by_80[b][3]]
    assert ipaddress.IPv6Network(picked[a][0]).subnet_of(ipaddress.IPv6Network(cidrs[a]))
    tcp = await _nlb(c, "tcp")
    assert tcp["EnablePrefixForIpv6SourceNat"] == "on"
    assert all(_prefixes(tcp).values())  # AWS picked one per subnet

    async def no_cidr_refused() -> bool:
        cond = condition(await c.get(SERVICES, "no-cidr"), CONDITION_TYPE)
        return cond is not None and cond["message"].endswith(
            ": prefixes for IPv6 source NAT need an IPv6 CIDR on every subnet; without one: "
            + ", ".join(sorted(aws_seed.public_subnets)))

    await eventually(no_cidr_refused, message="no clear report of the missing IPv6 CIDRs")
    await c.settled()
    assert len(await c.aws.load_balancers()) == 2

    # Without UDP listeners the setting changes in place (SetSubnets), the NLB stays.
    aws_proxy.clear_log()
    await c.annotate(SERVICES, "tcp", {P + NAT: "off"})

    async def turned_off() -> bool:
        lb = await c.aws.load_balancer(tcp["LoadBalancerName"])
        return lb is not None and lb["EnablePrefixForIpv6SourceNat"] == "off"

    await eventually(turned_off, message="source NAT not turned off")
    assert [r.outcome for r in aws_proxy.records(operation="SetSubnets")] == ["ok"]
    assert not _prefixes(await _nlb(c, "tcp"))[a]

    # With a UDP listener AWS refuses another prefix: one message, the NLB left as it is.
    await c.annotate(SERVICES, "udp", {P + PREFIXES: f"auto_assigned,{by_80[b][5]}"})

    async def refused() -> bool:
        return any(reason == "FailedDeployModel" and "cannot be changed" in message
                   for reason, message in await _warnings(c, "udp"))

    await eventually(refused, message="no Warning about the refused prefix change")
    assert _prefixes(await _nlb(c, "udp"))[b] == [by_80[b][3]]
    assert await c.stop() == 0
