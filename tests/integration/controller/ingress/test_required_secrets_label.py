"""--required-secrets-label: the controller reads only Secrets carrying the label; a referenced
Secret without it is reported as not found, and is used once it is labelled."""

from __future__ import annotations

from runtime.resources import INGRESSES, SECRETS
from tests.support.cluster import Cluster
from tests.support.objects import ingress_path
from tests.support.settings import ingress_settings
from tests.support.waiting import eventually

OIDC = ('{"issuer":"https://idp.example.com","authorizationEndpoint":"https://idp.example.com/'
        'auth","tokenEndpoint":"https://idp.example.com/token","userInfoEndpoint":'
        '"https://idp.example.com/userinfo","secretName":"oidc"}')


async def test_an_unlabelled_secret_is_not_read(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("app")
    await c.secret("oidc", {"clientID": "my-client", "clientSecret": "s"})
    await c.ingress("secure", {
        "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS": 443}]',
        "alb.ingress.kubernetes.io/certificate-arn": c.seed.certificate_arn,
        "alb.ingress.kubernetes.io/auth-type": "oidc",
        "alb.ingress.kubernetes.io/auth-idp-oidc": OIDC,
    }, host="app.example.com", paths=[ingress_path("/", "app")])
    await c.start(ingress=ingress_settings(c.seed, required_secrets_label="lbc.example/read=yes"))

    async def told_not_found() -> bool:
        return any("OIDC Secret default/oidc not found" in e["message"]
                   for e in await c.events("secure", of=INGRESSES))

    await eventually(told_not_found)
    await c.settled()
    assert await c.aws.load_balancers() == []

    await c.client.patch(SECRETS, "oidc", {"metadata": {"labels": {"lbc.example/read": "yes"}}},
                         c.namespace)

    async def deployed() -> bool:
        return len(await c.aws.load_balancers()) == 1

    await eventually(deployed)
    assert await c.stop() == 0
