"""The stand-in's target control port (moto alone drops `TargetControlPort`): kept and answered
for ALB target groups of instance or ip targets, refused elsewhere, as AWS's API reference
says."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed


def test_the_target_control_port(elbv2: Any, aws_seed: AwsSeed) -> None:
    created = elbv2.create_target_group(
        Name="agent", Protocol="HTTP", Port=80, VpcId=aws_seed.vpc_id, TargetType="ip",
        TargetControlPort=9000)["TargetGroups"][0]
    assert created["TargetControlPort"] == 9000
    [found] = elbv2.describe_target_groups(Names=["agent"])["TargetGroups"]
    assert found["TargetControlPort"] == 9000
    plain = elbv2.create_target_group(Name="plain", Protocol="HTTP", Port=80,
                                      VpcId=aws_seed.vpc_id, TargetType="ip")["TargetGroups"][0]
    assert "TargetControlPort" not in plain
    for name, protocol, target_type, port in (("nlb", "TCP", "ip", 9000),
                                              ("lambda", "HTTP", "lambda", 9000),
                                              ("range", "HTTP", "ip", 70000)):
        with pytest.raises(ClientError) as caught:
            elbv2.create_target_group(Name=name, Protocol=protocol, Port=80,
                                      VpcId=aws_seed.vpc_id, TargetType=target_type,
                                      TargetControlPort=port)
        assert caught.value.response["Error"]["Code"] == "ValidationError", name
