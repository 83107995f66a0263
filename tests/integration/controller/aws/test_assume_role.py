"""Calls made as another account's role, against moto's STS through the fault proxy: moto gives
an assumed role's credentials the role's account, so what is made there is invisible to the
controller's own account."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from controller.aws import AssumeRoleFailed, AWSClientPool, AWSError, AWSSettings, Role
from controller.aws.assumerole import REFRESH_BEFORE, session_name
from controller.standins import AWSFaultProxy
from runtime.clock import FakeClock
from tests.support.aws import AwsInspector

ROLE = Role(arn="arn:aws:iam::111111111111:role/tg-management", external_id="shared-secret")
REGION = "us-west-2"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def pool(aws_proxy: AWSFaultProxy, aws_registry: CollectorRegistry, clock: FakeClock,
               no_retry_backoff: None) -> AsyncIterator[AWSClientPool]:
    settings = AWSSettings(region=REGION, endpoint_url=aws_proxy.url, access_key="testing",
                           secret_key="testing", role_session_name=session_name("prod/eu 1"))
    async with AWSClientPool(settings, registry=aws_registry, clock=clock) as made:
        yield made


async def _target_group_in(inspector: AwsInspector, name: str) -> str:
    vpc = await inspector.vpc()
    return await inspector.create_target_group(name, vpc_id=vpc)


def _assumed(proxy: AWSFaultProxy) -> list[str]:
    return [str(r.params) for r in proxy.records(operation="AssumeRole")]


async def test_a_role_sees_its_own_account_and_only_it(
        pool: AWSClientPool, aws_proxy: AWSFaultProxy, aws_inspector: AwsInspector) -> None:
    arn = await _target_group_in(aws_inspector.as_role(ROLE), "far-tg")
    assert ":111111111111:targetgroup/far-tg/" in arn
    found = await pool.call("elbv2", "DescribeTargetGroups", role=ROLE, TargetGroupArns=[arn])
    assert [tg["TargetGroupArn"] for tg in found["TargetGroups"]] == [arn]
    with pytest.raises(AWSError) as refused:
        await pool.call("elbv2", "DescribeTargetGroups", TargetGroupArns=[arn])
    assert refused.value.code == "TargetGroupNotFound"
    # The session name is upstream's, with what STS refuses left out.
    me = await pool.call("sts", "GetCallerIdentity", role=ROLE)
    assert me["Arn"] == "arn:aws:sts::111111111111:assumed-role/tg-management/AWS-LBC-prodeu1"
    assert len(_assumed(aws_proxy)) == 1


async def test_one_assume_role_per_role_external_id_and_region(
        pool: AWSClientPool, aws_proxy: AWSFaultProxy) -> None:
    other_id = Role(arn=ROLE.arn, external_id="another-secret")
    other_region = Role(arn=ROLE.arn, external_id=ROLE.external_id, region="us-east-1")
    for _ in range(3):
        for role in (ROLE, other_id, other_region):
            await pool.call("elbv2", "DescribeTargetGroups", role=role)
    assert len(_assumed(aws_proxy)) == 3
    # The controller's own clients only asked STS: the roles' calls went on their own.
    assert {service for service, _ in pool.open_clients} == {"sts"}


async def test_credentials_are_refreshed_before_they_expire(
        pool: AWSClientPool, aws_proxy: AWSFaultProxy, clock: FakeClock,
        aws_registry: CollectorRegistry) -> None:
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    first = await pool.raw_client("elbv2", role=ROLE)
    await clock.advance(3600 - REFRESH_BEFORE - 1)
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    assert len(_assumed(aws_proxy)) == 1  # still good for more than the margin
    assert await pool.raw_client("elbv2", role=ROLE) is first
    await clock.advance(2)
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    assert len(_assumed(aws_proxy)) == 2
    second = await pool.raw_client("elbv2", role=ROLE)
    assert second is not first  # signed with the new credentials
    assert aws_registry.get_sample_value(
        "aws_api_calls_total", {"service": "STS", "operation": "AssumeRole",
                                "status_code": "200", "error_code": ""}) == 2


async def test_a_failed_refresh_keeps_the_credentials_until_they_lapse(
        pool: AWSClientPool, aws_proxy: AWSFaultProxy, clock: FakeClock) -> None:
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    await clock.advance(3600 - REFRESH_BEFORE + 1)
    fault = aws_proxy.inject("AccessDenied", operation="AssumeRole", status=403)
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)  # the old ones still hold
    await clock.advance(REFRESH_BEFORE)
    with pytest.raises(AssumeRoleFailed, match="cannot assume role"):
        await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    assert pool.held_roles == (ROLE,)
    aws_proxy.remove(fault)
    await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)


async def test_access_denied_names_the_role(pool: AWSClientPool,
                                            aws_proxy: AWSFaultProxy) -> None:
    aws_proxy.inject("AccessDenied", operation="AssumeRole", status=403,
                     message="not authorized to perform sts:AssumeRole")
    with pytest.raises(AssumeRoleFailed) as refused:
        await pool.call("elbv2", "DescribeTargetGroups", role=ROLE)
    assert refused.value.code == "AccessDenied"
    assert refused.value.role == ROLE
    assert f"cannot assume role {ROLE.arn}: not authorized" in str(refused.value)
    assert [r.operation for r in aws_proxy.log] == ["AssumeRole"]  # nothing else sent
    assert pool.held_roles == ()  # a role never assumed keeps nothing
