"""The fault proxy in front of moto, seen by a plain aiobotocore client without retries."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from controller.standins import (
    AWSFaultProxy,
    AwsSeed,
    MotoStandIn,
    OperationClass,
    ServerLimits,
)
from runtime.clock import FakeClock


@asynccontextmanager
async def plain_client(url: str, service: str) -> AsyncIterator[Any]:
    config = AioConfig(retries={"mode": "standard", "total_max_attempts": 1})
    async with get_session().create_client(
            service, region_name="us-west-2", endpoint_url=url, config=config,
            aws_access_key_id="testing", aws_secret_access_key="testing") as client:
        yield client


CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("elbv2", "describe_load_balancers", {}, "DescribeLoadBalancers"),
    ("ec2", "describe_vpcs", {}, "DescribeVpcs"),
    ("acm", "list_certificates", {}, "ListCertificates"),
]


@pytest.mark.parametrize(("error", "status"), [
    ("Throttling", 400), ("ThrottlingException", 400), ("RequestLimitExceeded", 400),
    ("ServiceUnavailable", 503), ("InternalFailure", 500),
])
async def test_each_error_type_is_injected_in_every_protocol(
        aws_proxy: AWSFaultProxy, error: str, status: int) -> None:
    for service, method, params, operation in CASES:
        aws_proxy.inject(error, operation=operation, count=1)
        async with plain_client(aws_proxy.url, service) as client:
            with pytest.raises(ClientError) as excinfo:
                await getattr(client, method)(**params)
            assert excinfo.value.response["Error"]["Code"] == error
            assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
            # The fault fired once; the next call reaches moto.
            await getattr(client, method)(**params)
        records = aws_proxy.records(operation=operation)
        assert [(r.service, r.outcome, r.status, r.source) for r in records[-2:]] == [
            (service, error, status, "injected"), (service, "ok", 200, "upstream")]


async def test_log_records_operation_params_outcome_and_mutation(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    async with plain_client(aws_proxy.url, "elbv2") as elbv2:
        tg = (await elbv2.create_target_group(
            Name="tg", Protocol="HTTP", Port=80, VpcId=aws_seed.vpc_id,
            TargetType="instance"))["TargetGroups"][0]["TargetGroupArn"]
        targets = [{"Id": i, "Port": 8080} for i in aws_seed.instance_ids]
        await elbv2.register_targets(TargetGroupArn=tg, Targets=targets)
        await elbv2.describe_target_health(TargetGroupArn=tg)
        with pytest.raises(ClientError):
            await elbv2.describe_load_balancers(Names=["nope"])
    log = aws_proxy.log
    assert [(r.operation, r.mutating, r.outcome) for r in log] == [
        ("CreateTargetGroup", True, "ok"),
        ("RegisterTargets", True, "ok"),
        ("DescribeTargetHealth", False, "ok"),
        ("DescribeLoadBalancers", False, "LoadBalancerNotFound"),
    ]
    assert log[1].params == {"TargetGroupArn": tg,
                             "Targets": [f"{i}:8080" for i in aws_seed.instance_ids]}
    assert log[3].status == 400
    assert log[3].source == "upstream"
    assert all(r.service == "elbv2" for r in log)
    assert log[0].time <= log[1].time <= log[2].time <= log[3].time
    aws_proxy.clear_log()
    assert aws_proxy.log == []


async def test_rate_faults_follow_the_seeded_random(moto_standin: MotoStandIn) -> None:
    outcomes: list[list[str]] = []
    for _ in range(2):
        async with AWSFaultProxy(moto_standin.url, rng=random.Random(42)) as proxy:
            fault = proxy.inject("Throttling", operation="DescribeLoadBalancers", rate=0.5)
            async with plain_client(proxy.url, "elbv2") as client:
                for _ in range(30):
                    with suppress(ClientError):
                        await client.describe_load_balancers()
            outcomes.append([r.outcome for r in proxy.log])
            assert fault.fired == outcomes[-1].count("Throttling")
    assert outcomes[0] == outcomes[1]
    assert 5 <= outcomes[0].count("Throttling") <= 25


async def test_count_faults_expire_and_match_only_their_operation(
        aws_proxy: AWSFaultProxy) -> None:
    fault = aws_proxy.inject("ThrottlingException", operation="Describe.*", service="elbv2",
                             count=2)
    async with plain_client(aws_proxy.url, "elbv2") as client:
        for _ in range(3):
            with suppress(ClientError):
                await client.describe_target_groups()
    async with plain_client(aws_proxy.url, "ec2") as ec2:
        await ec2.describe_vpcs()  # other service: untouched
    assert [r.outcome for r in aws_proxy.log] == ["ThrottlingException"] * 2 + ["ok", "ok"]
    assert fault.exhausted
    aws_proxy.remove(fault)


async def test_latency_is_added(aws_proxy: AWSFaultProxy) -> None:
    # Well above what one call costs on a loaded machine, so the second call tells.
    aws_proxy.inject(latency=0.6, operation="DescribeVpcs")
    async with plain_client(aws_proxy.url, "ec2") as ec2:
        await ec2.describe_vpcs()  # warm the connection
        start = time.monotonic()
        await ec2.describe_vpcs()
        slow = time.monotonic() - start
        aws_proxy.clear_faults()
        start = time.monotonic()
        await ec2.describe_vpcs()
        fast = time.monotonic() - start
    assert slow >= 0.6
    assert fast < 0.6


async def test_server_limits_throttle_beyond_the_bucket(moto_standin: MotoStandIn) -> None:
    clock = FakeClock()
    async with AWSFaultProxy(moto_standin.url, clock=clock) as proxy:
        limits = proxy.enable_server_limits(ServerLimits(classes=(
            OperationClass("register", "RegisterTargets|DeregisterTargets", 4, 20),
            OperationClass("describe", "Describe.*", 2, 5),
        )))
        assert limits.service == "elbv2"

        async with plain_client(proxy.url, "elbv2") as client:
            async def burst(n: int) -> list[str]:
                outcomes = []
                for _ in range(n):
                    try:
                        await client.describe_load_balancers()
                        outcomes.append("ok")
                    except ClientError as exc:
                        outcomes.append(exc.response["Error"]["Code"])
                return outcomes

            assert await burst(8) == ["ok"] * 5 + ["Throttling"] * 3
            await clock.advance(1.0)  # refills 2 tokens
            assert await burst(3) == ["ok", "ok", "Throttling"]
            # A class without tokens does not affect other classes or services.
            async with plain_client(proxy.url, "ec2") as ec2:
                await ec2.describe_vpcs()
            proxy.disable_server_limits()
            assert await burst(2) == ["ok", "ok"]
        assert [r.source for r in proxy.log if r.outcome == "Throttling"] == ["limit"] * 4


async def test_default_server_limits_follow_the_published_describe_bucket(
        moto_standin: MotoStandIn) -> None:
    clock = FakeClock()
    async with AWSFaultProxy(moto_standin.url, clock=clock) as proxy:
        limits = proxy.enable_server_limits()
        describe = next(c for c in limits.classes if c.name == "describe")
        assert (describe.rate, describe.burst) == (10.0, 40)
        async with plain_client(proxy.url, "elbv2") as client:
            results = await asyncio.gather(
                *(client.describe_target_groups() for _ in range(45)), return_exceptions=True)
        throttled = [r for r in results if isinstance(r, ClientError)]
        assert len(throttled) == 5
        assert all(e.response["Error"]["Code"] == "Throttling" for e in throttled)
