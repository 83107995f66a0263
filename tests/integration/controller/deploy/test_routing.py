"""Routing the deployer carries to AWS as the model says: conditions with regular expressions
and listener-rule transforms, written once and then left alone."""

from __future__ import annotations

from typing import Any

from controller.deploy import StackDeployer
from controller.model import (
    FixedResponseAction,
    HostHeaderCondition,
    HttpHeaderCondition,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    Rewrite,
    RuleTransform,
    Stack,
    StackBuilder,
)
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import context


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


def _routed(seed: AwsSeed, *, path: str = "^/api/(.+)$", **rule: Any) -> Stack:
    b = StackBuilder("default/routed", kind="ingress", context=context(seed))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-default-routed-0000000002", type="application", scheme="internet-facing",
        subnets=seed.public_subnets))
    http = b.add_listener("80", Listener(load_balancer_arn=lb, port=80, protocol="HTTP",
                                         default_actions=[FixedResponseAction(status_code="404")]))
    b.add_rule("80:1", ListenerRule(
        listener_arn=http, priority=1, actions=[FixedResponseAction(status_code="200")],
        conditions=[PathPatternCondition(regex_values=[path]),
                    HostHeaderCondition(regex_values=["^(.+)\\.example\\.com$"]),
                    HttpHeaderCondition(header_name="User-Agent", regex_values=[".+Chrome.+"])],
        **rule))
    return b.build()


def _conditions(elbv2: Any) -> dict[str, Any]:
    (lb,) = [lb for lb in elbv2.describe_load_balancers()["LoadBalancers"]
             if lb["LoadBalancerName"] == "k8s-default-routed-0000000002"]
    (listener,) = elbv2.describe_listeners(LoadBalancerArn=lb["LoadBalancerArn"])["Listeners"]
    (rule,) = [r for r in elbv2.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]
               if not r["IsDefault"]]
    found: dict[str, Any] = rule
    return found


async def test_regex_conditions_reach_aws_once(deployer: StackDeployer, aws_proxy: AWSFaultProxy,
                                               aws_seed: AwsSeed, elbv2: Any) -> None:
    await deployer.deploy(_routed(aws_seed))
    rule = _conditions(elbv2)
    by_field = {c["Field"]: c for c in rule["Conditions"]}
    assert by_field["path-pattern"]["PathPatternConfig"] == {"RegexValues": ["^/api/(.+)$"]}
    assert by_field["host-header"]["HostHeaderConfig"] == {
        "RegexValues": ["^(.+)\\.example\\.com$"]}
    assert by_field["http-header"]["HttpHeaderConfig"] == {
        "HttpHeaderName": "User-Agent", "RegexValues": [".+Chrome.+"]}
    aws_proxy.clear_log()
    await deployer.deploy(_routed(aws_seed))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_routed(aws_seed, path="^/v2/(.+)$"))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    by_field = {c["Field"]: c for c in _conditions(elbv2)["Conditions"]}
    assert by_field["path-pattern"]["PathPatternConfig"] == {"RegexValues": ["^/v2/(.+)$"]}


URL = RuleTransform(type="url-rewrite", rewrites=[Rewrite(regex="^/api/(.+)$", replace="/$1")])
HOST = RuleTransform(type="host-header-rewrite",
                     rewrites=[Rewrite(regex="^(.+)\\.example\\.com$", replace="$1.example.org")])


async def test_transforms_are_created_changed_and_reset(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    await deployer.deploy(_routed(aws_seed, transforms=[URL, HOST]))
    assert sorted(t["Type"] for t in _conditions(elbv2)["Transforms"]) == [
        "host-header-rewrite", "url-rewrite"]
    aws_proxy.clear_log()
    await deployer.deploy(_routed(aws_seed, transforms=[HOST, URL]))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_routed(aws_seed, transforms=[URL]))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    assert _conditions(elbv2)["Transforms"] == [{"Type": "url-rewrite", "UrlRewriteConfig": {
        "Rewrites": [{"Regex": "^/api/(.+)$", "Replace": "/$1"}]}}]
    aws_proxy.clear_log()
    await deployer.deploy(_routed(aws_seed))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    assert not _conditions(elbv2).get("Transforms")
    aws_proxy.clear_log()
    await deployer.deploy(_routed(aws_seed))
    assert _mutations(aws_proxy) == []
