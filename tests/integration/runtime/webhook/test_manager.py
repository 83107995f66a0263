"""The Manager serves the webhook server on every replica: a standby that does not hold the
lease answers the API server's calls too, and `/readyz` reports the webhook check."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.leaselock import format_micro_time
from runtime.manager import Manager, ManagerOptions
from runtime.resources import LEASES
from runtime.webhook import WebhookServer
from runtime.webhook.certwatcher import write_key_pair
from tests.integration.runtime.webhook.support import (
    Pki,
    create_configuration,
    options,
    serve_service,
    service_hook,
)
from tests.integration.runtime.webhook.test_reload import deny_all, refusal
from tests.support.waiting import eventually


async def readyz(manager: Manager) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(
            f"{manager.probes.url}/readyz?verbose") as resp:
        return resp.status, await resp.text()


async def test_a_standby_replica_serves_webhooks(envtest: EnvTestServer, client: KubeClient,
                                                 tmp_path: Path) -> None:
    now = format_micro_time(time.time())
    await client.create(LEASES, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "hooks-leader", "namespace": "default"},
        "spec": {"holderIdentity": "the-leader", "leaseDurationSeconds": 3600,
                 "acquireTime": now, "renewTime": now}})
    pki = Pki()
    write_key_pair(tmp_path / "certs", "tls.crt", "tls.key", pki.serving())
    server = WebhookServer(options(tmp_path / "certs"), registry=CollectorRegistry())
    server.register("/validate", deny_all)
    manager = Manager(client, registry=CollectorRegistry(), options=ManagerOptions(
        leader_election=True, leader_election_id="hooks-leader",
        leader_election_namespace="default", identity="standby",
        health_probe_bind_address="127.0.0.1:0", retry_period=0.2))
    manager.add_webhook_server(server)
    running = asyncio.create_task(manager.run())
    try:
        await eventually(server.ready)

        async def ready() -> bool:
            return (await readyz(manager))[0] == 200

        await eventually(ready)
        _, text = await readyz(manager)
        assert "[+]webhook ok" in text.splitlines()
        assert manager.leading is False

        serve_service(envtest, server)
        await create_configuration(client, "ValidatingWebhookConfiguration", "aiolbc-webhook", [
            service_hook("vconfigmap.example.com", "/validate", policy="checked",
                         ca_bundle=pki.ca_bundle)])
        assert "a refused by the webhook" in await refusal(client, "a")
    finally:
        manager.stop()
        assert await running == 0
    assert server.port is None  # stopped with the process


async def test_the_readiness_check_fails_without_a_certificate(client: KubeClient,
                                                               tmp_path: Path) -> None:
    server = WebhookServer(options(tmp_path / "empty"), registry=CollectorRegistry())
    manager = Manager(client, registry=CollectorRegistry(), options=ManagerOptions(
        health_probe_bind_address="127.0.0.1:0"))
    manager.add_webhook_server(server)
    running = asyncio.create_task(manager.run())
    try:

        async def listening() -> bool:
            return server.port is not None

        await eventually(listening)
        status, text = await readyz(manager)
        assert status == 500
        assert "[-]webhook failed: reason withheld" in text.splitlines()
    finally:
        manager.stop()
        assert await running == 0
