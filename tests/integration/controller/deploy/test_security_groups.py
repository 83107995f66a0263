"""The deployer's security-group step against moto: crash-safe at every call, one Describe to
verify a converged stack, groups upstream made adopted, orphans and deleted stacks cleaned up
with AWS's `DependencyViolation` retried."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from controller.aws import AWSClientPool
from controller.deploy import DeployError, DeployerSettings, StackDeployer
from controller.model import MANAGED_SECURITY_GROUP_ID, ingress_security_group_name
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import (
    CLUSTER,
    assert_no_duplicates,
    guarded_stack,
    inventory,
)
from tests.integration.controller.deploy.test_recovery import Crash, crash_after, crash_before
from tests.support.aws import AwsInspector, rules_of, tags_of

BACKEND_TAGS = {"elbv2.k8s.aws/cluster": CLUSTER, "elbv2.k8s.aws/resource": "backend-sg"}


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


async def _ours(aws: AwsInspector) -> list[dict[str, Any]]:
    return await aws.security_groups(("tag:elbv2.k8s.aws/cluster", CLUSTER))


async def test_every_crash_point_converges_without_duplicate_groups(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, aws_inspector: AwsInspector,
        elbv2: Any) -> None:
    probe = await StackDeployer(aws_pool, deployer_settings).deploy(
        guarded_stack(aws_seed, "probe"))
    # The backend group exists now: every crash below meets it, as every deploy but the
    # first of a cluster does. The first one's creation is a crash point of its own.
    total = probe.mutating_calls
    groups_of_probe = [op for op in _mutations(aws_proxy) if op.endswith("SecurityGroup")
                       or op == "AuthorizeSecurityGroupIngress"]
    assert groups_of_probe == ["CreateSecurityGroup", "CreateSecurityGroup",
                               "AuthorizeSecurityGroupIngress"]
    # Crashes alternate between right before mutating call k and right after it (AWS took it,
    # the answer was lost), and the re-run between the same process and a new one (nothing
    # cached). The backend group's creation was the probe's.
    points = [(k, "before" if k % 2 == 0 else "after") for k in range(total - 1)]
    for k, phase in points:
        stack = guarded_stack(aws_seed, f"crash{k}{phase}")
        crashing = StackDeployer(aws_pool, deployer_settings)
        if phase == "before":
            crashing.before_mutation = crash_before(k)
        else:
            crashing.after_mutation = crash_after(k)
        with pytest.raises(Crash):
            await crashing.deploy(stack)
        retry = crashing if (k // 2) % 2 == 0 else StackDeployer(aws_pool, deployer_settings)
        retry.before_mutation = retry.after_mutation = None
        await retry.deploy(stack)
        aws_proxy.clear_log()
        await StackDeployer(aws_pool, deployer_settings).deploy(stack)
        assert _mutations(aws_proxy) == [], f"crash point {k}"
    groups = await _ours(aws_inspector)
    names = Counter(g["GroupName"] for g in groups)
    assert all(n == 1 for n in names.values()), names
    assert len(groups) == 1 + 1 + len(points)  # the backend group, the probe's, one per stack
    for group in groups:
        if tags_of(group).get("elbv2.k8s.aws/resource") != "backend-sg":
            assert {r[:4] for r in rules_of(group)} == {("tcp", 80, 80, "0.0.0.0/0")}
    assert_no_duplicates(inventory(elbv2))


async def test_a_converged_stack_costs_one_describe_and_no_change(
        deployer: StackDeployer, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    for kind in ("alb", "nlb"):
        stack = guarded_stack(aws_seed, f"web-{kind}", kind=kind)
        await deployer.deploy(stack)
        aws_proxy.clear_log()
        again = await deployer.deploy(stack)
        assert again.mutating_calls == 0
        assert [r.operation for r in aws_proxy.log if "SecurityGroup" in r.operation] == [
            "DescribeSecurityGroups"]
        binding = next(iter(again.target_group_bindings.values()))
        assert binding.networking is not None
        [peer] = binding.networking["ingress"][0]["from"]
        assert peer["securityGroup"]["groupID"].startswith("sg-")
    # A new process looks the backend group up once, then one Describe per stack as before.
    fresh = StackDeployer(aws_pool, deployer_settings)
    aws_proxy.clear_log()
    for kind in ("alb", "nlb"):
        await fresh.deploy(guarded_stack(aws_seed, f"web-{kind}", kind=kind))
    assert Counter(r.operation for r in aws_proxy.log if "SecurityGroup" in r.operation) == {
        "DescribeSecurityGroups": 3}
    assert _mutations(aws_proxy) == []


async def test_groups_upstream_made_are_adopted_and_their_rules_converged(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        aws_inspector: AwsInspector, elbv2: Any) -> None:
    def group(name: str, description: str, tags: dict[str, str]) -> Any:
        return aws_inspector.call("ec2", "CreateSecurityGroup", GroupName=name,
                                  Description=description, VpcId=aws_seed.vpc_id,
                                  TagSpecifications=[{"ResourceType": "security-group", "Tags": [
                                      {"Key": k, "Value": v} for k, v in tags.items()]}])

    # What upstream leaves behind (names and tags of pkg/ingress/model_build_managed_sg.go and
    # pkg/networking/backend_sg_provider.go), with a rule the model no longer wants.
    managed = (await group(ingress_security_group_name(CLUSTER, "default", "web"),
                           "[k8s] Managed SecurityGroup for LoadBalancer",
                           {"elbv2.k8s.aws/cluster": CLUSTER,
                            "ingress.k8s.aws/stack": "default/web",
                            "ingress.k8s.aws/resource": MANAGED_SECURITY_GROUP_ID}))["GroupId"]
    await aws_inspector.call("ec2", "AuthorizeSecurityGroupIngress", GroupId=managed,
                             IpPermissions=[{"IpProtocol": "tcp", "FromPort": 443,
                                             "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
    backend = (await group("k8s-traffic-test-cluster-made-by-upstream",
                           "[k8s] Shared Backend SecurityGroup for LoadBalancer",
                           BACKEND_TAGS))["GroupId"]
    result = await deployer.deploy(guarded_stack(aws_seed, "web", cidrs=("10.0.0.0/8",)))
    assert "CreateSecurityGroup" not in _mutations(aws_proxy)
    assert result.load_balancer is not None
    [lb] = elbv2.describe_load_balancers(LoadBalancerArns=[result.load_balancer.arn])[
        "LoadBalancers"]
    assert set(lb["SecurityGroups"]) == {managed, backend}
    assert await aws_inspector.group_rules(managed) == {("tcp", 80, 80, "10.0.0.0/8", "")}
    # The model's tags are added; ours and upstream's tracking tags stay.
    [adopted] = [g for g in await _ours(aws_inspector) if g["GroupId"] == managed]
    assert tags_of(adopted)["team"] == "a"


async def test_groups_no_longer_wanted_and_deleted_stacks_are_cleaned_up(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        aws_inspector: AwsInspector) -> None:
    await deployer.deploy(guarded_stack(aws_seed, "web"))
    [managed] = await aws_inspector.stack_security_groups("default/web")
    mine = (await aws_inspector.call("ec2", "CreateSecurityGroup", GroupName="team-web",
                                     Description="team", VpcId=aws_seed.vpc_id))["GroupId"]
    # User groups instead: the managed group goes once the ALB no longer carries it, and the
    # backend group with it (no stack uses it); AWS refuses twice first.
    aws_proxy.inject("DependencyViolation", operation="DeleteSecurityGroup", count=2)
    aws_proxy.clear_log()
    await deployer.deploy(guarded_stack(aws_seed, "web", user_groups=(mine,)))
    operations = _mutations(aws_proxy)
    assert operations.index("SetSecurityGroups") < operations.index("DeleteSecurityGroup")
    assert await aws_inspector.security_group(managed["GroupId"]) is None
    assert await aws_inspector.backend_security_groups(CLUSTER) == []

    # Back to a managed group, then the stack is deleted while AWS keeps refusing: the
    # deletion fails, to be retried, and the next attempt finishes it.
    await deployer.deploy(guarded_stack(aws_seed, "web"))
    stubborn = aws_proxy.inject("DependencyViolation", operation="DeleteSecurityGroup")
    with pytest.raises(DeployError, match="still in use"):
        await deployer.delete_stack("default/web", "ingress", vpc_id=aws_seed.vpc_id)
    aws_proxy.remove(stubborn)
    await deployer.delete_stack("default/web", "ingress", vpc_id=aws_seed.vpc_id)
    assert await _ours(aws_inspector) == []  # the user's group is not ours
    assert await aws_inspector.security_group(mine) is not None


async def test_rules_granted_or_revoked_meanwhile_are_the_outcome_wanted(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        aws_inspector: AwsInspector) -> None:
    # AWS refuses a whole batch when one rule of it exists (granted meanwhile by another
    # writer): the deployer grants the rest one by one.
    aws_proxy.inject("InvalidPermission.Duplicate", operation="AuthorizeSecurityGroupIngress",
                     count=1)
    await deployer.deploy(guarded_stack(aws_seed, "web", cidrs=("10.0.0.0/8", "10.1.0.0/16")))
    [group] = await aws_inspector.stack_security_groups("default/web")
    assert await aws_inspector.group_rules(group["GroupId"]) == {
        ("tcp", 80, 80, "10.0.0.0/8", ""), ("tcp", 80, 80, "10.1.0.0/16", "")}
    assert len(aws_proxy.records(operation="AuthorizeSecurityGroupIngress")) == 3
    # And a batch of revokes where one rule is already gone.
    aws_proxy.inject("InvalidPermission.NotFound", operation="RevokeSecurityGroupIngress",
                     count=1)
    await deployer.deploy(guarded_stack(aws_seed, "web", cidrs=("10.2.0.0/16",)))
    assert await aws_inspector.group_rules(group["GroupId"]) == {
        ("tcp", 80, 80, "10.2.0.0/16", "")}
    aws_proxy.clear_log()
    await deployer.deploy(guarded_stack(aws_seed, "web", cidrs=("10.2.0.0/16",)))
    assert _mutations(aws_proxy) == []
