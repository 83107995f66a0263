"""The stand-in keeps a load balancer's IPAM and customer-owned IPv4 pools (moto_pools.py):
given at creation, answered by DescribeLoadBalancers, changed and removed with ModifyIpPools,
refused on network load balancers and when malformed."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed


def _described(elbv2: Any, arn: str) -> dict[str, Any]:
    found: dict[str, Any] = elbv2.describe_load_balancers(LoadBalancerArns=[arn])[
        "LoadBalancers"][0]
    return found


def test_pools_at_creation_then_changed_and_removed(elbv2: Any, aws_seed: AwsSeed) -> None:
    created = elbv2.create_load_balancer(
        Name="pools", Subnets=list(aws_seed.public_subnets[:2]), Type="application",
        Scheme="internet-facing", IpamPools={"Ipv4IpamPoolId": "ipam-pool-0a1"},
        CustomerOwnedIpv4Pool="ipv4pool-coip-0b2")["LoadBalancers"][0]
    assert created["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0a1"}
    arn = created["LoadBalancerArn"]
    lb = _described(elbv2, arn)
    assert lb["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0a1"}
    assert lb["CustomerOwnedIpv4Pool"] == "ipv4pool-coip-0b2"
    changed = elbv2.modify_ip_pools(LoadBalancerArn=arn,
                                    IpamPools={"Ipv4IpamPoolId": "ipam-pool-0c3"})
    assert changed["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0c3"}
    assert _described(elbv2, arn)["IpamPools"] == {"Ipv4IpamPoolId": "ipam-pool-0c3"}
    elbv2.modify_ip_pools(LoadBalancerArn=arn, RemoveIpamPools=["ipv4"])
    assert "IpamPools" not in _described(elbv2, arn)
    assert _described(elbv2, arn)["CustomerOwnedIpv4Pool"] == "ipv4pool-coip-0b2"


def test_refusals(elbv2: Any, aws_seed: AwsSeed) -> None:
    subnets = list(aws_seed.public_subnets[:2])
    with pytest.raises(ClientError, match="ValidationError"):
        elbv2.create_load_balancer(Name="nlb-pool", Subnets=subnets, Type="network",
                                   IpamPools={"Ipv4IpamPoolId": "ipam-pool-0a1"})
    with pytest.raises(ClientError, match="ValidationError"):
        elbv2.create_load_balancer(Name="bad-pool", Subnets=subnets, Type="application",
                                   IpamPools={"Ipv4IpamPoolId": "pool-0a1"})
    with pytest.raises(ClientError, match="ValidationError"):
        elbv2.create_load_balancer(Name="bad-coip", Subnets=subnets, Type="application",
                                   CustomerOwnedIpv4Pool="coip-1")
    assert elbv2.describe_load_balancers()["LoadBalancers"] == []
    arn = elbv2.create_load_balancer(Name="plain", Subnets=subnets, Type="application")[
        "LoadBalancers"][0]["LoadBalancerArn"]
    with pytest.raises(ClientError, match="LoadBalancerNotFound"):
        elbv2.modify_ip_pools(LoadBalancerArn=arn + "x", RemoveIpamPools=["ipv4"])
    with pytest.raises(ClientError, match="ValidationError"):
        elbv2.modify_ip_pools(LoadBalancerArn=arn)
