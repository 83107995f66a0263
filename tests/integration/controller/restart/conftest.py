"""The restart tests' world: the local API server with the CRDs, moto freshly seeded, an
IngressClass, two Nodes on the seeded instances, a second certificate, a security group, a
managed prefix list and three Elastic IPs."""

from __future__ import annotations

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
        for index in (1, 2, 3):
            w.extra[f"eip{index}"] = str((await w.aws.call(
                "ec2", "AllocateAddress", Domain="vpc"))["AllocationId"])
        yield w
