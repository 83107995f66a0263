"""The deployer against moto through the fault proxy: from empty, idempotence, deletion."""

from __future__ import annotations

from typing import Any

from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import (
    alb_stack,
    assert_no_duplicates,
    inventory,
    nlb_stack,
)


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


async def test_alb_stack_converges_from_empty_and_second_run_is_read_only(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    stack = alb_stack(aws_seed)
    result = await deployer.deploy(stack)

    inv = inventory(elbv2)
    assert_no_duplicates(inv)
    (lb,) = inv["lbs"]
    assert lb["LoadBalancerName"] == stack.load_balancers["LoadBalancer"].name
    assert result.load_balancer is not None
    assert result.load_balancer.dns_name == lb["DNSName"]
    assert {az["SubnetId"] for az in lb["AvailabilityZones"]} == set(aws_seed.public_subnets)
    assert len(inv["tgs"]) == 2
    listeners = {lis["Port"]: lis for lis in inv["listeners"][lb["LoadBalancerArn"]]}
    assert sorted(listeners) == [80, 443]
    assert listeners[443]["Certificates"][0]["CertificateArn"] == aws_seed.certificate_arn
    rules = inv["rules"][listeners[443]["ListenerArn"]]
    assert sorted(r["Priority"] for r in rules) == ["1", "2"]
    attrs = {a["Key"]: a["Value"] for a in elbv2.describe_load_balancer_attributes(
        LoadBalancerArn=lb["LoadBalancerArn"])["Attributes"]}
    assert attrs["idle_timeout.timeout_seconds"] == "120"
    tgb = result.target_group_bindings["default/web-api:80"]
    assert tgb.target_group_arn == result.target_groups["default/web-api:80"]
    assert result.mutating_calls == len(_mutations(aws_proxy)) > 0

    aws_proxy.clear_log()
    again = await deployer.deploy(stack)
    assert _mutations(aws_proxy) == []
    assert again.mutating_calls == 0
    assert again.load_balancer is not None
    assert (again.load_balancer.arn, again.load_balancer.dns_name) == (
        result.load_balancer.arn, result.load_balancer.dns_name)
    assert result.load_balancer.state == "provisioning"  # nothing waits for it


async def test_nlb_stack_converges_and_a_restarted_deployer_makes_no_changes(
        deployer: StackDeployer, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    stack = nlb_stack(aws_seed)
    result = await deployer.deploy(stack)
    inv = inventory(elbv2)
    assert_no_duplicates(inv)
    (lb,) = inv["lbs"]
    assert lb["Type"] == "network"
    assert lb["Scheme"] == "internal"
    ports = sorted(lis["Port"] for lis in inv["listeners"][lb["LoadBalancerArn"]])
    assert ports == [53, 443]
    assert len(result.target_groups) == 2

    # A new process: nothing cached, found again by name and tags, no region-wide listing.
    aws_proxy.clear_log()
    fresh = StackDeployer(aws_pool, deployer_settings)
    again = await fresh.deploy(stack)
    assert _mutations(aws_proxy) == []
    assert again.target_groups == result.target_groups
    assert len(aws_proxy.records(operation="DescribeLoadBalancers")) == 1  # by name
    assert not fresh.owned.scanned


async def test_delete_stack_removes_everything_and_is_idempotent(
        deployer: StackDeployer, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    keep = nlb_stack(aws_seed, "other")
    await deployer.deploy(alb_stack(aws_seed))
    await deployer.deploy(keep)
    await deployer.delete_stack("default/web", "ingress")
    inv = inventory(elbv2)
    assert [lb["LoadBalancerName"] for lb in inv["lbs"]] == [
        keep.load_balancers["LoadBalancer"].name]
    assert len(inv["tgs"]) == 2

    aws_proxy.clear_log()
    second = await deployer.delete_stack("default/web", "ingress")
    assert second.mutating_calls == 0
    assert _mutations(aws_proxy) == []

    # A process that never saw the stack discovers it by tags (one scan) and deletes it.
    fresh = StackDeployer(aws_pool, deployer_settings)
    await fresh.delete_stack("default/other", "service")
    assert inventory(elbv2)["lbs"] == []
    assert inventory(elbv2)["tgs"] == []
    aws_proxy.clear_log()
    await fresh.delete_stack("default/other", "service")
    await fresh.delete_stack("default/never-existed", "service")
    assert aws_proxy.log == []


async def test_model_changes_modify_in_place_and_replace_what_cannot_change(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    await deployer.deploy(alb_stack(aws_seed))
    aws_proxy.clear_log()
    await deployer.deploy(alb_stack(aws_seed, health_path="/ready", idle_timeout="60"))
    assert sorted(_mutations(aws_proxy)) == ["ModifyLoadBalancerAttributes", "ModifyTargetGroup"]

    # A scheme change gives a new name: a new load balancer, the old one deleted, and the
    # target group no longer used deleted after it.
    changed = alb_stack(aws_seed, scheme="internal", with_second_tg=False)
    await deployer.deploy(changed)
    inv = inventory(elbv2)
    assert_no_duplicates(inv)
    assert [lb["LoadBalancerName"] for lb in inv["lbs"]] == [
        changed.load_balancers["LoadBalancer"].name]
    assert [tg["TargetGroupName"] for tg in inv["tgs"]] == [
        tg.name for tg in changed.target_groups.values()]
    aws_proxy.clear_log()
    await deployer.deploy(changed)
    assert _mutations(aws_proxy) == []


async def test_a_fresh_stack_is_created_without_the_region_scan(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    # A restarted process creating a new object's load balancer: a stack that may have been
    # deployed before is first looked for under older names (a one-time region scan); one the
    # caller knows is new is not, so it does not wait behind listing every load balancer.
    cold = StackDeployer(aws_pool, deployer_settings)
    await cold.deploy(nlb_stack(aws_seed, "brand-new"), fresh=True)
    assert not cold.owned.scanned
    assert len(inventory(elbv2)["lbs"]) == 1

    maybe_known = StackDeployer(aws_pool, deployer_settings)
    await maybe_known.deploy(nlb_stack(aws_seed, "seen-before"))
    assert maybe_known.owned.scanned
    assert_no_duplicates(inventory(elbv2))
