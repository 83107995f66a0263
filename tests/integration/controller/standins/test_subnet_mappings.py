"""The stand-in keeps a network load balancer's subnet mappings as AWS does
(moto_subnet_mappings.py): static addresses and source NAT prefixes are validated, stored and
described; SetSubnets keeps a subnet's existing configuration."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed


def _ipv6(ec2: Any, seed: AwsSeed, subnets: tuple[str, ...]) -> list[str]:
    """Give the VPC and `subnets` IPv6 CIDRs; their /64s, in order."""
    block = ec2.associate_vpc_cidr_block(VpcId=seed.vpc_id, AmazonProvidedIpv6CidrBlock=True)
    vpc_net = ipaddress.IPv6Network(block["Ipv6CidrBlockAssociation"]["Ipv6CidrBlock"])
    cidrs = []
    for subnet, net in zip(subnets, vpc_net.subnets(new_prefix=64), strict=False):
        ec2.associate_subnet_cidr_block(SubnetId=subnet, Ipv6CidrBlock=str(net))
        cidrs.append(str(net))
    return cidrs


def _zones(elbv2: Any, arn: str) -> dict[str, dict[str, Any]]:
    lb = elbv2.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]
    return {z["SubnetId"]: z for z in lb["AvailabilityZones"]}


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_elastic_ips_are_kept_and_described(elbv2: Any, ec2: Any, aws_seed: AwsSeed) -> None:
    eips = [ec2.allocate_address(Domain="vpc") for _ in range(3)]
    a, b = aws_seed.public_subnets
    arn = elbv2.create_load_balancer(
        Name="eips", Type="network", Scheme="internet-facing",
        SubnetMappings=[{"SubnetId": a, "AllocationId": eips[0]["AllocationId"]},
                        {"SubnetId": b, "AllocationId": eips[1]["AllocationId"]}],
    )["LoadBalancers"][0]["LoadBalancerArn"]
    zones = _zones(elbv2, arn)
    assert zones[a]["LoadBalancerAddresses"] == [
        {"IpAddress": eips[0]["PublicIp"], "AllocationId": eips[0]["AllocationId"]}]
    assert zones[b]["LoadBalancerAddresses"][0]["AllocationId"] == eips[1]["AllocationId"]
    lb = elbv2.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]
    assert lb["EnablePrefixForIpv6SourceNat"] == "off"
    # A kept subnet must come with its existing configuration.
    with pytest.raises(ClientError) as exc:
        elbv2.set_subnets(LoadBalancerArn=arn, SubnetMappings=[
            {"SubnetId": a, "AllocationId": eips[2]["AllocationId"]},
            {"SubnetId": b, "AllocationId": eips[1]["AllocationId"]}])
    assert _code(exc) == "InvalidConfigurationRequest"
    assert _zones(elbv2, arn)[a]["LoadBalancerAddresses"][0]["AllocationId"] == \
        eips[0]["AllocationId"]
    elbv2.delete_load_balancer(LoadBalancerArn=arn)
    # The addresses were the account's before and stay so.
    held = ec2.describe_addresses(AllocationIds=[e["AllocationId"] for e in eips])
    assert len(held["Addresses"]) == 3


def test_refusals(elbv2: Any, ec2: Any, aws_seed: AwsSeed) -> None:
    a, b = aws_seed.private_subnets
    eip = ec2.allocate_address(Domain="vpc")["AllocationId"]
    cases: list[tuple[dict[str, Any], str]] = [
        # An Elastic IP on an internal load balancer.
        ({"Scheme": "internal", "SubnetMappings": [{"SubnetId": a, "AllocationId": eip}]},
         "InvalidConfigurationRequest"),
        # An allocation that does not exist.
        ({"Scheme": "internet-facing", "SubnetMappings": [
            {"SubnetId": aws_seed.public_subnets[0], "AllocationId": "eipalloc-0123456789"}]},
         "AllocationIdNotFound"),
        # A private address outside the subnet, and one on an internet-facing load balancer.
        ({"Scheme": "internal", "SubnetMappings": [
            {"SubnetId": a, "PrivateIPv4Address": "10.0.3.10"}]},
         "InvalidConfigurationRequest"),
        ({"Scheme": "internet-facing", "SubnetMappings": [
            {"SubnetId": aws_seed.public_subnets[0], "PrivateIPv4Address": "10.0.0.10"}]},
         "InvalidConfigurationRequest"),
        # IPv6 address in a subnet without an IPv6 CIDR; source NAT without dualstack.
        ({"Scheme": "internal", "SubnetMappings": [
            {"SubnetId": a, "IPv6Address": "2600:1f13::1"}]}, "InvalidConfigurationRequest"),
        ({"Scheme": "internal", "Subnets": [a], "EnablePrefixForIpv6SourceNat": "on"},
         "InvalidConfigurationRequest"),
    ]
    for params, code in cases:
        with pytest.raises(ClientError) as exc:
            elbv2.create_load_balancer(Name="refused", Type="network", **params)
        assert _code(exc) == code, params
    assert not elbv2.describe_load_balancers()["LoadBalancers"]
    arn = elbv2.create_load_balancer(
        Name="private", Type="network", Scheme="internal",
        SubnetMappings=[{"SubnetId": a, "PrivateIPv4Address": "10.0.2.10"},
                        {"SubnetId": b, "PrivateIPv4Address": "10.0.3.10"}],
    )["LoadBalancers"][0]["LoadBalancerArn"]
    assert _zones(elbv2, arn)[b]["LoadBalancerAddresses"] == [
        {"PrivateIPv4Address": "10.0.3.10"}]


def test_ipv6_addresses_and_source_nat(elbv2: Any, ec2: Any, aws_seed: AwsSeed) -> None:
    a, b = aws_seed.private_subnets
    cidr_a, cidr_b = _ipv6(ec2, aws_seed, (a, b))
    first_b = str(next(ipaddress.IPv6Network(cidr_b).subnets(new_prefix=80)))
    address_a = str(ipaddress.IPv6Network(cidr_a)[10])
    arn = elbv2.create_load_balancer(
        Name="dual", Type="network", Scheme="internal", IpAddressType="dualstack",
        EnablePrefixForIpv6SourceNat="on",
        SubnetMappings=[{"SubnetId": a, "IPv6Address": address_a,
                         "SourceNatIpv6Prefix": "auto_assigned"},
                        {"SubnetId": b, "SourceNatIpv6Prefix": first_b}],
    )["LoadBalancers"][0]["LoadBalancerArn"]
    lb = elbv2.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]
    assert lb["EnablePrefixForIpv6SourceNat"] == "on"
    zones = _zones(elbv2, arn)
    assert zones[a]["LoadBalancerAddresses"] == [{"IPv6Address": address_a}]
    picked = ipaddress.IPv6Network(zones[a]["SourceNatIpv6Prefixes"][0])
    assert picked.prefixlen == 80
    assert picked.subnet_of(ipaddress.IPv6Network(cidr_a))
    assert zones[b]["SourceNatIpv6Prefixes"] == [first_b]
    # A prefix outside the subnet, or not a /80, is refused.
    for bad in (str(next(ipaddress.IPv6Network(cidr_a).subnets(new_prefix=80))), cidr_b):
        with pytest.raises(ClientError):
            elbv2.set_subnets(LoadBalancerArn=arn, SubnetMappings=[
                {"SubnetId": a, "IPv6Address": address_a, "SourceNatIpv6Prefix": "auto_assigned"},
                {"SubnetId": b, "SourceNatIpv6Prefix": bad}])
    # With a UDP listener the prefixes stay and source NAT cannot be turned off.
    group = elbv2.create_target_group(Name="udp", Protocol="UDP", Port=53, VpcId=aws_seed.vpc_id,
                                      TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.create_listener(LoadBalancerArn=arn, Protocol="UDP", Port=53, DefaultActions=[
        {"Type": "forward", "TargetGroupArn": group}])
    second_b = str(list(ipaddress.IPv6Network(cidr_b).subnets(new_prefix=80))[5])
    with pytest.raises(ClientError) as exc:
        elbv2.set_subnets(LoadBalancerArn=arn, SubnetMappings=[
            {"SubnetId": a, "IPv6Address": address_a, "SourceNatIpv6Prefix": "auto_assigned"},
            {"SubnetId": b, "SourceNatIpv6Prefix": second_b}])
    assert _code(exc) == "InvalidConfigurationRequest"
    with pytest.raises(ClientError) as exc:
        elbv2.set_subnets(LoadBalancerArn=arn, EnablePrefixForIpv6SourceNat="off",
                          SubnetMappings=[{"SubnetId": a, "IPv6Address": address_a},
                                          {"SubnetId": b}])
    assert _code(exc) == "InvalidConfigurationRequest"
    assert _zones(elbv2, arn)[b]["SourceNatIpv6Prefixes"] == [first_b]


def test_subnets_describe_their_ipv6_cidrs_as_associated(ec2: Any, aws_seed: AwsSeed) -> None:
    a, _ = aws_seed.private_subnets
    [cidr] = _ipv6(ec2, aws_seed, (a,))
    [subnet] = ec2.describe_subnets(SubnetIds=[a])["Subnets"]
    assert [(x["Ipv6CidrBlock"], x["Ipv6CidrBlockState"]["State"])
            for x in subnet["Ipv6CidrBlockAssociationSet"]] == [(cidr, "associated")]
