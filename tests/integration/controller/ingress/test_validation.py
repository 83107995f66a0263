"""Validate before creating: what AWS would refuse and can be known locally fails in the pure
stage — one Warning Event per member, and no AWS resource at all; what only AWS can know fails
with an Event, is retried with backoff, and leaves nothing a delete would not clean."""

from __future__ import annotations

from typing import Any

import pytest

from controller.standins import AWSFaultProxy
from runtime.resources import EVENTS, INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path as path
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"


async def _warnings(c: Cluster, name: str) -> list[dict[str, Any]]:
    items = (await c.client.list(EVENTS, c.namespace)).get("items") or []
    return [e for e in items if e.get("type") == "Warning"
            and (e.get("involvedObject") or {}).get("name") == name]


@pytest.mark.parametrize(("annotations", "paths", "reason"), [
    ({A + "load-balancer-attributes": "bogus.setting=1"}, None,
     "load balancer attribute 'bogus.setting' is not one an application load balancer has"),
    ({A + "target-group-attributes": "proxy_protocol_v2.enabled=true"}, None,
     "target group attribute 'proxy_protocol_v2.enabled' is not one a HTTP target group has"),
    ({}, [path("/" + "a" * 200, "web")], "want 1..128 characters"),
    ({A + "tags": "aws:owner=me"}, None, "aws: prefix is reserved"),
    ({A + "jwt-validation": '{"jwksEndpoint": "http://idp.example.com/jwks", "issuer": "i"}'},
     None, "jwksEndpoint must be a full https:// URL"),
    ({A + "auth-type": "cognito", A + "auth-idp-cognito":
      '{"userPoolARN": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_a1",'
      ' "userPoolClientID": "c", "userPoolDomain": "https://x.example.com"}'},
     None, "userPoolDomain: a URL"),
    ({A + "enable-frontend-nlb": "true", A + "frontend-nlb-healthcheck-interval-seconds": "1"},
     None, "frontend-nlb-healthcheck-interval-seconds"),
])
async def test_what_aws_would_refuse_creates_nothing(
        cluster: Cluster, aws_proxy: AWSFaultProxy, annotations: dict[str, str],
        paths: list[dict[str, Any]] | None, reason: str) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("bad", paths=paths or [path("/", "web")], annotations=annotations)
    await c.start()

    async def reported() -> list[dict[str, Any]]:
        return [e for e in await _warnings(c, "bad") if e["reason"] == "FailedBuildModel"]

    (event, *_) = await eventually(reported)
    assert reason in event["message"]
    await c.settled()
    assert [r.operation for r in aws_proxy.log if r.mutating] == []
    assert await c.aws.load_balancers() == []
    assert await c.aws.target_groups() == []


async def test_what_only_aws_knows_is_retried_and_cleaned(
        cluster: Cluster, aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    fault = aws_proxy.inject("TooManyListeners", operation="CreateListener",
                             message="listener quota of this account reached")
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("web", paths=[path("/", "web")])
    await c.start()

    async def failed() -> bool:
        return any(e["reason"] == "FailedDeployModel" and "listener quota" in e["message"]
                   for e in await _warnings(c, "web"))

    await eventually(failed)
    # The load balancer and target group exist, tagged as ours, with no listener.
    assert len(await c.aws.load_balancers()) == 1
    attempts = len(aws_proxy.records(operation="CreateListener"))
    await c.settled(quiet=1.0)
    assert len(aws_proxy.records(operation="CreateListener")) - attempts <= 8  # backed off
    # Deleting the Ingress cleans everything the half-done deploys created.
    await c.client.delete(INGRESSES, "web", c.namespace)
    await eventually(lambda: _gone(c), timeout=30)
    aws_proxy.remove(fault)


async def _gone(c: Cluster) -> bool:
    return (await c.find(INGRESSES, "web") is None and await c.aws.load_balancers() == []
            and await c.aws.target_groups() == [])
