"""Renewal of self-managed certificates, driven by a fake clock that starts in the past, so
every certificate issued is valid at the real time of day and the local API server's TLS
verification (which uses the real time) still passes at each step."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.clock import FakeClock
from runtime.envtest import EnvTestServer
from runtime.resources import SECRETS
from runtime.webhook import SelfManagedCertificates, WebhookServer
from runtime.webhook.certs import load_certificates
from tests.integration.runtime.webhook.support import NAMESPACE, options, serve_service
from tests.integration.runtime.webhook.test_selfmanaged import (
    SECRET,
    SETTINGS,
    bundles,
    configure,
    deny_all,
    fingerprint,
    refusal,
    secret_data,
    versions,
)
from tests.support.waiting import eventually

DAY = 86400.0


def clock_at(days_ago: float) -> FakeClock:
    return FakeClock(wall_start=time.time() - days_ago * DAY)


async def test_the_serving_certificate_is_renewed_under_the_same_ca(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path) -> None:
    await configure(client)
    clock = clock_at(270)
    # One pass now, the next one 269 days later (fake time).
    settings = dataclasses.replace(SETTINGS, sync_interval=269 * DAY)
    certificates = SelfManagedCertificates(client, settings, clock=clock)
    server = WebhookServer(options(tmp_path / "certs"), registry=CollectorRegistry(),
                           certificates=certificates)
    server.register("/validate", deny_all)
    async with server:
        serve_service(envtest, server)
        await eventually(server.ready)
        assert server.certificate is not None
        first = server.certificate.fingerprint
        ca_before = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))["ca.crt"]

        async def injected() -> bool:
            return await bundles(client) == [base64.b64encode(ca_before).decode()] * 3

        await eventually(injected)
        assert "a refused by the webhook" in await refusal(client, "a")
        _, *configs_before = await versions(client)

        # 269 days into a 365-day certificate: less than a third of its lifetime left.
        await clock.advance(270 * DAY)

        async def renewed() -> bool:
            current = server.certificate
            return current is not None and current.fingerprint != first

        await eventually(renewed)
        stored = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
        assert server.certificate is not None
        assert server.certificate.fingerprint == fingerprint(stored["tls.crt"])
        assert stored["ca.crt"] == ca_before
        # Same CA: the configurations were not touched, and the next call verifies.
        _, *configs_after = await versions(client)
        assert configs_after == configs_before
        assert "b refused by the webhook" in await refusal(client, "b")


async def test_a_ca_rotation_keeps_replicas_on_the_old_certificate_trusted(
        envtest: EnvTestServer, client: KubeClient, tmp_path: Path) -> None:
    await configure(client)
    # A short-lived CA (30 days) and serving certificates (10 days), so that one test sees a
    # serving renewal and then a CA rotation. Both replicas start 21 days ago.
    settings = dataclasses.replace(SETTINGS, ca_validity=30 * DAY, cert_validity=10 * DAY)
    clocks = [clock_at(21), clock_at(21)]
    provisioners = [SelfManagedCertificates(client, settings, clock=c) for c in clocks]
    servers = [WebhookServer(options(tmp_path / name), registry=CollectorRegistry())
               for name in ("a", "b")]
    for server in servers:
        server.register("/validate", deny_all)
        await server.start()
    try:
        for provisioner, server in zip(provisioners, servers, strict=True):
            server.install((await provisioner.sync()).serving)
        # 19 days later (2 days ago) the 10-day serving certificate has expired; the CA,
        # with 11 of 30 days left, has not reached its last third.
        for clock in clocks:
            await clock.advance(19 * DAY)
        for provisioner, server in zip(provisioners, servers, strict=True):
            server.install((await provisioner.sync()).serving)
        stored = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
        assert len(load_certificates(stored["ca.crt"])) == 1
        old_ca = stored["ca.crt"]
        first, second = servers[0].certificate, servers[1].certificate
        assert first is not None
        assert second is not None
        assert first.fingerprint == second.fingerprint

        # Now (real time) replica a finds the CA due: a new CA and serving certificate.
        await clocks[0].advance(2 * DAY)
        rotated = await provisioners[0].sync()
        servers[0].install(rotated.serving)
        stored = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
        trusted = load_certificates(stored["ca.crt"])
        assert len(trusted) == 2
        assert trusted[1].pem == load_certificates(old_ca)[0].pem
        assert await bundles(client) == [rotated.ca_bundle] * 3

        # Replica b has not synced yet and still serves the old CA's certificate: trusted.
        serve_service(envtest, servers[1])
        assert "b refused by the webhook" in await refusal(client, "b")
        serve_service(envtest, servers[0])
        assert "a refused by the webhook" in await refusal(client, "a")

        await clocks[1].advance(2 * DAY)
        servers[1].install((await provisioners[1].sync()).serving)
        first, second = servers[0].certificate, servers[1].certificate
        assert first is not None
        assert second is not None
        assert first.fingerprint == second.fingerprint == fingerprint(rotated.serving.cert_pem)
    finally:
        for server in servers:
            await server.stop()


async def test_replicas_renewing_together_adopt_one_certificate(client: KubeClient) -> None:
    await configure(client)
    original = await SelfManagedCertificates(client, SETTINGS, clock=clock_at(300)).sync()
    replicas = [SelfManagedCertificates(client, SETTINGS, clock=clock_at(0)) for _ in range(3)]
    results = await asyncio.gather(*(r.settle_secret() for r in replicas))
    assert len({r.serving for r in results}) == 1
    assert results[0].serving != original.serving
    assert results[0].ca_pem == original.ca_pem
    stored = secret_data(await client.get(SECRETS, SECRET, NAMESPACE))
    assert stored["tls.crt"] == results[0].serving.cert_pem
