"""What the stand-ins answer for WAF Classic Regional (the fault proxy's, moto has none), WAFv2
association (one web ACL per resource) and Shield's subscription state, through the client the
controller uses, with the error codes the API references document."""

from __future__ import annotations

from typing import Any

import pytest

from controller.aws import AWSClientPool, AWSError
from controller.standins import AWSFaultProxy, AwsSeed

ALB = "arn:aws:elasticloadbalancing:us-west-2:123456789012:loadbalancer/app/web/0123456789abcdef"


async def _code(call: Any) -> str:
    with pytest.raises(AWSError) as info:
        await call
    return str(info.value.code)


async def test_waf_classic_regional(aws_pool: AWSClientPool, aws_proxy: AWSFaultProxy) -> None:
    token = (await aws_pool.call("waf-regional", "GetChangeToken"))["ChangeToken"]
    created = await aws_pool.call("waf-regional", "CreateWebACL", Name="shop", MetricName="shop",
                                  DefaultAction={"Type": "ALLOW"}, ChangeToken=token)
    acl = created["WebACL"]["WebACLId"]
    assert await _code(aws_pool.call(
        "waf-regional", "CreateWebACL", Name="shop", MetricName="shop",
        DefaultAction={"Type": "ALLOW"}, ChangeToken=token)) == "WAFDisallowedNameException"
    none = await aws_pool.call("waf-regional", "GetWebACLForResource", ResourceArn=ALB)
    assert "WebACLSummary" not in none
    await aws_pool.call("waf-regional", "AssociateWebACL", WebACLId=acl, ResourceArn=ALB)
    found = await aws_pool.call("waf-regional", "GetWebACLForResource", ResourceArn=ALB)
    assert found["WebACLSummary"] == {"WebACLId": acl, "Name": "shop"}
    assert await _code(aws_pool.call("waf-regional", "AssociateWebACL", WebACLId="nope",
                                     ResourceArn=ALB)) == "WAFNonexistentItemException"
    assert await _code(aws_pool.call(
        "waf-regional", "AssociateWebACL", WebACLId=acl,
        ResourceArn="arn:aws:s3:::bucket")) == "WAFInvalidParameterException"
    await aws_pool.call("waf-regional", "DisassociateWebACL", ResourceArn=ALB)
    assert aws_proxy.waf_regional.association(ALB) is None
    # Answered by the proxy, never sent to moto.
    assert {r.source for r in aws_proxy.log if r.service == "waf-regional"} == {"waf-regional"}


async def test_wafv2_keeps_one_web_acl_per_resource(aws_pool: AWSClientPool,
                                                    aws_seed: AwsSeed) -> None:
    del aws_seed
    arns = []
    for name in ("one", "two"):
        resp = await aws_pool.call(
            "wafv2", "CreateWebACL", Name=name, Scope="REGIONAL", DefaultAction={"Allow": {}},
            VisibilityConfig={"SampledRequestsEnabled": False,
                              "CloudWatchMetricsEnabled": False, "MetricName": name})
        arns.append(resp["Summary"]["ARN"])
    for arn in arns:
        await aws_pool.call("wafv2", "AssociateWebACL", WebACLArn=arn, ResourceArn=ALB)
    found = await aws_pool.call("wafv2", "GetWebACLForResource", ResourceArn=ALB)
    assert found["WebACL"]["ARN"] == arns[1]


async def test_shield_subscription_state(aws_pool: AWSClientPool, aws_seed: AwsSeed) -> None:
    del aws_seed  # a fresh moto: no subscription
    state = await aws_pool.call("shield", "GetSubscriptionState")
    assert state["SubscriptionState"] == "INACTIVE"
    await aws_pool.call("shield", "CreateSubscription")
    assert (await aws_pool.call("shield", "GetSubscriptionState"))["SubscriptionState"] == (
        "ACTIVE")
