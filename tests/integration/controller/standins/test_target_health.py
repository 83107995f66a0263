"""Target health as AWS reports it, from the fault proxy in front of moto, seen by a plain
aiobotocore client: `initial` until the health checks pass, `unused` while no load balancer
forwards to the group, `draining` for the deregistration delay, `Target.NotRegistered` for
unknown ids. Time is a FakeClock, so delays pass when a test says so."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from controller.standins import (
    AWSFaultProxy,
    AwsSeed,
    MotoStandIn,
    TargetHealth,
    TargetHealthSettings,
    sync_client,
)
from runtime.clock import FakeClock

# HealthyThresholdCount x HealthCheckIntervalSeconds of the groups made here.
CHECKS = 2 * 10
IPS = ["10.0.2.10", "10.0.2.11"]


@asynccontextmanager
async def elbv2_client(url: str) -> AsyncIterator[Any]:
    config = AioConfig(retries={"mode": "standard", "total_max_attempts": 1})
    async with get_session().create_client(
            "elbv2", region_name="us-west-2", endpoint_url=url, config=config,
            aws_access_key_id="testing", aws_secret_access_key="testing") as client:
        yield client


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def proxy(moto_standin: MotoStandIn, aws_seed: AwsSeed,
                clock: FakeClock) -> AsyncIterator[AWSFaultProxy]:
    async with AWSFaultProxy(moto_standin.url, clock=clock,
                             target_health=TargetHealthSettings()) as proxy:
        yield proxy


@pytest.fixture
async def elbv2(proxy: AWSFaultProxy) -> AsyncIterator[Any]:
    async with elbv2_client(proxy.url) as client:
        yield client


async def target_group(elbv2: Any, seed: AwsSeed, name: str = "tg", *,
                       target_type: str = "ip", port: int = 8080) -> str:
    resp = await elbv2.create_target_group(
        Name=name, Protocol="HTTP", Port=port, VpcId=seed.vpc_id, TargetType=target_type,
        HealthyThresholdCount=2, HealthCheckIntervalSeconds=10)
    return str(resp["TargetGroups"][0]["TargetGroupArn"])


async def load_balancer(elbv2: Any, seed: AwsSeed, name: str = "lb") -> str:
    resp = await elbv2.create_load_balancer(Name=name, Subnets=list(seed.public_subnets),
                                            Type="application")
    return str(resp["LoadBalancers"][0]["LoadBalancerArn"])


async def forward(elbv2: Any, lb_arn: str, tg_arn: str, port: int = 80) -> str:
    resp = await elbv2.create_listener(
        LoadBalancerArn=lb_arn, Protocol="HTTP", Port=port,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": tg_arn}])
    return str(resp["Listeners"][0]["ListenerArn"])


async def used_group(elbv2: Any, seed: AwsSeed, name: str = "tg") -> str:
    arn = await target_group(elbv2, seed, name)
    await forward(elbv2, await load_balancer(elbv2, seed, f"{name}-lb"), arn)
    return arn


async def health(elbv2: Any, arn: str, **kwargs: Any) -> list[tuple[Any, ...]]:
    """(Id, Port, State, Reason) of each description, in the order AWS answered."""
    resp = await elbv2.describe_target_health(TargetGroupArn=arn, **kwargs)
    return [(d["Target"]["Id"], d["Target"].get("Port"), d["TargetHealth"]["State"],
             d["TargetHealth"].get("Reason")) for d in resp["TargetHealthDescriptions"]]


async def test_a_new_target_is_initial_until_it_passes_its_health_checks(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock, proxy: AWSFaultProxy) -> None:
    arn = await used_group(elbv2, aws_seed)
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0], "Port": 80}])
    resp = await elbv2.describe_target_health(TargetGroupArn=arn)
    [description] = resp["TargetHealthDescriptions"]
    assert description["Target"] == {"Id": IPS[0], "Port": 80}
    assert description["HealthCheckPort"] == "80"  # traffic-port: the target's own port
    assert description["TargetHealth"] == {
        "State": "initial", "Reason": "Elb.RegistrationInProgress",
        "Description": "Target registration is in progress"}
    await clock.advance(CHECKS - 1)
    assert await health(elbv2, arn) == [
        (IPS[0], 80, "initial", "Elb.RegistrationInProgress")]
    await clock.advance(1)
    resp = await elbv2.describe_target_health(TargetGroupArn=arn)
    assert resp["TargetHealthDescriptions"][0]["TargetHealth"] == {"State": "healthy"}
    # The answer came from the model; everything else went to moto.
    sources = {(r.operation, r.source) for r in proxy.log}
    assert ("DescribeTargetHealth", "target-health") in sources
    assert ("RegisterTargets", "upstream") in sources
    assert ("CreateListener", "upstream") in sources


async def test_targets_of_a_group_no_load_balancer_uses_are_unused_until_one_does(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock) -> None:
    arn = await target_group(elbv2, aws_seed)
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": ip} for ip in IPS])
    resp = await elbv2.describe_target_health(TargetGroupArn=arn)
    assert [d["TargetHealth"] for d in resp["TargetHealthDescriptions"]] == [{
        "State": "unused", "Reason": "Target.NotInUse",
        "Description": "Target group is not configured to receive traffic from the load "
                       "balancer"}] * 2
    # Targets registered without a port get the group's.
    assert [d["Target"]["Port"] for d in resp["TargetHealthDescriptions"]] == [8080, 8080]
    await clock.advance(3600)  # no health checks run meanwhile
    lb_arn = await load_balancer(elbv2, aws_seed)
    listener = await forward(elbv2, lb_arn, arn)
    assert {s for _, _, s, _ in await health(elbv2, arn)} == {"initial"}
    await clock.advance(CHECKS)
    assert {s for _, _, s, _ in await health(elbv2, arn)} == {"healthy"}
    # A listener that forwards elsewhere leaves the group unused again.
    other = await target_group(elbv2, aws_seed, "other")
    await elbv2.modify_listener(ListenerArn=listener,
                                DefaultActions=[{"Type": "forward", "TargetGroupArn": other}])
    assert {r for _, _, _, r in await health(elbv2, arn)} == {"Target.NotInUse"}


async def test_a_rule_that_forwards_puts_a_group_in_use(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock) -> None:
    default, routed = (await target_group(elbv2, aws_seed, "default"),
                       await target_group(elbv2, aws_seed, "routed"))
    listener = await forward(elbv2, await load_balancer(elbv2, aws_seed), default)
    await elbv2.register_targets(TargetGroupArn=routed, Targets=[{"Id": IPS[0]}])
    assert [s for _, _, s, _ in await health(elbv2, routed)] == ["unused"]
    await elbv2.create_rule(
        ListenerArn=listener, Priority=10,
        Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}],
        Actions=[{"Type": "forward", "ForwardConfig": {
            "TargetGroups": [{"TargetGroupArn": routed, "Weight": 1}]}}])
    assert [s for _, _, s, _ in await health(elbv2, routed)] == ["initial"]


async def test_a_deregistered_target_drains_for_the_groups_deregistration_delay(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock, moto_standin: MotoStandIn) -> None:
    arn = await used_group(elbv2, aws_seed)
    await elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": "30"}])
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": ip} for ip in IPS])
    await clock.advance(CHECKS)
    await elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
    resp = await elbv2.describe_target_health(TargetGroupArn=arn)
    by_id = {d["Target"]["Id"]: d["TargetHealth"] for d in resp["TargetHealthDescriptions"]}
    assert by_id == {
        IPS[0]: {"State": "draining", "Reason": "Target.DeregistrationInProgress",
                 "Description": "Target deregistration is in progress"},
        IPS[1]: {"State": "healthy"}}
    # moto itself forgot the target at once.
    moto = sync_client("elbv2", moto_standin.url)
    try:
        at_moto = moto.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]
    finally:
        moto.close()
    assert [d["Target"]["Id"] for d in at_moto] == [IPS[1]]
    await clock.advance(29)
    assert (IPS[0], 8080, "draining", "Target.DeregistrationInProgress") in await health(
        elbv2, arn)
    await clock.advance(1)
    assert await health(elbv2, arn) == [(IPS[1], 8080, "healthy", None)]
    # Asked by id, a target that finished draining is simply not registered.
    assert await health(elbv2, arn, Targets=[{"Id": IPS[0]}]) == [
        (IPS[0], 8080, "unused", "Target.NotRegistered")]


async def test_the_targets_filter_answers_for_exactly_the_targets_asked_in_order(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock) -> None:
    arn = await used_group(elbv2, aws_seed)
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[
        {"Id": IPS[0], "Port": 80}, {"Id": IPS[1], "Port": 80}])
    await elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[1], "Port": 80}])
    resp = await elbv2.describe_target_health(TargetGroupArn=arn, Targets=[
        {"Id": "10.0.2.99", "Port": 80}, {"Id": IPS[1], "Port": 80}, {"Id": IPS[0], "Port": 80},
        {"Id": IPS[0], "Port": 81}])
    assert [(d["Target"]["Id"], d["Target"]["Port"], d["TargetHealth"]["State"],
             d["TargetHealth"].get("Reason"), d["TargetHealth"].get("Description"))
            for d in resp["TargetHealthDescriptions"]] == [
        ("10.0.2.99", 80, "unused", "Target.NotRegistered",
         "Target is not registered to the target group"),
        (IPS[1], 80, "draining", "Target.DeregistrationInProgress",
         "Target deregistration is in progress"),
        (IPS[0], 80, "initial", "Elb.RegistrationInProgress",
         "Target registration is in progress"),
        (IPS[0], 81, "unused", "Target.NotRegistered",
         "Target is not registered to the target group"),
    ]


async def test_tests_mark_targets_healthy_or_unhealthy(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock, proxy: AWSFaultProxy) -> None:
    model: TargetHealth = proxy.target_health
    arn = await used_group(elbv2, aws_seed)
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": ip} for ip in IPS])
    model.mark_healthy(arn, IPS[0])
    model.mark_unhealthy(arn, IPS[1], 8080)
    resp = await elbv2.describe_target_health(TargetGroupArn=arn)
    assert [d["TargetHealth"] for d in resp["TargetHealthDescriptions"]] == [
        {"State": "healthy"},
        {"State": "unhealthy", "Reason": "Target.FailedHealthChecks",
         "Description": "Health checks failed"}]
    await clock.advance(CHECKS)  # a mark outlasts the health-check delay
    model.mark_unhealthy(arn, IPS[0], reason="Target.Timeout")
    assert [(s, r) for _, _, s, r in await health(elbv2, arn)] == [
        ("unhealthy", "Target.Timeout"), ("unhealthy", "Target.FailedHealthChecks")]
    model.clear_mark(arn, IPS[1], 8080)
    assert [s for _, _, s, _ in await health(elbv2, arn)] == ["unhealthy", "healthy"]
    with pytest.raises(ValueError, match="unknown unhealthy reason"):
        model.mark_unhealthy(arn, IPS[0], reason="Target.Sad")
    # A mark ends with the registration: registered again, the target starts over.
    await elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
    await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
    assert (IPS[0], 8080, "initial", "Elb.RegistrationInProgress") in await health(elbv2, arn)


async def test_delays_are_scaled_fixed_or_held_until_a_test_completes_them(
        moto_standin: MotoStandIn, aws_seed: AwsSeed, clock: FakeClock) -> None:
    async with AWSFaultProxy(moto_standin.url, clock=clock,
                             target_health=TargetHealthSettings(time_scale=0.01)) as proxy, \
            elbv2_client(proxy.url) as elbv2:
        arn = await used_group(elbv2, aws_seed)
        await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": ip} for ip in IPS])
        await clock.advance(CHECKS * 0.01)
        assert {s for _, _, s, _ in await health(elbv2, arn)} == {"healthy"}
        # AWS's default deregistration delay (300 s) at 1/100.
        await elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
        await clock.advance(2.9)
        assert len(await health(elbv2, arn)) == 2
        await clock.advance(0.1)
        assert len(await health(elbv2, arn)) == 1

        model = proxy.enable_target_health(TargetHealthSettings(
            health_check_delay=math.inf, deregistration_delay=math.inf))
        await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": "10.0.2.12"}])
        await elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[1]}])
        await clock.advance(86400)
        assert sorted((i, s) for i, _, s, _ in await health(elbv2, arn)) == [
            (IPS[1], "draining"), ("10.0.2.12", "initial")]
        model.complete_draining(arn)
        model.mark_healthy(arn, "10.0.2.12")
        assert await health(elbv2, arn) == [("10.0.2.12", 8080, "healthy", None)]


def test_settings_reject_negative_delays() -> None:
    with pytest.raises(ValueError, match="health_check_delay"):
        TargetHealthSettings(health_check_delay=-1)
    with pytest.raises(ValueError, match="time_scale"):
        TargetHealthSettings(time_scale=-0.5)


async def test_changes_made_around_the_proxy_are_followed(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock, proxy: AWSFaultProxy,
        moto_standin: MotoStandIn) -> None:
    arn = await used_group(elbv2, aws_seed)
    other = await target_group(elbv2, aws_seed, "direct")
    moto = sync_client("elbv2", moto_standin.url)
    try:
        # Registered directly at moto: picked up, as registered now, at the next describe.
        moto.register_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
        assert await health(elbv2, arn) == [(IPS[0], 8080, "initial",
                                             "Elb.RegistrationInProgress")]
        await clock.advance(CHECKS)
        assert await health(elbv2, arn) == [(IPS[0], 8080, "healthy", None)]
        # Deregistered directly: gone without draining (the proxy never saw it).
        moto.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
        assert await health(elbv2, arn) == []
        # A listener made directly is seen once the proxy is told routing changed.
        await elbv2.register_targets(TargetGroupArn=other, Targets=[{"Id": IPS[1]}])
        assert [s for _, _, s, _ in await health(elbv2, other)] == ["unused"]
        lb = moto.create_load_balancer(Name="direct-lb", Subnets=list(aws_seed.public_subnets))
        moto.create_listener(LoadBalancerArn=lb["LoadBalancers"][0]["LoadBalancerArn"],
                             Protocol="HTTP", Port=80,
                             DefaultActions=[{"Type": "forward", "TargetGroupArn": other}])
        proxy.routing_changed()
        assert [s for _, _, s, _ in await health(elbv2, other)] == ["initial"]
    finally:
        moto.close()


async def test_a_stopped_instance_keeps_motos_invalid_state(
        elbv2: Any, aws_seed: AwsSeed, clock: FakeClock, moto_standin: MotoStandIn) -> None:
    arn = await target_group(elbv2, aws_seed, target_type="instance")
    await forward(elbv2, await load_balancer(elbv2, aws_seed), arn)
    await elbv2.register_targets(TargetGroupArn=arn,
                                 Targets=[{"Id": i} for i in aws_seed.instance_ids])
    ec2 = sync_client("ec2", moto_standin.url)
    try:
        ec2.stop_instances(InstanceIds=[aws_seed.instance_ids[0]])
    finally:
        ec2.close()
    await clock.advance(CHECKS)
    assert await health(elbv2, arn) == [
        (aws_seed.instance_ids[0], 8080, "unused", "Target.InvalidState"),
        (aws_seed.instance_ids[1], 8080, "healthy", None)]


async def test_errors_and_faults_still_answer_as_before(
        elbv2: Any, aws_seed: AwsSeed, proxy: AWSFaultProxy) -> None:
    missing = (f"arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/nope/"
               f"{'0' * 16}")
    with pytest.raises(ClientError) as excinfo:
        await elbv2.describe_target_health(TargetGroupArn=missing)
    assert excinfo.value.response["Error"]["Code"] == "TargetGroupNotFound"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError) as excinfo:
        await elbv2.register_targets(TargetGroupArn=missing, Targets=[{"Id": IPS[0]}])
    assert excinfo.value.response["Error"]["Code"] == "TargetGroupNotFound"
    arn = await used_group(elbv2, aws_seed)
    proxy.inject("Throttling", operation="DescribeTargetHealth", count=1)
    with pytest.raises(ClientError) as excinfo:
        await elbv2.describe_target_health(TargetGroupArn=arn)
    assert excinfo.value.response["Error"]["Code"] == "Throttling"
    # A throttled registration never reached moto, so the model has nothing either.
    proxy.inject("Throttling", operation="RegisterTargets", count=1)
    with pytest.raises(ClientError):
        await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
    assert await health(elbv2, arn) == []
    assert [(r.operation, r.outcome, r.source) for r in proxy.log
            if r.operation in ("DescribeTargetHealth", "RegisterTargets")] == [
        ("DescribeTargetHealth", "TargetGroupNotFound", "target-health"),
        ("RegisterTargets", "TargetGroupNotFound", "upstream"),
        ("DescribeTargetHealth", "Throttling", "injected"),
        ("RegisterTargets", "Throttling", "injected"),
        ("DescribeTargetHealth", "ok", "target-health"),
    ]


async def test_without_target_health_the_proxy_passes_mots_answer_through(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    async with elbv2_client(aws_proxy.url) as elbv2:
        arn = await target_group(elbv2, aws_seed)
        await elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": IPS[0]}])
        assert await health(elbv2, arn) == [(IPS[0], 8080, "healthy", None)]
    with pytest.raises(RuntimeError, match="not enabled"):
        aws_proxy.target_health  # noqa: B018
