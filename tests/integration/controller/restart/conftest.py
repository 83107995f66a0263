"""The restart tests' world: the local API server with the CRDs, moto freshly seeded, an
IngressClass, two Nodes on the seeded instances, a second certificate, a security group, a
managed prefix list, three Elastic IPs and IPv6 CIDRs on the private subnets."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.aws import AWSClientPool
from controller.standins import AwsSeed
from tests.integration.controller.restart.world import World
from tests.support.aws import AwsInspector
from tests.support.cluster import local_cluster


@pytest.fixture
async def world(aws_seed: AwsSeed, aws_pool: AWSClientPool, aws_inspector: AwsInspector,
                tmp_path: Path) -> AsyncIterator[World]:
    async with local_cluster(seed=aws_seed, pool=aws_pool, aws=aws_inspector,
                             directory=tmp_path, controllers=(), cls=World) as w:
        assert isinstance(w, World)
        await w.ingress_class("alb")
        await w.node("node-a", aws_seed.instance_ids[0], labels={"pool": "a"})
        await w.node("node-b", aws_seed.instance_ids[1], labels={"pool": "b"})
        w.extra["cert2"] = str((await w.aws.call(
            "acm", "RequestCertificate", DomainName="*.other.example.com",
            ValidationMethod="DNS"))["CertificateArn"])
        w.extra["security_group"] = str((await w.aws.call(
            "ec2", "CreateSecurityGroup", GroupName="by-hand", Description="made by hand",
            VpcId=aws_seed.vpc_id))["GroupId"])
        w.extra["prefix_list"] = str((await w.aws.call(
            "ec2", "CreateManagedPrefixList", PrefixListName="office", MaxEntries=2,
            AddressFamily="IPv4", Entries=[{"Cidr": "198.51.100.0/24"}]))["PrefixList"][
            "PrefixListId"])
        # Three for a Service, three for a frontend NLB: an Elastic IP serves one subnet.
        for index in range(1, 7):
            w.extra[f"eip{index}"] = str((await w.aws.call(
                "ec2", "AllocateAddress", Domain="vpc"))["AllocationId"])
        # IPv6 CIDRs on the private subnets (dualstack addresses, source NAT prefixes).
        block = await w.aws.call("ec2", "AssociateVpcCidrBlock", VpcId=aws_seed.vpc_id,
                                 AmazonProvidedIpv6CidrBlock=True)
        vpc6 = ipaddress.IPv6Network(block["Ipv6CidrBlockAssociation"]["Ipv6CidrBlock"])
        for name, subnet, cidr in zip("ab", sorted(aws_seed.private_subnets),
                                      vpc6.subnets(new_prefix=64), strict=False):
            await w.aws.call("ec2", "AssociateSubnetCidrBlock", SubnetId=subnet,
                             Ipv6CidrBlock=str(cidr))
            w.extra[f"ipv6_{name}"] = str(cidr[10])
            w.extra[f"nat_prefix_{name}"] = str(list(cidr.subnets(new_prefix=80))[3])
        yield w
