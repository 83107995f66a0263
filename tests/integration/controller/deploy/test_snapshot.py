"""The region snapshot (controller/aws/snapshot.py): verifications of unchanged stacks
read load balancers, target groups, their tags and the VPC's security groups from one listing;
real changes never do; a verification that finds something to change changes it only after
reading AWS again; a listing older than its time is taken again."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSSettings
from controller.deploy import DeployerSettings, DeployResult, StackDeployer
from controller.model import Stack
from controller.standins import AWSFaultProxy, AwsSeed
from runtime.clock import FakeClock
from runtime.reconcile import LOW, ReconcilePriority, current_reconcile
from tests.integration.controller.deploy.stacks import alb_stack, guarded_stack, nlb_stack

# Per stack, a verification still reads what no listing gives.
PER_STACK = {"DescribeListeners", "DescribeRules", "DescribeTags", "DescribeListenerCertificates",
             "DescribeLoadBalancerAttributes", "DescribeTargetGroupAttributes"}


def _settings(proxy: AWSFaultProxy, seed: AwsSeed) -> AWSSettings:
    return AWSSettings(region=seed.region, endpoint_url=proxy.url, access_key="testing",
                       secret_key="testing")


async def _verify(deployer: StackDeployer, stack: Stack) -> DeployResult:
    with current_reconcile(priority=ReconcilePriority(LOW), reconcile_id=stack.id):
        return await deployer.deploy(stack, rewrite_write_only=False)


def _stacks(seed: AwsSeed) -> list[Stack]:
    return [alb_stack(seed, "web1"), nlb_stack(seed, "svc2"), guarded_stack(seed, "g3"),
            guarded_stack(seed, "g4", kind="nlb")]


async def _converged(proxy: AWSFaultProxy, seed: AwsSeed, stacks: list[Stack]) -> None:
    async with AWSClientPool(_settings(proxy, seed), registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        for stack in stacks:
            await deployer.deploy(stack)


async def test_verifications_read_one_listing_and_change_nothing(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    stacks = _stacks(aws_seed)
    await _converged(aws_proxy, aws_seed, stacks)
    aws_proxy.clear_log()
    async with AWSClientPool(_settings(aws_proxy, aws_seed), registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        # As the controllers' caches do: every stack may still use the backend group.
        deployer.backend.add_claimants(lambda: [(s.kind, s.id) for s in stacks])
        results = [await _verify(deployer, s) for s in stacks]
    assert [r.mutating_calls for r in results] == [0] * len(stacks)
    assert deployer.snapshot.taken == 1
    ops = Counter(r.operation for r in aws_proxy.log)
    # The listing: one page of each (the backend group is looked up once per process).
    assert ops["DescribeLoadBalancers"] == 1
    assert ops["DescribeTargetGroups"] == 1
    assert not [r for r in aws_proxy.log if r.operation == "DescribeLoadBalancers"
                and (r.params.get("Names") or r.params.get("LoadBalancerArns"))]
    # The VPC's groups, listed along, and the backend group's own look-up (once per process).
    assert ops["DescribeSecurityGroups"] == 2
    # The per-stack reads are those no listing holds, and no tags of a listed resource.
    listed = {arn for r in aws_proxy.log if r.operation == "DescribeTags"
              for arn in r.params.get("ResourceArns") or []
              if ":listener" not in arn}
    tags_calls = [r for r in aws_proxy.log if r.operation == "DescribeTags"]
    assert len(listed) > 0  # the listing's own
    assert len(tags_calls) <= 1 + len(stacks)
    for r in aws_proxy.log:
        assert r.operation in PER_STACK | {"DescribeLoadBalancers", "DescribeTargetGroups",
                                           "DescribeSecurityGroups", "DescribeSubnets"}, r


async def test_real_changes_never_read_the_listing(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    stacks = _stacks(aws_seed)[:2]
    await _converged(aws_proxy, aws_seed, stacks)
    async with AWSClientPool(_settings(aws_proxy, aws_seed), registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        await _verify(deployer, stacks[0])
        aws_proxy.clear_log()
        result = await deployer.deploy(stacks[1])  # outside any LOW reconcile
    assert result.mutating_calls == 0
    assert deployer.snapshot.taken == 1
    names = [r for r in aws_proxy.log if r.operation == "DescribeLoadBalancers"]
    assert [r.params.get("Names") for r in names] == [
        [next(iter(stacks[1].load_balancers.values())).name]]


async def test_drift_found_in_the_listing_is_repaired_from_fresh_reads(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    stack = guarded_stack(aws_seed, "drift")
    await _converged(aws_proxy, aws_seed, [stack])
    lb = elbv2.describe_load_balancers()["LoadBalancers"][0]
    elbv2.add_tags(ResourceArns=[lb["LoadBalancerArn"]], Tags=[{"Key": "team",
                                                                "Value": "by-hand"}])
    aws_proxy.clear_log()
    async with AWSClientPool(_settings(aws_proxy, aws_seed), registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        result = await _verify(deployer, stack)
        again = await _verify(deployer, stack)
    # The tag added by hand goes, and only after the fresh run read the load balancer itself.
    mutating = [r for r in aws_proxy.log if r.mutating]
    assert [r.operation for r in mutating] == ["RemoveTags"]
    fresh = [i for i, r in enumerate(aws_proxy.log) if r.operation == "DescribeLoadBalancers"
             and r.params.get("Names")]
    assert fresh
    assert fresh[0] < aws_proxy.log.index(mutating[0])
    assert result.mutating_calls == 1
    tags = elbv2.describe_tags(ResourceArns=[lb["LoadBalancerArn"]])["TagDescriptions"][0]
    assert "team" not in {t["Key"] for t in tags["Tags"]}
    # The listing still says "by-hand" (it was taken before): the next verification finds the
    # difference again, and again reads AWS before doing anything, which now has nothing to do.
    assert again.mutating_calls == 0


async def test_a_listing_older_than_its_time_is_taken_again(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    stacks = _stacks(aws_seed)[:2]
    await _converged(aws_proxy, aws_seed, stacks)
    clock = FakeClock()
    async with AWSClientPool(_settings(aws_proxy, aws_seed), registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"),
                                 clock=clock)
        await asyncio.gather(*(_verify(deployer, s) for s in stacks))
        assert deployer.snapshot.taken == 1
        await clock.advance(299.0)
        await _verify(deployer, stacks[0])
        assert deployer.snapshot.taken == 1
        await clock.advance(2.0)
        await _verify(deployer, stacks[0])
        assert deployer.snapshot.taken == 2

