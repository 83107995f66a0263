"""QUIC in the stand-in as AWS's ELBv2 API reference describes it (moto alone refuses the
protocols and ignores `QuicServerId`), seen through the fault proxy by a plain client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AWSFaultProxy, AwsSeed, MotoStandIn, TargetHealthSettings
from runtime.clock import FakeClock
from tests.integration.controller.standins.test_target_health import elbv2_client

ID_A = "0x0123456789abcdef"
ID_B = "0x00000000000000ff"


@pytest.fixture
async def elbv2(moto_standin: MotoStandIn, aws_seed: AwsSeed) -> AsyncIterator[Any]:
    async with AWSFaultProxy(moto_standin.url, clock=FakeClock(),
                             target_health=TargetHealthSettings()) as proxy, \
            elbv2_client(proxy.url) as client:
        yield client


async def _group(elbv2: Any, seed: AwsSeed, name: str, protocol: str,
                 target_type: str = "ip") -> str:
    resp = await elbv2.create_target_group(Name=name, Protocol=protocol, Port=443,
                                           VpcId=seed.vpc_id, TargetType=target_type)
    return str(resp["TargetGroups"][0]["TargetGroupArn"])


async def _nlb(elbv2: Any, seed: AwsSeed, name: str) -> str:
    resp = await elbv2.create_load_balancer(Name=name, Subnets=list(seed.public_subnets),
                                            Type="network")
    return str(resp["LoadBalancers"][0]["LoadBalancerArn"])


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return str(caught.value.response["Error"]["Code"])


async def test_quic_groups_and_listeners(elbv2: Any, aws_seed: AwsSeed) -> None:
    quic = await _group(elbv2, aws_seed, "q", "QUIC")
    tcp_quic = await _group(elbv2, aws_seed, "tq", "TCP_QUIC")
    udp = await _group(elbv2, aws_seed, "u", "UDP")
    found = (await elbv2.describe_target_groups(TargetGroupArns=[quic, tcp_quic]))[
        "TargetGroups"]
    assert sorted(g["Protocol"] for g in found) == ["QUIC", "TCP_QUIC"]
    lb = await _nlb(elbv2, aws_seed, "n")
    listener = (await elbv2.create_listener(
        LoadBalancerArn=lb, Protocol="QUIC", Port=443,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": quic}]))["Listeners"][0]
    assert listener["Protocol"] == "QUIC"
    # A QUIC listener forwards to QUIC groups only; a QUIC group only from QUIC listeners.
    for protocol, group in (("QUIC", udp), ("UDP", quic)):
        with pytest.raises(ClientError) as caught:
            await elbv2.create_listener(
                LoadBalancerArn=lb, Protocol=protocol, Port=444,
                DefaultActions=[{"Type": "forward", "TargetGroupArn": group}])
        assert _code(caught) == "IncompatibleProtocols"
    changed = (await elbv2.modify_listener(
        ListenerArn=listener["ListenerArn"], Protocol="TCP_QUIC",
        DefaultActions=[{"Type": "forward", "TargetGroupArn": tcp_quic}]))["Listeners"][0]
    assert changed["Protocol"] == "TCP_QUIC"
    with pytest.raises(ClientError) as caught:
        await _group(elbv2, aws_seed, "qa", "QUIC", target_type="alb")
    assert _code(caught) == "ValidationError"


async def test_quic_server_ids(elbv2: Any, aws_seed: AwsSeed) -> None:
    quic = await _group(elbv2, aws_seed, "q", "QUIC")
    udp = await _group(elbv2, aws_seed, "u", "UDP")
    for group, target in ((quic, {"Id": "10.0.2.10"}),
                          (quic, {"Id": "10.0.2.10", "QuicServerId": "0xABC"}),
                          (udp, {"Id": "10.0.2.10", "QuicServerId": ID_A})):
        with pytest.raises(ClientError) as caught:
            await elbv2.register_targets(TargetGroupArn=group, Targets=[target])
        assert _code(caught) == "ValidationError"
    await elbv2.register_targets(TargetGroupArn=quic, Targets=[
        {"Id": "10.0.2.10", "QuicServerId": ID_A}, {"Id": "10.0.2.11", "QuicServerId": ID_B}])
    resp = await elbv2.describe_target_health(TargetGroupArn=quic)
    assert sorted((d["Target"]["Id"], d["Target"]["QuicServerId"])
                  for d in resp["TargetHealthDescriptions"]) == [
        ("10.0.2.10", ID_A), ("10.0.2.11", ID_B)]
    # A registered target keeps its server ID, and one ID is one target's.
    for target in ({"Id": "10.0.2.10", "QuicServerId": ID_B},
                   {"Id": "10.0.2.12", "QuicServerId": ID_A}):
        with pytest.raises(ClientError) as caught:
            await elbv2.register_targets(TargetGroupArn=quic, Targets=[target])
        assert _code(caught) == "ValidationError"
    await elbv2.deregister_targets(TargetGroupArn=quic, Targets=[{"Id": "10.0.2.10"}])
    await elbv2.register_targets(TargetGroupArn=quic, Targets=[
        {"Id": "10.0.2.10", "QuicServerId": "0x0000000000000001"}])
