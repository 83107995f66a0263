"""Paced verifications of many unchanged stacks, run together after a restart (a new deployer,
nothing cached) while the verification budget is in debt, share one listing of the region and
their other Describe calls by ARN or name, and still repair drift made by hand: a rule
changed, a listener deleted, a load balancer attribute changed."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSSettings
from controller.deploy import DeployerSettings, DeployResult, StackDeployer
from controller.model import Stack
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.reconcile import LOW, ReconcilePriority, current_reconcile
from tests.integration.controller.deploy.stacks import alb_stack, nlb_stack

SHARED = ("DescribeLoadBalancers", "DescribeTags")


def _settings(proxy: AWSFaultProxy, seed: AwsSeed, **extra: Any) -> AWSSettings:
    return AWSSettings(region=seed.region, endpoint_url=proxy.url, access_key="testing",
                       secret_key="testing", **extra)


async def _verify_all(pool: AWSClientPool, stacks: list[Stack]) -> list[DeployResult]:
    """Every stack's verification at once, each as a paced LOW-lane reconcile."""
    deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))

    async def verify(stack: Stack) -> DeployResult:
        with current_reconcile(priority=ReconcilePriority(LOW), reconcile_id=stack.id):
            return await deployer.deploy(stack, rewrite_write_only=False)

    return await asyncio.gather(*(verify(s) for s in stacks))


def _by_lb(elbv2: Any) -> dict[str, str]:
    return {lb["LoadBalancerName"]: lb["LoadBalancerArn"]
            for lb in elbv2.describe_load_balancers()["LoadBalancers"]}


async def test_verifications_share_describe_calls_and_still_repair_drift(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    stacks = [alb_stack(aws_seed, f"web{i}") if i % 2 else nlb_stack(aws_seed, f"svc{i}")
              for i in range(8)]
    async with AWSClientPool(_settings(aws_proxy, aws_seed),
                             registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        await asyncio.gather(*(deployer.deploy(s) for s in stacks))

    # Drift by hand on one ALB: a rule's conditions, its HTTP listener gone, an attribute.
    drifted = stacks[1]
    lb_arn = _by_lb(elbv2)[next(iter(drifted.load_balancers.values())).name]
    listeners = {lis["Port"]: lis for lis in
                 elbv2.describe_listeners(LoadBalancerArn=lb_arn)["Listeners"]}
    rule = next(r for r in elbv2.describe_rules(ListenerArn=listeners[443]["ListenerArn"])[
        "Rules"] if not r["IsDefault"])
    elbv2.modify_rule(RuleArn=rule["RuleArn"], Conditions=[
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/changed/*"]}}])
    elbv2.delete_listener(ListenerArn=listeners[80]["ListenerArn"])
    elbv2.modify_load_balancer_attributes(LoadBalancerArn=lb_arn, Attributes=[
        {"Key": "idle_timeout.timeout_seconds", "Value": "999"}])

    # A restart: a new pool (a verification budget in debt as soon as they start) and a new
    # deployer (nothing cached), every stack verified at once.
    budget = _settings(aws_proxy, aws_seed, verify_calls_qps=20.0, verify_calls_burst=1)
    aws_proxy.clear_log()
    async with AWSClientPool(budget, registry=CollectorRegistry()) as pool:
        results = await _verify_all(pool, stacks)
        first = list(aws_proxy.log)
        aws_proxy.clear_log()
        again = await _verify_all(pool, stacks)

    shared = {op: [r for r in first if r.operation == op] for op in SHARED}
    # Alone, each verification would make one DescribeLoadBalancers (by name: nothing is
    # cached) and at least two DescribeTags (its load balancer's, then everything else's).
    # Load balancers and target groups come from one listing of the region (snapshot.py),
    # listed again only for the drifted stack's fresh run; the tags of listeners and rules,
    # which no listing gives, are asked for together.
    by_name = [r for r in shared["DescribeLoadBalancers"] if r.params.get("Names")]
    assert len(shared["DescribeLoadBalancers"]) - len(by_name) == 1, shared
    assert len(by_name) <= 1, by_name
    assert len(shared["DescribeTags"]) < len(stacks), len(shared["DescribeTags"])
    assert any(":listener" in arn for r in shared["DescribeTags"]
               for arn in r.params.get("ResourceArns") or [])
    assert all(len(r.params.get("ResourceArns") or []) <= 20 for r in shared["DescribeTags"])

    # The drift was seen and repaired, by the drifted stack's verification alone.
    assert [r.mutating_calls > 0 for r in results] == [s is drifted for s in stacks]
    mutating = sorted(r.operation for r in first if r.mutating)
    assert mutating == ["CreateListener", "ModifyLoadBalancerAttributes", "ModifyRule"]
    attrs = {a["Key"]: a["Value"] for a in elbv2.describe_load_balancer_attributes(
        LoadBalancerArn=lb_arn)["Attributes"]}
    assert attrs["idle_timeout.timeout_seconds"] == "120"
    ports = {lis["Port"] for lis in elbv2.describe_listeners(LoadBalancerArn=lb_arn)[
        "Listeners"]}
    assert ports == {80, 443}
    # And then nothing is left to repair.
    assert [r for r in aws_proxy.log if r.mutating] == []
    assert sum(r.mutating_calls for r in again) == 0
