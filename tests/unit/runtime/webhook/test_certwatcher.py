"""The serving certificate follows its files: new connections get a changed certificate, open
ones keep theirs, unusable files leave the current one in place, and a server without any
certificate listens but is not ready."""

from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from runtime.webhook import KeyPair, WebhookServer, WebhookServerOptions
from runtime.webhook.certs import issue_serving
from runtime.webhook.certwatcher import write_key_pair
from tests.support.waiting import eventually
from tests.unit.runtime.webhook.conftest import DAY, NAME, Pki


async def presented(server: WebhookServer,
                    trust: ssl.SSLContext) -> tuple[str, asyncio.StreamWriter]:
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=trust,
                                              server_hostname=NAME)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    return hashlib.sha256(der).hexdigest(), writer


def fingerprint(pair: KeyPair) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pair.cert_pem.decode())).hexdigest()


async def test_changed_files_serve_new_connections(server: WebhookServer, pki: Pki,
                                                   cert_dir: Path) -> None:
    first = server.certificate
    assert first is not None
    seen, kept_open = await presented(server, pki.client_context())
    assert seen == first.fingerprint
    other = Pki("second-ca")
    second = other.serving()
    write_key_pair(cert_dir, "tls.crt", "tls.key", second)

    async def swapped() -> bool:
        return server.certificate is not None and \
            server.certificate.fingerprint == fingerprint(second)

    await eventually(swapped)  # no reload call: the poll notices
    seen, writer = await presented(server, other.client_context())
    assert seen == fingerprint(second)
    writer.close()
    # The connection opened before the change still has the first certificate.
    assert hashlib.sha256(kept_open.get_extra_info("ssl_object").getpeercert(
        binary_form=True)).hexdigest() == first.fingerprint
    kept_open.close()
    with pytest.raises(ssl.SSLCertVerificationError):
        await presented(server, pki.client_context())


async def test_the_expiry_metric_follows_the_certificate_served(
        server: WebhookServer, cert_dir: Path, registry: CollectorRegistry) -> None:
    # What the certificate-expiry alert reads: the notAfter of the certificate in use, moved by
    # a renewal, kept when the new files cannot be loaded.
    def expiry() -> float | None:
        return registry.get_sample_value("certwatcher_certificate_expiry_timestamp_seconds")

    first = server.certificate
    assert first is not None
    assert expiry() == first.not_after
    renewed = issue_serving(Pki("renewing-ca").ca, (NAME,), now=time.time(),
                            validity=DAY / 2)
    write_key_pair(cert_dir, "tls.crt", "tls.key", renewed)
    assert server.reload() is True
    assert server.certificate is not None
    assert server.certificate.not_after < first.not_after
    assert expiry() == server.certificate.not_after
    (cert_dir / "tls.crt").write_bytes(b"not a certificate")
    assert server.reload() is False
    assert expiry() == server.certificate.not_after


async def test_unusable_files_keep_the_current_certificate(server: WebhookServer, pki: Pki,
                                                           cert_dir: Path,
                                                           registry: CollectorRegistry) -> None:
    current = server.certificate
    assert current is not None
    stranger = Pki("stranger").serving()
    (cert_dir / "tls.key").write_bytes(stranger.key_pem)  # a key that is not the cert's
    assert server.reload() is False
    (cert_dir / "tls.crt").write_bytes(b"not a certificate")
    assert server.reload() is False
    assert server.certificate == current
    assert (registry.get_sample_value("certwatcher_read_certificate_errors_total") or 0) >= 2
    seen, writer = await presented(server, pki.client_context())
    assert seen == current.fingerprint
    writer.close()


async def test_without_a_certificate_the_server_listens_but_is_not_ready(
        tmp_path: Path, pki: Pki) -> None:
    cert_dir = tmp_path / "empty"
    options = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(cert_dir),
                                   cert_poll_interval=0.05)
    async with WebhookServer(options, registry=CollectorRegistry()) as server:
        assert server.port
        assert server.certificate is None
        assert await server.ready() is False
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await presented(server, pki.client_context())
        pair = pki.serving()
        assert server.install(pair) is True
        assert server.install(pair) is False  # same files: nothing to do
        assert await server.ready() is True
        seen, writer = await presented(server, pki.client_context())
        assert seen == fingerprint(pair)
        writer.close()
        assert (cert_dir / "tls.key").stat().st_mode & 0o777 == 0o600
