"""The stand-in registers into a target group of target type `alb` what AWS accepts there
(moto_fidelity.py): an Application Load Balancer of the group's VPC with a listener on the
target's port, one per group."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed


def _balancer(elbv2: Any, seed: AwsSeed, name: str, kind: str = "application") -> str:
    arn: str = elbv2.create_load_balancer(
        Name=name, Subnets=list(seed.public_subnets[:2]), Type=kind,
        Scheme="internal")["LoadBalancers"][0]["LoadBalancerArn"]
    return arn


def _listen(elbv2: Any, lb_arn: str, port: int) -> None:
    elbv2.create_listener(LoadBalancerArn=lb_arn, Protocol="HTTP", Port=port, DefaultActions=[
        {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}])


def _alb_group(elbv2: Any, seed: AwsSeed, name: str = "front") -> str:
    arn: str = elbv2.create_target_group(
        Name=name, Protocol="TCP", Port=80, VpcId=seed.vpc_id, TargetType="alb",
        HealthCheckProtocol="HTTP", HealthCheckPath="/")["TargetGroups"][0]["TargetGroupArn"]
    return arn


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def test_an_alb_with_a_listener_on_the_port_is_registered(elbv2: Any, aws_seed: AwsSeed) -> None:
    alb = _balancer(elbv2, aws_seed, "alb-a")
    _listen(elbv2, alb, 8080)
    group = _alb_group(elbv2, aws_seed)
    elbv2.register_targets(TargetGroupArn=group, Targets=[{"Id": alb, "Port": 8080}])
    found = elbv2.describe_target_health(TargetGroupArn=group)["TargetHealthDescriptions"]
    assert [(d["Target"]["Id"], d["Target"]["Port"]) for d in found] == [(alb, 8080)]


def test_what_is_not_a_listening_alb_is_refused(elbv2: Any, aws_seed: AwsSeed) -> None:
    alb = _balancer(elbv2, aws_seed, "alb-b")
    nlb = _balancer(elbv2, aws_seed, "nlb-b", "network")
    group = _alb_group(elbv2, aws_seed)
    for target in ({"Id": "i-0123456789abcdef0"}, {"Id": nlb, "Port": 80},
                   {"Id": alb, "Port": 80}):  # the ALB does not listen yet
        with pytest.raises(ClientError) as exc:
            elbv2.register_targets(TargetGroupArn=group, Targets=[target])
        assert _code(exc) == "InvalidTarget"
    assert elbv2.describe_target_health(TargetGroupArn=group)["TargetHealthDescriptions"] == []


def test_a_group_holds_one_alb(elbv2: Any, aws_seed: AwsSeed) -> None:
    first, second = _balancer(elbv2, aws_seed, "alb-c"), _balancer(elbv2, aws_seed, "alb-d")
    _listen(elbv2, first, 80)
    _listen(elbv2, second, 80)
    group = _alb_group(elbv2, aws_seed)
    elbv2.register_targets(TargetGroupArn=group, Targets=[{"Id": first}])
    with pytest.raises(ClientError) as exc:
        elbv2.register_targets(TargetGroupArn=group, Targets=[{"Id": second}])
    assert _code(exc) == "TooManyTargets"
    # The same one again is fine.
    elbv2.register_targets(TargetGroupArn=group, Targets=[{"Id": first}])
