"""The webhook server against whoever can reach its port: thousands of connections that open
and then send half a request header (or not even a TLS handshake), while the API server calls
the webhook as usual. A short header timeout stands in for the default 10 s."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.connections import ConnectionLimits
from runtime.envtest import EnvTestServer
from runtime.errors import Forbidden
from runtime.resources import CONFIGMAPS
from runtime.webhook import AdmissionRequest, AdmissionResponse, WebhookServer, allowed, denied
from runtime.webhook.certwatcher import write_key_pair
from tests.integration.runtime.webhook.support import (
    DNS_NAMES,
    Pki,
    configmap,
    create_configuration,
    options,
    serve_service,
    service_hook,
)

SLOW_TLS = 2000  # a TLS handshake, then half a header
SILENT = 200  # not even a handshake
HEADER_TIMEOUT = 1.0
HALF_HEADER = b"POST /validate-v1-configmap HTTP/1.1\r\nHost: hooks\r\nContent-Type: appl"


def policy(req: AdmissionRequest) -> AdmissionResponse:
    if req.name == "bad":
        return denied("configmaps named bad are not allowed")
    return allowed()


async def test_slow_connections_are_closed_within_the_header_timeout_while_reviews_go_on(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path,
        registry: CollectorRegistry) -> None:
    pki = Pki()
    write_key_pair(tmp_path / "certs", "tls.crt", "tls.key", pki.serving())
    limits = ConnectionLimits(header_timeout=HEADER_TIMEOUT)
    async with WebhookServer(options(tmp_path / "certs", limits=limits),
                             registry=registry) as server:
        server.register("/validate-v1-configmap", policy)
        serve_service(envtest, server)
        await create_configuration(client, "ValidatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("vconfigmap.example.com", "/validate-v1-configmap", policy="checked",
                         ca_bundle=pki.ca_bundle)])  # failurePolicy Fail: no answer, no write
        trust = ssl.create_default_context(cadata=pki.ca.cert_pem.decode())
        assert server.port is not None
        port = server.port
        held: list[float] = []  # seconds from connect to the server's close, per connection
        opened = 0
        half_open = asyncio.Event()  # half the flood holds connections
        gate = asyncio.Semaphore(100)  # connects in flight, as a client with a pool would

        async def slow(tls: bool) -> None:
            nonlocal opened
            async with gate:
                started = time.monotonic()
                try:
                    reader, writer = await asyncio.open_connection(
                        "127.0.0.1", port, ssl=trust if tls else None,
                        server_hostname=DNS_NAMES[0] if tls else None)
                except (OSError, ssl.SSLError):
                    held.append(time.monotonic() - started)  # closed during the handshake
                    return
                if tls:
                    writer.write(HALF_HEADER)
                opened += 1
                if opened == (SLOW_TLS + SILENT) // 2:
                    half_open.set()
            with contextlib.suppress(OSError, ssl.SSLError):
                while await reader.read(4096):
                    pass
            held.append(time.monotonic() - started)
            writer.close()

        flood = [asyncio.create_task(slow(tls=i >= SILENT)) for i in range(SLOW_TLS + SILENT)]
        await asyncio.wait_for(half_open.wait(), 60)
        # The API server's calls get through meanwhile: the handler's own answers.
        await client.create(CONFIGMAPS, configmap("good", "checked"))
        with pytest.raises(Forbidden, match="configmaps named bad are not allowed"):
            await client.create(CONFIGMAPS, configmap("bad", "checked"))
        await asyncio.wait_for(asyncio.gather(*flood), 60)

        guard = server.connections
        assert guard is not None
        assert len(held) == SLOW_TLS + SILENT
        # Each closed within the header timeout (plus what a loop busy with 2,200 handshakes
        # adds), never the hour aiohttp keeps them.
        assert max(held) < HEADER_TIMEOUT + 3.0, sorted(held)[-10:]
        assert guard.peak <= limits.max_connections
        assert guard.expired + guard.evicted >= SLOW_TLS + SILENT
        assert guard.open == 0
    assert registry.get_sample_value("controller_runtime_webhook_requests_total",
                                     {"webhook": "/validate-v1-configmap", "code": "200"}) == 2
