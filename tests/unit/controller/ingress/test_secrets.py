"""Which Secrets the Ingress controller reads: those an Ingress's own `auth-idp-oidc`, or a
Service it routes to, names, in their namespace, each for as long as something references it."""

from __future__ import annotations

import json
from pathlib import Path

from controller.ingress.secrets import ReferencedSecrets
from controller.ingress.watches import SERVICE_INDEX, ingress_service_index
from runtime.client import KubeClient
from runtime.store import Store
from tests.support.objects import backend_service, ingress, ingress_path

OIDC = "alb.ingress.kubernetes.io/auth-idp-oidc"


def oidc(secret: str) -> str:
    return json.dumps({"issuer": "https://idp", "authorizationEndpoint": "https://idp/a",
                       "tokenEndpoint": "https://idp/t", "userInfoEndpoint": "https://idp/u",
                       "secretName": secret})


async def test_references_follow_ingresses_and_the_services_they_route_to(
        envtest_kubeconfig: Path) -> None:
    ingresses, services = Store(), Store()
    ingresses.add_indexer(SERVICE_INDEX, ingress_service_index)
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client:
        secrets = ReferencedSecrets(client)
        on_ingress = secrets.ingress_events(services, ingress_service_index)
        on_service = secrets.service_events(ingresses, SERVICE_INDEX)

        own = ingress("own", namespace="shop", paths=[ingress_path("/", "api")],
                      annotations={OIDC: oidc("creds")})
        ingresses.upsert(own)
        on_ingress.on_add(own, True)
        assert secrets.referenced == {"shop/creds"}

        # A Service's annotation counts only while an Ingress routes to it.
        svc = backend_service("web", namespace="shop", annotations={OIDC: oidc("svc-creds")})
        services.upsert(svc)
        on_service.on_add(svc, True)
        assert secrets.referenced == {"shop/creds"}
        routed = ingress("routed", namespace="shop", paths=[ingress_path("/", "web")])
        ingresses.upsert(routed)
        on_ingress.on_add(routed, False)
        assert secrets.referenced == {"shop/creds", "shop/svc-creds"}

        # Two references to one Secret: it stays until the last one goes.
        twin = ingress("twin", namespace="shop", paths=[ingress_path("/", "api")],
                       annotations={OIDC: oidc("creds")})
        ingresses.upsert(twin)
        on_ingress.on_add(twin, False)
        ingresses.delete("shop/own")
        on_ingress.on_delete(own)
        assert secrets.referenced == {"shop/creds", "shop/svc-creds"}
        ingresses.delete("shop/twin")
        on_ingress.on_delete(twin)
        assert secrets.referenced == {"shop/svc-creds"}
        # A Secret is always looked up in the referencing object's own namespace.
        other = ingress("x", namespace="attacker", annotations={OIDC: oidc("svc-creds")})
        on_ingress.on_add(other, False)
        assert secrets.referenced == {"shop/svc-creds", "attacker/svc-creds"}
        assert secrets.get("shop/svc-creds") is None  # nothing read yet: not leading
