"""The stand-in refuses CreateRule past AWS's rules per load balancer (100, default rules not
counted) with `TooManyRules`, and past the unique target groups a load balancer may use (100)
with `TooManyUniqueTargetGroupsPerLoadBalancer`, as AWS does (moto_fidelity.py); moto has no
limit."""

from __future__ import annotations

from typing import Any

import botocore.exceptions
import pytest

from controller.standins import AwsSeed
from controller.standins.moto_fidelity import (
    RULES_PER_LOAD_BALANCER,
    TARGET_GROUPS_PER_LOAD_BALANCER,
)


def test_the_101st_rule_of_a_load_balancer_is_too_many(elbv2: Any, aws_seed: AwsSeed) -> None:
    lb = elbv2.create_load_balancer(Name="quota", Subnets=list(aws_seed.public_subnets[:2]),
                                    Type="application")["LoadBalancers"][0]
    tg = elbv2.create_target_group(Name="quota", Protocol="HTTP", Port=80,
                                   VpcId=aws_seed.vpc_id)["TargetGroups"][0]["TargetGroupArn"]
    forward = [{"Type": "forward", "TargetGroupArn": tg}]
    listeners = [elbv2.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Protocol="HTTP",
                                       Port=port, DefaultActions=forward)
                 ["Listeners"][0]["ListenerArn"] for port in (80, 8080)]
    for i in range(RULES_PER_LOAD_BALANCER):  # counted across the load balancer's listeners
        elbv2.create_rule(ListenerArn=listeners[i % 2], Priority=i + 1, Actions=forward,
                          Conditions=[{"Field": "path-pattern", "Values": [f"/{i}"]}])
    with pytest.raises(botocore.exceptions.ClientError) as exc:
        elbv2.create_rule(ListenerArn=listeners[0], Priority=500, Actions=forward,
                          Conditions=[{"Field": "path-pattern", "Values": ["/more"]}])
    assert exc.value.response["Error"]["Code"] == "TooManyRules"


def test_a_rule_past_the_target_groups_a_load_balancer_may_use(elbv2: Any,
                                                               aws_seed: AwsSeed) -> None:
    lb = elbv2.create_load_balancer(Name="tgs", Subnets=list(aws_seed.public_subnets[:2]),
                                    Type="application")["LoadBalancers"][0]
    groups = [elbv2.create_target_group(Name=f"tgs-{i}", Protocol="HTTP", Port=80,
                                        VpcId=aws_seed.vpc_id)["TargetGroups"][0]
              ["TargetGroupArn"] for i in range(TARGET_GROUPS_PER_LOAD_BALANCER + 1)]
    listener = elbv2.create_listener(
        LoadBalancerArn=lb["LoadBalancerArn"], Protocol="HTTP", Port=80,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": groups[0]}]
    )["Listeners"][0]["ListenerArn"]
    # Weighted forwards count each group once, the default action's too.
    for i in range(1, TARGET_GROUPS_PER_LOAD_BALANCER - 1, 2):  # groups 0 to 98
        elbv2.create_rule(ListenerArn=listener, Priority=i, Conditions=[
            {"Field": "path-pattern", "Values": [f"/{i}"]}], Actions=[{
                "Type": "forward", "ForwardConfig": {"TargetGroups": [
                    {"TargetGroupArn": groups[i]}, {"TargetGroupArn": groups[i + 1]},
                    {"TargetGroupArn": groups[0]}]}}])
    elbv2.create_rule(ListenerArn=listener, Priority=99, Conditions=[  # the 100th group
        {"Field": "path-pattern", "Values": ["/99"]}],
        Actions=[{"Type": "forward", "TargetGroupArn": groups[99]}])
    with pytest.raises(botocore.exceptions.ClientError) as exc:
        elbv2.create_rule(ListenerArn=listener, Priority=500, Conditions=[
            {"Field": "path-pattern", "Values": ["/more"]}],
            Actions=[{"Type": "forward", "TargetGroupArn": groups[-1]}])
    assert exc.value.response["Error"]["Code"] == "TooManyUniqueTargetGroupsPerLoadBalancer"
    # A group the load balancer uses already is no new one.
    elbv2.create_rule(ListenerArn=listener, Priority=501, Conditions=[
        {"Field": "path-pattern", "Values": ["/same"]}],
        Actions=[{"Type": "forward", "TargetGroupArn": groups[5]}])
