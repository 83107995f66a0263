"""Identity as upstream's (pkg/deploy/elbv2/load_balancer_synthesizer.go,
target_group_synthesizer.go): a stack's resources are found by their tags, a name is only an
input when creating, and nothing is replaced that AWS can keep."""

from __future__ import annotations

from typing import Any

from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer
from controller.model import Stack, SubnetDiscovery, TargetGroup
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import CLUSTER, alb_stack, inventory, nlb_stack


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


def _with_lb(stack: Stack, **update: Any) -> Stack:
    return stack.model_copy(update={"load_balancers": {
        rid: lb.model_copy(update=update) for rid, lb in stack.load_balancers.items()}})


def _with_tg(stack: Stack, rid: str, **update: Any) -> Stack:
    tgs = dict(stack.target_groups)
    tgs[rid] = TargetGroup.model_validate({**tgs[rid].model_dump(), **update})
    return stack.model_copy(update={"target_groups": tgs})


def _renamed(stack: Stack) -> Stack:
    """Every name changed, nothing else: what an older upstream release or a renaming
    annotation leaves."""
    stack = _with_lb(stack, name="renamed-by-someone")
    for i, rid in enumerate(sorted(stack.target_groups)):
        stack = _with_tg(stack, rid, name=f"k8s-renamed-tg-{i:010d}")
    return stack


async def test_resources_under_other_names_are_adopted_not_replaced(
        deployer: StackDeployer, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    first = await deployer.deploy(nlb_stack(aws_seed))
    renamed = _renamed(nlb_stack(aws_seed))
    for each in (deployer, StackDeployer(aws_pool, deployer_settings)):  # warm, then cold
        aws_proxy.clear_log()
        again = await each.deploy(renamed)
        assert _mutations(aws_proxy) == []
        assert again.load_balancer is not None
        assert first.load_balancer is not None
        assert again.load_balancer.arn == first.load_balancer.arn
        assert again.target_groups == first.target_groups
    inv = inventory(elbv2)
    assert [lb["LoadBalancerName"] for lb in inv["lbs"]] == [
        nlb_stack(aws_seed).load_balancers["LoadBalancer"].name]  # never renamed


async def test_a_target_group_that_cannot_change_is_replaced_after_the_listeners_moved(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    stack = alb_stack(aws_seed)
    first = await deployer.deploy(stack)
    rid = "default/web-api:80"
    old = first.target_groups[rid]
    changed = _with_tg(stack, rid, protocol="HTTPS", name="k8s-default-api-0000000001")
    aws_proxy.clear_log()
    # A binding still points at the old target group: it stays, reported, until it is gone.
    result = await deployer.deploy(changed, retain={old})
    new = result.target_groups[rid]
    assert new != old
    assert result.retained_target_groups == (old,)
    ops = _mutations(aws_proxy)
    assert "DeleteTargetGroup" not in ops
    assert ops.index("CreateTargetGroup") < ops.index("ModifyRule")
    arns = {tg["TargetGroupArn"] for tg in inventory(elbv2)["tgs"]}
    assert {old, new} <= arns
    aws_proxy.clear_log()
    done = await deployer.deploy(changed)
    assert done.retained_target_groups == ()
    assert _mutations(aws_proxy) == ["DeleteTargetGroup"]
    assert old not in {tg["TargetGroupArn"] for tg in inventory(elbv2)["tgs"]}


def _internet_facing(stack: Stack) -> Stack:
    return _with_lb(stack, scheme="internet-facing", subnets=SubnetDiscovery(role="elb"))


async def test_a_load_balancer_keeps_its_scheme_and_subnets_when_the_model_keeps_them(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    """pkg/service/model_build_load_balancer.go: without a scheme annotation the existing
    NLB's scheme stays, and discovered subnets are the existing load balancer's."""
    deployer = StackDeployer(aws_pool, deployer_settings)
    first = await deployer.deploy(_internet_facing(nlb_stack(aws_seed)))
    assert first.load_balancer is not None
    keep = _with_lb(nlb_stack(aws_seed), keep_existing_scheme=True, name="k8s-default-dns-other")
    aws_proxy.clear_log()
    again = await StackDeployer(aws_pool, deployer_settings).deploy(keep)
    assert _mutations(aws_proxy) == []
    assert again.load_balancer is not None
    assert again.load_balancer.arn == first.load_balancer.arn
    (lb,) = inventory(elbv2)["lbs"]
    assert lb["Scheme"] == "internet-facing"
    assert {az["SubnetId"] for az in lb["AvailabilityZones"]} == set(aws_seed.public_subnets)
    # A stack without one gets the default scheme.
    fresh = await deployer.deploy(_with_lb(nlb_stack(aws_seed, "new"),
                                           keep_existing_scheme=True))
    assert fresh.load_balancer is not None
    created = [x for x in inventory(elbv2)["lbs"]
               if x["LoadBalancerArn"] == fresh.load_balancer.arn]
    assert created[0]["Scheme"] == "internal"


async def test_security_groups_a_load_balancer_carries_are_kept_when_the_model_names_none(
        deployer: StackDeployer, aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy,
        aws_seed: AwsSeed, elbv2: Any) -> None:
    group = (await aws_pool.call("ec2", "CreateSecurityGroup", GroupName="frontend",
                                 Description="upstream's", VpcId=aws_seed.vpc_id))["GroupId"]
    stack = alb_stack(aws_seed)
    await deployer.deploy(_with_lb(stack, security_groups=(group,)))
    aws_proxy.clear_log()
    await deployer.deploy(stack)
    assert "SetSecurityGroups" not in _mutations(aws_proxy)
    (lb,) = inventory(elbv2)["lbs"]
    assert lb["SecurityGroups"] == [group]


async def test_legacy_tags_find_a_stack_and_are_never_removed(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    """pkg/deploy/tracking/provider.go: resources of the ALB ingress controller carry
    `ingress.k8s.aws/cluster` instead of `elbv2.k8s.aws/cluster`, and its keys stay."""
    first = await StackDeployer(aws_pool, deployer_settings).deploy(nlb_stack(aws_seed))
    arns = [*first.target_groups.values()]
    assert first.load_balancer is not None
    arns.append(first.load_balancer.arn)
    elbv2.remove_tags(ResourceArns=arns, TagKeys=["elbv2.k8s.aws/cluster"])
    elbv2.add_tags(ResourceArns=arns, Tags=[
        {"Key": "ingress.k8s.aws/cluster", "Value": CLUSTER},
        {"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}])
    aws_proxy.clear_log()
    again = await StackDeployer(aws_pool, deployer_settings).deploy(
        _renamed(nlb_stack(aws_seed)))
    assert not [op for op in _mutations(aws_proxy) if op != "AddTags"]
    assert again.load_balancer is not None
    assert again.load_balancer.arn == first.load_balancer.arn
    for desc in elbv2.describe_tags(ResourceArns=arns)["TagDescriptions"]:
        keys = {t["Key"] for t in desc["Tags"]}
        assert {"elbv2.k8s.aws/cluster", "ingress.k8s.aws/cluster",
                f"kubernetes.io/cluster/{CLUSTER}"} <= keys
