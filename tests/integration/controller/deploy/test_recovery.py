"""Crash at any call, drift made by hand, and rule reorders all converge without duplicates."""

from __future__ import annotations

from typing import Any

import pytest

from controller.aws import AWSClientPool
from controller.deploy import DeployerSettings, StackDeployer, resource_tag
from controller.model import ShieldProtection, Stack, WAFRegionalAssociation, WAFv2Association
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import (
    alb_stack,
    assert_no_duplicates,
    fronted_stack,
    inventory,
    nlb_stack,
)


class Crash(Exception):
    """Stands for the process dying right before a mutating call."""


def crash_before(k: int) -> Any:
    """Die before sending mutating call k+1 (it never reaches AWS)."""
    seen = 0

    def hook(operation: str, params: dict[str, Any]) -> None:
        nonlocal seen
        if seen >= k:
            raise Crash(f"crash before mutating call {k + 1} ({operation})")
        seen += 1

    return hook


def crash_after(k: int) -> Any:
    """Die right after AWS accepted mutating call k+1, before its answer is used."""
    seen = 0

    def hook(operation: str, params: dict[str, Any], response: dict[str, Any]) -> None:
        nonlocal seen
        seen += 1
        if seen > k:
            raise Crash(f"crash after mutating call {k + 1} ({operation})")

    return hook


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


@pytest.mark.parametrize("phase", ["before", "after"])
@pytest.mark.parametrize("kind", ["alb", "nlb"])
async def test_every_crash_point_converges_without_duplicates(
        kind: str, phase: str, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    def build(name: str) -> Any:
        return alb_stack(aws_seed, name) if kind == "alb" else nlb_stack(aws_seed, name)

    probe = await StackDeployer(aws_pool, deployer_settings).deploy(build("probe"))
    total = probe.mutating_calls
    assert total >= 6
    for k in range(total):
        stack = build(f"crash{k}")
        crashing = StackDeployer(aws_pool, deployer_settings)
        if phase == "before":
            crashing.before_mutation = crash_before(k)
        else:
            crashing.after_mutation = crash_after(k)
        with pytest.raises(Crash):
            await crashing.deploy(stack)
        # Even k: the same process retries; odd k: a restarted process (nothing cached).
        if k % 2 == 0:
            crashing.before_mutation = crashing.after_mutation = None
            retry = crashing
        else:
            retry = StackDeployer(aws_pool, deployer_settings)
        done = await retry.deploy(stack)
        assert done.mutating_calls <= total - k
        aws_proxy.clear_log()
        await StackDeployer(aws_pool, deployer_settings).deploy(stack)
        assert _mutations(aws_proxy) == [], f"crash point {k}"
    inv = inventory(elbv2)
    assert_no_duplicates(inv)
    assert len(inv["lbs"]) == total + 1
    assert len(inv["tgs"]) == 2 * (total + 1)


@pytest.mark.parametrize("phase", ["before", "after"])
async def test_a_frontend_nlb_converges_from_every_crash_point(
        phase: str, aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, elbv2: Any) -> None:
    """Two load balancers in one stack, the ALB registered in the NLB's target group: no
    crash leaves a duplicate or a missing registration, and the run after makes no change."""
    probe = await StackDeployer(aws_pool, deployer_settings).deploy(fronted_stack(aws_seed,
                                                                                  "probe"))
    total = probe.mutating_calls
    assert total >= 6
    for k in range(total):
        stack = fronted_stack(aws_seed, f"crash{k}")
        crashing = StackDeployer(aws_pool, deployer_settings)
        if phase == "before":
            crashing.before_mutation = crash_before(k)
        else:
            crashing.after_mutation = crash_after(k)
        with pytest.raises(Crash):
            await crashing.deploy(stack)
        retry = crashing if k % 2 == 0 else StackDeployer(aws_pool, deployer_settings)
        retry.before_mutation = retry.after_mutation = None
        done = await retry.deploy(stack)
        assert done.load_balancer is not None
        tg = done.target_groups["FrontendNlb-tg-TCP-80"]
        targets = elbv2.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
        assert [(t["Target"]["Id"], t["Target"]["Port"]) for t in targets] == [
            (done.load_balancer.arn, 80)], f"crash point {k}"
        aws_proxy.clear_log()
        await StackDeployer(aws_pool, deployer_settings).deploy(stack)
        assert _mutations(aws_proxy) == [], f"crash point {k}"
    inv = inventory(elbv2)
    assert_no_duplicates(inv)
    assert len(inv["lbs"]) == 2 * (total + 1)


async def test_a_frontend_nlb_follows_its_alb_port_and_goes_alone(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    first = await deployer.deploy(fronted_stack(aws_seed))
    assert set(first.load_balancers) == {"LoadBalancer", "FrontendNlb"}
    assert first.load_balancer is not None
    alb = first.load_balancer.arn
    tg = first.target_groups["FrontendNlb-tg-TCP-80"]
    # The ALB moves to port 8080: the registration follows (the old one removed first).
    aws_proxy.clear_log()
    moved = await deployer.deploy(fronted_stack(aws_seed, alb_port=8080))
    assert moved.target_groups["FrontendNlb-tg-TCP-80"] == tg
    targets = elbv2.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
    assert [(t["Target"]["Id"], t["Target"]["Port"]) for t in targets] == [(alb, 8080)]
    assert _mutations(aws_proxy).count("RegisterTargets") == 1
    assert _mutations(aws_proxy).count("DeregisterTargets") == 1
    # Without the NLB (the key turned off): the NLB and its target group go, the ALB stays.
    plain = fronted_stack(aws_seed, alb_port=8080)
    plain = plain.model_copy(update={
        "load_balancers": {"LoadBalancer": plain.load_balancers["LoadBalancer"]},
        "listeners": {"8080": plain.listeners["8080"]}, "target_groups": {}})
    gone = await deployer.deploy(plain)
    assert set(gone.load_balancers) == {"LoadBalancer"}
    assert gone.load_balancer is not None
    assert gone.load_balancer.arn == alb
    assert [lb["LoadBalancerArn"] for lb in elbv2.describe_load_balancers()["LoadBalancers"]
            ] == [alb]
    assert elbv2.describe_target_groups()["TargetGroups"] == []


def _rules_by_id(elbv2: Any, listener_arn: str) -> dict[str, dict[str, Any]]:
    rules = [r for r in elbv2.describe_rules(ListenerArn=listener_arn)["Rules"]
             if not r["IsDefault"]]
    tags = elbv2.describe_tags(ResourceArns=[r["RuleArn"] for r in rules])["TagDescriptions"]
    ids = {d["ResourceArn"]: {t["Key"]: t["Value"] for t in d["Tags"]}.get(
        resource_tag("ingress")) for d in tags}
    return {str(ids[r["RuleArn"]]): r for r in rules}


async def test_drift_made_by_hand_is_repaired(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    stack = alb_stack(aws_seed)
    result = await deployer.deploy(stack)
    assert result.load_balancer is not None
    lb_arn = result.load_balancer.arn
    https = result.listeners["443"]
    elbv2.delete_rule(RuleArn=result.rules["443:front"])
    elbv2.modify_load_balancer_attributes(LoadBalancerArn=lb_arn, Attributes=[
        {"Key": "idle_timeout.timeout_seconds", "Value": "30"}])
    elbv2.create_listener(LoadBalancerArn=lb_arn, Port=8080, Protocol="HTTP", DefaultActions=[
        {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}])
    elbv2.remove_tags(ResourceArns=[lb_arn], TagKeys=["team"])
    elbv2.modify_target_group(TargetGroupArn=result.target_groups["default/web-api:80"],
                              HealthCheckPath="/elsewhere")

    aws_proxy.clear_log()
    await deployer.deploy(stack)
    assert sorted(set(_mutations(aws_proxy))) == [
        "AddTags", "CreateRule", "DeleteListener", "ModifyLoadBalancerAttributes",
        "ModifyTargetGroup"]
    ports = sorted(lis["Port"] for lis in elbv2.describe_listeners(
        LoadBalancerArn=lb_arn)["Listeners"])
    assert ports == [80, 443]
    assert set(_rules_by_id(elbv2, https)) == {"443:api", "443:front"}
    attrs = {a["Key"]: a["Value"] for a in elbv2.describe_load_balancer_attributes(
        LoadBalancerArn=lb_arn)["Attributes"]}
    assert attrs["idle_timeout.timeout_seconds"] == "120"
    tags = elbv2.describe_tags(ResourceArns=[lb_arn])["TagDescriptions"][0]["Tags"]
    assert {"Key": "team", "Value": "a"} in tags
    assert_no_duplicates(inventory(elbv2))

    aws_proxy.clear_log()
    await deployer.deploy(stack)
    assert _mutations(aws_proxy) == []


async def test_rule_priority_swap_moves_rules_without_rewriting_them(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    first = await deployer.deploy(alb_stack(aws_seed))
    https = first.listeners["443"]
    before = _rules_by_id(elbv2, https)
    assert (before["443:api"]["Priority"], before["443:front"]["Priority"]) == ("1", "2")

    aws_proxy.clear_log()
    swapped = alb_stack(aws_seed, swap=True)
    await deployer.deploy(swapped)
    assert set(_mutations(aws_proxy)) == {"SetRulePriorities"}
    after = _rules_by_id(elbv2, https)
    assert (after["443:api"]["Priority"], after["443:front"]["Priority"]) == ("2", "1")
    assert {r["RuleArn"] for r in after.values()} == {r["RuleArn"] for r in before.values()}

    aws_proxy.clear_log()
    await deployer.deploy(swapped)
    assert _mutations(aws_proxy) == []


async def test_a_crash_at_any_addon_call_converges(
        aws_pool: AWSClientPool, deployer_settings: DeployerSettings,
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed) -> None:
    """The addon calls come last: a crash before or after each converges on the next run, and
    the run after changes nothing."""
    acl = await aws_pool.call(
        "wafv2", "CreateWebACL", Name="crash-acl", Scope="REGIONAL",
        DefaultAction={"Allow": {}}, VisibilityConfig={
            "SampledRequestsEnabled": False, "CloudWatchMetricsEnabled": False,
            "MetricName": "crash-acl"})
    classic = aws_proxy.waf_regional.create_web_acl("crash-classic")
    await aws_pool.call("shield", "CreateSubscription")
    addons = {"wafv2": WAFv2Association(web_acl=acl["Summary"]["ARN"]),
              "waf_regional": WAFRegionalAssociation(web_acl_id=classic),
              "shield": ShieldProtection(enabled=True)}

    def build(name: str) -> Stack:
        stack = alb_stack(aws_seed, name)
        lbs = {rid: lb.model_copy(update=addons) for rid, lb in stack.load_balancers.items()}
        return stack.model_copy(update={"load_balancers": lbs})

    aws_proxy.clear_log()
    probe = await StackDeployer(aws_pool, deployer_settings).deploy(build("addons-probe"))
    total = probe.mutating_calls
    assert _mutations(aws_proxy)[-3:] == ["AssociateWebACL", "AssociateWebACL",
                                          "CreateProtection"]
    for phase in ("before", "after"):
        for k in range(total - 3, total):
            stack = build(f"addons-{phase}{k}")
            crashing = StackDeployer(aws_pool, deployer_settings)
            if phase == "before":
                crashing.before_mutation = crash_before(k)
            else:
                crashing.after_mutation = crash_after(k)
            with pytest.raises(Crash):
                await crashing.deploy(stack)
            await StackDeployer(aws_pool, deployer_settings).deploy(stack)
            aws_proxy.clear_log()
            again = await StackDeployer(aws_pool, deployer_settings).deploy(stack)
            assert _mutations(aws_proxy) == [], f"{phase} crash point {k}"
            assert again.load_balancer is not None
            lb_arn = again.load_balancer.arn
            assert aws_proxy.waf_regional.association(lb_arn) == classic
