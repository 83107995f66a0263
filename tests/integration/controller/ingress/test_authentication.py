"""Cognito authentication and JWT validation through the whole controller (set up from `aiolbc
run` flags): the actions reach moto on the HTTPS listener only, the HTTP listener's gap is a
Warning, and a change of settings reaches AWS."""

from __future__ import annotations

import json
from typing import Any

from runtime.resources import EVENTS, INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import hostname
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
POOL = "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abcDEF123"


async def _first_actions(c: Cluster, lb_arn: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for port, listener in (await c.aws.listeners(lb_arn)).items():
        rules = [r for r in await c.aws.rules(listener["ListenerArn"]) if not r["IsDefault"]]
        found[port] = [a["Type"] for r in rules
                       for a in sorted(r["Actions"], key=lambda a: a["Order"])]
    return found


async def test_cognito_then_jwt_validation_reach_the_https_listener(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    cognito = json.dumps({"userPoolARN": POOL, "userPoolClientID": "client1",
                          "userPoolDomain": "shop-auth"})
    await c.ingress("shop", backend="web", annotations={
        A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]',
        A + "certificate-arn": c.seed.certificate_arn,
        A + "auth-type": "cognito", A + "auth-idp-cognito": cognito})
    await c.start_app()

    async def deployed() -> dict[str, Any] | None:
        ing = await c.find(INGRESSES, "shop")
        return await c.aws.load_balancer_at(hostname(ing)) if ing else None

    lb = await eventually(deployed, timeout=60)
    assert await _first_actions(c, lb["LoadBalancerArn"]) == {
        80: ["forward"], 443: ["authenticate-cognito", "forward"]}

    async def warned() -> list[str]:
        items = (await c.client.list(EVENTS, c.namespace)).get("items") or []
        return [e["message"] for e in items if e.get("reason") == "AuthenticationOnHTTPSOnly"
                and (e.get("involvedObject") or {}).get("name") == "shop"]

    assert (await eventually(warned)) == [
        "Ingress default/shop: authentication and JWT validation apply on HTTPS listeners "
        "only; HTTP port 80 forwards without them (set ssl-redirect)"]

    await c.patch(INGRESSES, "shop", {"metadata": {"annotations": {
        A + "auth-type": None, A + "jwt-validation": json.dumps(
            {"jwksEndpoint": "https://idp.example.com/jwks",
             "issuer": "https://idp.example.com"})}}})

    async def switched() -> bool:
        return await _first_actions(c, lb["LoadBalancerArn"]) == {
            80: ["forward"], 443: ["jwt-validation", "forward"]}

    await eventually(switched, timeout=60)
