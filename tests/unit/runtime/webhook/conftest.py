"""A webhook server on loopback with a certificate from a test CA, and a client that trusts
that CA and checks the Service name, as the API server does."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from runtime.webhook import KeyPair, WebhookServer, WebhookServerOptions
from runtime.webhook.certs import issue_ca, issue_serving
from runtime.webhook.certwatcher import write_key_pair

NAME = "hooks.system.svc"
DAY = 86400.0


class Pki:
    """A CA and serving certificates it signs, valid now."""

    def __init__(self, common_name: str = "test-ca") -> None:
        self.ca = issue_ca(common_name, now=time.time(), validity=DAY)

    def serving(self, *names: str) -> KeyPair:
        return issue_serving(self.ca, names or (NAME,), now=time.time(), validity=DAY)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca.cert_pem.decode())


class Caller:
    def __init__(self, server: WebhookServer, pki: Pki) -> None:
        self.server = server
        self.pki = pki

    async def post(self, path: str, body: bytes | Any, *, method: str = "POST",
                   content_type: str = "application/json",
                   params: dict[str, str] | None = None) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with aiohttp.ClientSession() as session, session.request(
                method, f"https://127.0.0.1:{self.server.port}{path}", data=data,
                params=params, headers={"Content-Type": content_type},
                ssl=self.pki.client_context(), server_hostname=NAME) as resp:
            raw = await resp.read()
            return resp.status, json.loads(raw) if raw else None


def review(uid: str | None = "u-1", name: str = "c", **request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "operation": "CREATE", "name": name, "namespace": "default",
        "object": {"metadata": {"name": name}}, **request}}


@pytest.fixture
def pki() -> Pki:
    return Pki()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    return tmp_path / "serving-certs"


@pytest.fixture
async def server(pki: Pki, cert_dir: Path,
                 registry: CollectorRegistry) -> AsyncIterator[WebhookServer]:
    write_key_pair(cert_dir, "tls.crt", "tls.key", pki.serving())
    options = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(cert_dir),
                                   cert_poll_interval=0.05)
    async with WebhookServer(options, registry=registry) as running:
        yield running


@pytest.fixture
def caller(server: WebhookServer, pki: Pki) -> Caller:
    return Caller(server, pki)
