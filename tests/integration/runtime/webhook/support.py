"""Shared pieces of the webhook server tests: the Service the API server calls (mapped to the
test server's port, TLS checked for `<service>.<namespace>.svc`), configurations that point at
it, and a client for the local API server."""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import AlreadyExists
from runtime.resources import (
    MUTATINGWEBHOOKCONFIGURATIONS,
    NAMESPACES,
    VALIDATINGWEBHOOKCONFIGURATIONS,
)
from runtime.webhook import KeyPair, WebhookServer, WebhookServerOptions, service_dns_names
from runtime.webhook.certs import issue_ca, issue_serving
from tests.integration.runtime.envtest.webhooks import configuration, hook, rule

Obj = dict[str, Any]
NAMESPACE = "aiolbc-system"
SERVICE = "aiolbc-webhook-service"
SERVICE_PORT = 443
DNS_NAMES = service_dns_names(SERVICE, NAMESPACE)
DAY = 86400.0
FAST = ClientSettings(retry_initial_delay=0.005, retry_max_delay=0.02, max_retry_after=0.02)


class Pki:
    """A CA and serving certificates it signs for the webhook Service, valid now."""

    def __init__(self, common_name: str = "test-ca") -> None:
        self.ca = issue_ca(common_name, now=time.time(), validity=DAY)

    def serving(self) -> KeyPair:
        return issue_serving(self.ca, DNS_NAMES, now=time.time(), validity=DAY)

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()


def service_hook(name: str, path: str, *, policy: str, ca_bundle: str | None = None,
                 operations: Sequence[str] = ("CREATE", "UPDATE")) -> Obj:
    client: Obj = {"service": {"namespace": NAMESPACE, "name": SERVICE, "path": path,
                               "port": SERVICE_PORT}}
    if ca_bundle is not None:
        client["caBundle"] = ca_bundle
    return hook(name, client, [rule(["configmaps"], operations=list(operations), scope="*")],
                objectSelector={"matchLabels": {"policy": policy}}, namespaceSelector={},
                failurePolicy="Fail", matchPolicy="Equivalent", timeoutSeconds=10)


async def create_configuration(client: KubeClient, kind: str, name: str,
                               hooks: list[Obj]) -> Obj:
    resource = MUTATINGWEBHOOKCONFIGURATIONS if kind.startswith("Mutating") else \
        VALIDATINGWEBHOOKCONFIGURATIONS
    return await client.create(resource, configuration(kind, name, hooks))


def configmap(name: str, policy: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {"policy": policy}},
            "data": {"k": "v"}}


def options(cert_dir: Path, **overrides: Any) -> WebhookServerOptions:
    return WebhookServerOptions(**{"host": "127.0.0.1", "port": 0, "cert_dir": str(cert_dir),
                                   "cert_poll_interval": 0.05, **overrides})


def serve_service(envtest: EnvTestServer, server: WebhookServer) -> None:
    """Point the webhook Service at `server` (a replica)."""
    assert server.port is not None
    envtest.map_service(NAMESPACE, SERVICE, SERVICE_PORT, server.port)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
async def client(envtest_kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST,
                                                registry=CollectorRegistry()) as kube:
        with contextlib.suppress(AlreadyExists):
            await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": NAMESPACE}})
        yield kube
