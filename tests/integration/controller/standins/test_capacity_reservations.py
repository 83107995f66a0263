"""The stand-in answers ModifyCapacityReservation and DescribeCapacityReservation as AWS's API
reference says (moto_capacity.py): the reservation shared evenly over the load balancer's zones,
a reset, and AWS's refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.standins import AwsSeed, moto_capacity


def _alb(elbv2: Any, seed: AwsSeed, name: str = "cap") -> str:
    arn: str = elbv2.create_load_balancer(
        Name=name, Subnets=list(seed.public_subnets[:2]), Type="application",
        Scheme="internal")["LoadBalancers"][0]["LoadBalancerArn"]
    elbv2.describe_load_balancers(LoadBalancerArns=[arn])  # active from now on
    return arn


def _code(info: pytest.ExceptionInfo[ClientError]) -> str:
    return str(info.value.response["Error"]["Code"])


@pytest.fixture
def limit() -> Iterator[None]:
    before = moto_capacity.CAPACITY_UNITS_LIMIT
    yield
    moto_capacity.CAPACITY_UNITS_LIMIT = before


def test_no_reservation_then_one_shared_by_the_zones_then_reset(elbv2: Any,
                                                                aws_seed: AwsSeed) -> None:
    arn = _alb(elbv2, aws_seed)
    empty = elbv2.describe_capacity_reservation(LoadBalancerArn=arn)
    assert empty["CapacityReservationState"] == []
    assert "MinimumLoadBalancerCapacity" not in empty
    assert empty["DecreaseRequestsRemaining"] == 2
    set_ = elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                             MinimumLoadBalancerCapacity={"CapacityUnits": 300})
    assert set_["MinimumLoadBalancerCapacity"] == {"CapacityUnits": 300}
    described = elbv2.describe_capacity_reservation(LoadBalancerArn=arn)
    assert described["MinimumLoadBalancerCapacity"] == {"CapacityUnits": 300}
    states = described["CapacityReservationState"]
    assert [s["State"]["Code"] for s in states] == ["provisioned", "provisioned"]
    assert [s["EffectiveCapacityUnits"] for s in states] == [150.0, 150.0]
    assert all(s["AvailabilityZone"] for s in states)
    assert "LastModifiedTime" in described
    reset = elbv2.modify_capacity_reservation(LoadBalancerArn=arn, ResetCapacityReservation=True)
    assert "MinimumLoadBalancerCapacity" not in reset
    assert reset["CapacityReservationState"] == []
    assert reset["DecreaseRequestsRemaining"] == 1  # a reset is a decrease


def test_refusals(elbv2: Any, aws_seed: AwsSeed, limit: None) -> None:
    arn = _alb(elbv2, aws_seed)
    with pytest.raises(ClientError) as info:
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn)
    assert _code(info) == "ValidationError"
    with pytest.raises(ClientError) as info:
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                          MinimumLoadBalancerCapacity={"CapacityUnits": 0})
    assert _code(info) == "ValidationError"
    with pytest.raises(ClientError) as info:
        elbv2.describe_capacity_reservation(LoadBalancerArn=arn + "x")
    assert _code(info) == "LoadBalancerNotFound"
    moto_capacity.CAPACITY_UNITS_LIMIT = 500
    with pytest.raises(ClientError) as info:
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                          MinimumLoadBalancerCapacity={"CapacityUnits": 501})
    assert _code(info) == "CapacityUnitsLimitExceeded"
    # Two decreases a day.
    for units in (400, 300, 200):
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                          MinimumLoadBalancerCapacity={"CapacityUnits": units})
    with pytest.raises(ClientError) as info:
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                          MinimumLoadBalancerCapacity={"CapacityUnits": 100})
    assert _code(info) == "CapacityDecreaseRequestLimitExceeded"
    described = elbv2.describe_capacity_reservation(LoadBalancerArn=arn)
    assert described["MinimumLoadBalancerCapacity"] == {"CapacityUnits": 200}
    assert described["DecreaseRequestsRemaining"] == 0
    # An increase is always allowed.
    elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                      MinimumLoadBalancerCapacity={"CapacityUnits": 450})


def test_not_while_provisioning(elbv2: Any, aws_seed: AwsSeed) -> None:
    arn = elbv2.create_load_balancer(
        Name="young", Subnets=list(aws_seed.public_subnets[:2]), Type="application",
        Scheme="internal")["LoadBalancers"][0]["LoadBalancerArn"]
    with pytest.raises(ClientError) as info:
        elbv2.modify_capacity_reservation(LoadBalancerArn=arn,
                                          MinimumLoadBalancerCapacity={"CapacityUnits": 100})
    assert _code(info) == "OperationNotPermitted"
