"""Group checkpoints: written after deploys, matched at restart (paced LOW lane, no AWS
change), and changed by what the model reads, including OIDC Secret data."""

from __future__ import annotations

from typing import Any

from controller.apis import CHECKPOINT_ANNOTATION
from controller.standins import AWSFaultProxy
from runtime.manager import Manager
from runtime.reconcile import LOW, NORMAL, Request
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.waiting import eventually

GROUP = "alb.ingress.kubernetes.io/group.name"


def _spy(priorities: list[tuple[str, int]]) -> Any:
    def install(manager: Manager) -> None:
        queue = manager.controllers[0].queue
        original = queue.add

        def add(item: Request, priority: int = NORMAL, **kwargs: Any) -> None:
            priorities.append((item.key, priority))
            original(item, priority=priority, **kwargs)

        queue.add = add  # type: ignore[method-assign,assignment]

    return install


async def _checkpoints(c: Cluster, *names: str) -> set[str]:
    values = set()
    for name in names:
        ing = await c.find(INGRESSES, name)
        assert ing is not None
        values.add((ing["metadata"].get("annotations") or {}).get(CHECKPOINT_ANNOTATION, ""))
    return values


async def test_restart_verifies_in_low_lane(cluster: Cluster,
                                            aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("a")
    await c.ingress("x", paths=[ingress_path("/x", "a")], annotations={GROUP: "g"})
    await c.ingress("y", paths=[ingress_path("/y", "a")], annotations={GROUP: "g"})
    await c.ingress("solo", paths=[ingress_path("/", "a")])
    await c.start()

    async def written() -> bool:
        values = await _checkpoints(c, "x", "y")
        return len(values) == 1 and "" not in values

    await eventually(written)
    await eventually(lambda: _has_checkpoint(c, "solo"))
    await c.settled()
    assert await c.stop() == 0

    # Restart: every group's checkpoint matches → LOW, and the verification changes nothing.
    aws_proxy.clear_log()
    seen: list[tuple[str, int]] = []
    await c.start(on_setup=_spy(seen))
    await c.settled()
    assert ("g", LOW) in seen
    assert ("default/solo", LOW) in seen
    assert not any(p == NORMAL for _, p in seen)
    assert c.reconciles() >= 2
    assert [r.operation for r in aws_proxy.log if r.mutating] == []
    assert await c.stop() == 0

    # A change made while the controller was down is NORMAL at the next start.
    await c.patch(INGRESSES, "y", {"spec": {"rules": [
        {"http": {"paths": [ingress_path("/z", "a")]}}]}})
    seen.clear()
    await c.start(on_setup=_spy(seen))
    await c.settled()
    assert ("g", NORMAL) in seen
    assert ("default/solo", LOW) in seen
    assert await c.stop() == 0


async def _has_checkpoint(c: Cluster, name: str) -> bool:
    return "" not in await _checkpoints(c, name)


OIDC = ('{"issuer":"https://idp.example.com","authorizationEndpoint":"https://idp.example.com/'
        'auth","tokenEndpoint":"https://idp.example.com/token","userInfoEndpoint":'
        '"https://idp.example.com/userinfo","secretName":"oidc"}')


async def test_oidc_secret_rotation_redeploys(cluster: Cluster,
                                              aws_proxy: AWSFaultProxy) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("app")
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "first"})
    await c.ingress("secure", {
        "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS": 443}]',
        "alb.ingress.kubernetes.io/certificate-arn": c.seed.certificate_arn,
        "alb.ingress.kubernetes.io/auth-type": "oidc",
        "alb.ingress.kubernetes.io/auth-idp-oidc": OIDC,
        "alb.ingress.kubernetes.io/auth-scope": "openid email",
    }, host="app.example.com", paths=[ingress_path("/", "app")])
    await c.start()
    await eventually(lambda: _has_checkpoint(c, "secure"))
    lb = (await c.aws.load_balancers())[0]
    listeners = await c.aws.listeners(str(lb["LoadBalancerArn"]))
    assert set(listeners) == {443}
    assert listeners[443]["Protocol"] == "HTTPS"
    assert listeners[443]["Certificates"][0]["CertificateArn"] == c.seed.certificate_arn
    rules = await c.aws.rules(listeners[443]["ListenerArn"])
    assert [a["Type"] for a in sorted(rules[0]["Actions"], key=lambda a: a.get("Order", 0))] \
        == ["authenticate-oidc", "forward"]
    oidc = next(a for a in rules[0]["Actions"] if a["Type"] == "authenticate-oidc")
    assert oidc["AuthenticateOidcConfig"]["ClientId"] == "my-client"
    assert oidc["AuthenticateOidcConfig"]["Scope"] == "openid email"
    await c.settled()
    (before,) = await _checkpoints(c, "secure")

    aws_proxy.clear_log()
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "second"})

    async def rotated() -> bool:
        (value,) = await _checkpoints(c, "secure")
        return value not in ("", before)

    await eventually(rotated)
    await c.settled()
    assert "ModifyRule" in [r.operation for r in aws_proxy.log if r.mutating]
    assert await c.stop() == 0
