"""Admission's read cache (controller/aws/readcache.py) on moto, through the fault proxy: what
each kind of lookup answers, and what it costs in calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.aws import AWSClientPool, Caller, DirectReader, LookupUnavailable, ReadCache
from controller.standins import AWSFaultProxy, AwsSeed


@pytest.fixture
def reads(aws_pool: AWSClientPool) -> ReadCache:
    return ReadCache(DirectReader(Caller(aws_pool)))


async def test_a_target_group_by_name_is_known_by_arn_too(
        reads: ReadCache, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    arn = elbv2.create_target_group(Name="cached", Protocol="TCP", Port=80, VpcId=aws_seed.vpc_id,
                                    TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.add_tags(ResourceArns=[arn], Tags=[{"Key": "team", "Value": "shop"}])
    by_name = await asyncio.gather(*(reads.target_group(name="cached") for _ in range(50)))
    by_arn = await reads.target_group(arn=arn)
    assert all(found.desc is not None and found.desc["TargetGroupArn"] == arn
               for found in [*by_name, by_arn])
    assert by_arn.tags == {"team": "shop"}
    assert [r.operation for r in aws_proxy.log] == ["DescribeTargetGroups", "DescribeTags"]

    missing = await reads.target_group(name="no-such-group")
    assert missing.desc is None
    malformed = await reads.target_group(arn="arn:nonsense")
    assert malformed.desc is None
    assert malformed.refused is not None  # AWS's words, for the denial
    await reads.target_group(name="no-such-group")
    assert len(aws_proxy.log) == 4  # each missing one asked once


async def test_security_groups_by_id_with_their_tags(
        reads: ReadCache, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, ec2: Any) -> None:
    group_id = ec2.create_security_group(
        GroupName="cached", Description="d", VpcId=aws_seed.vpc_id,
        TagSpecifications=[{"ResourceType": "security-group",
                            "Tags": [{"Key": "team", "Value": "shop"}]}])["GroupId"]
    found = await reads.security_group(group_id)
    assert found is not None
    assert found["VpcId"] == aws_seed.vpc_id
    assert {t["Key"]: t["Value"] for t in found["Tags"]} == {"team": "shop"}
    assert await reads.security_group(group_id) == found
    assert await reads.security_group("sg-0000000000000dead") is None
    assert await reads.security_group("not-a-group-id") is None
    assert len(aws_proxy.records(operation="DescribeSecurityGroups")) == 3


async def test_aws_refusing_a_read_is_no_answer(reads: ReadCache,
                                                aws_proxy: AWSFaultProxy) -> None:
    aws_proxy.inject("AccessDenied", operation="DescribeSecurityGroups", status=403)
    with pytest.raises(LookupUnavailable, match="AccessDenied"):
        await reads.security_group("sg-0123456789abcdef0")
