"""Cognito authentication and JWT validation through the deployer, as moto (with the stand-in's
`jwt-validation` support) stores them: created, left alone when unchanged, modified, removed."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from controller.deploy import StackDeployer
from controller.model import (
    Action,
    AuthenticateCognitoAction,
    FixedResponseAction,
    ForwardAction,
    JwtClaim,
    JwtValidationAction,
    Listener,
    ListenerRule,
    LoadBalancer,
    PathPatternCondition,
    Stack,
    StackBuilder,
    TargetGroup,
    WeightedTargetGroup,
)
from controller.standins import AWSFaultProxy, AwsSeed
from tests.integration.controller.deploy.stacks import context

POOL = "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abcDEF123"
COGNITO = AuthenticateCognitoAction(user_pool_arn=POOL, user_pool_client_id="client1",
                                    user_pool_domain="shop-auth",
                                    authentication_request_extra_params={"display": "page"})


def _jwt(*claims: JwtClaim, issuer: str = "https://idp.example.com") -> JwtValidationAction:
    return JwtValidationAction(jwks_endpoint="https://idp.example.com/jwks", issuer=issuer,
                               additional_claims=claims)


def _stack(seed: AwsSeed, first: Action | None, *, default_first: Action | None = None) -> Stack:
    b = StackBuilder("default/auth", kind="ingress", context=context(seed))
    tg = b.add_target_group("default/auth:80", TargetGroup(
        name="k8s-default-auth-0000000001", protocol="HTTP", port=80, target_type="ip"))
    lb = b.add_load_balancer("LoadBalancer", LoadBalancer(
        name="k8s-default-auth-0000000002", type="application", scheme="internet-facing",
        subnets=seed.public_subnets))
    forward = ForwardAction(target_groups=[WeightedTargetGroup(target_group_arn=tg)])
    defaults: list[Action] = [FixedResponseAction(status_code="404")]
    if default_first is not None:
        defaults = [default_first, forward]
    https = b.add_listener("443", Listener(
        load_balancer_arn=lb, port=443, protocol="HTTPS", certificates=[seed.certificate_arn],
        default_actions=defaults))
    actions: list[Action] = [forward] if first is None else [first, forward]
    b.add_rule("443:1", ListenerRule(listener_arn=https, priority=1, actions=actions,
                                     conditions=[PathPatternCondition(values=["/app/*"])]))
    return b.build()


def _mutations(proxy: AWSFaultProxy) -> list[str]:
    return [r.operation for r in proxy.log if r.mutating]


def _rule_actions(elbv2: Any, listener: str) -> list[dict[str, Any]]:
    [rule] = [r for r in elbv2.describe_rules(ListenerArn=listener)["Rules"]
              if not r["IsDefault"]]
    return sorted(rule["Actions"], key=lambda a: a["Order"])


async def test_cognito_and_jwt_validation_rules_converge(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    result = await deployer.deploy(_stack(aws_seed, COGNITO))
    listener = result.listeners["443"]
    first, second = _rule_actions(elbv2, listener)
    assert first["Type"] == "authenticate-cognito"
    config = first["AuthenticateCognitoConfig"]
    assert (config["UserPoolArn"], config["UserPoolClientId"], config["UserPoolDomain"],
            config["AuthenticationRequestExtraParams"], config["Scope"],
            config["SessionCookieName"], int(config["SessionTimeout"]),
            config["OnUnauthenticatedRequest"]) == (
        POOL, "client1", "shop-auth", {"display": "page"}, "openid", "AWSELBAuthSessionCookie",
        604800, "authenticate")
    assert second["Type"] == "forward"

    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, COGNITO))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_stack(aws_seed, COGNITO.model_copy(update={"scope": "openid email"})))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    assert _rule_actions(elbv2, listener)[0]["AuthenticateCognitoConfig"]["Scope"] == \
        "openid email"

    claims = (JwtClaim(format="string-array", name="ver", values=["6", "19"]),
              JwtClaim(format="space-separated-values", name="scope", values=["read", "write"]))
    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, _jwt(*claims)))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    first, second = _rule_actions(elbv2, listener)
    assert first["Type"] == "jwt-validation"
    assert first["JwtValidationConfig"] == {
        "JwksEndpoint": "https://idp.example.com/jwks", "Issuer": "https://idp.example.com",
        "AdditionalClaims": [
            {"Format": "space-separated-values", "Name": "scope", "Values": ["read", "write"]},
            {"Format": "string-array", "Name": "ver", "Values": ["6", "19"]}]}
    assert "AuthenticateCognitoConfig" not in first

    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, _jwt(*reversed(claims))))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_stack(aws_seed, _jwt(*claims, issuer="https://other.example.com")))
    assert _mutations(aws_proxy) == ["ModifyRule"]

    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, None))
    assert _mutations(aws_proxy) == ["ModifyRule"]
    [only] = _rule_actions(elbv2, listener)
    assert only["Type"] == "forward"

    await deployer.delete_stack("default/auth", "ingress")
    assert elbv2.describe_load_balancers()["LoadBalancers"] == []


async def test_a_listeners_default_actions_carry_them_too(
        deployer: StackDeployer, aws_proxy: AWSFaultProxy, aws_seed: AwsSeed,
        elbv2: Any) -> None:
    result = await deployer.deploy(_stack(aws_seed, None, default_first=_jwt()))
    listener = result.listeners["443"]

    def defaults() -> list[str]:
        [found] = elbv2.describe_listeners(ListenerArns=[listener])["Listeners"]
        return [a["Type"] for a in sorted(found["DefaultActions"], key=lambda a: a["Order"])]

    assert defaults() == ["jwt-validation", "forward"]
    aws_proxy.clear_log()
    await deployer.deploy(_stack(aws_seed, None, default_first=_jwt()))
    assert _mutations(aws_proxy) == []
    await deployer.deploy(_stack(aws_seed, None, default_first=COGNITO))
    assert _mutations(aws_proxy) == ["ModifyListener"]
    assert defaults() == ["authenticate-cognito", "forward"]
    await deployer.delete_stack("default/auth", "ingress")


async def test_aws_refuses_what_the_parser_refuses(
        deployer: StackDeployer, aws_seed: AwsSeed, elbv2: Any) -> None:
    """The stand-in holds AWS's constraints, so a parser gap would show as an AWS error."""
    result = await deployer.deploy(_stack(aws_seed, None))
    listener = result.listeners["443"]
    [rule_arn] = [r["RuleArn"] for r in elbv2.describe_rules(ListenerArn=listener)["Rules"]
                  if not r["IsDefault"]]
    target = elbv2.describe_target_groups()["TargetGroups"][0]["TargetGroupArn"]
    forward = {"Type": "forward", "Order": 2, "TargetGroupArn": target}
    for config in ({"JwksEndpoint": "http://idp.example.com/jwks", "Issuer": "i"},
                   {"JwksEndpoint": "https://idp.example.com/jwks", "Issuer": "i",
                    "AdditionalClaims": [{"Format": "single-string", "Name": "exp",
                                          "Values": ["1"]}]}):
        with pytest.raises(ClientError) as info:
            elbv2.modify_rule(RuleArn=rule_arn, Actions=[
                {"Type": "jwt-validation", "Order": 1, "JwtValidationConfig": config}, forward])
        assert info.value.response["Error"]["Code"] == "ValidationError"
    await deployer.delete_stack("default/auth", "ingress")
