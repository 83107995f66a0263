"""The self-managed CA and serving certificate: what they contain, what is checked when they
are read back, and when each is due for renewal (times are plain numbers: no clock needed)."""

from __future__ import annotations

import contextlib
import ssl
import time

import pytest
from cryptography import x509

from runtime.webhook.certs import (
    BACKDATE,
    CertificateError,
    KeyPair,
    issue_ca,
    issue_serving,
    load_certificates,
    load_key_pair,
    renewal_due,
)
from runtime.webhook.certwatcher import server_context

NOW = 1_800_000_000.0
DAY = 86400.0
NAMES = ("hooks.system.svc", "hooks.system.svc.cluster.local")


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return issue_ca("test-ca", now=NOW, validity=3650 * DAY)


@pytest.fixture(scope="module")
def serving(ca: KeyPair) -> KeyPair:
    return issue_serving(ca, NAMES, now=NOW, validity=365 * DAY)


def test_the_serving_certificate_names_the_service_and_is_signed_by_the_ca(
        ca: KeyPair, serving: KeyPair) -> None:
    info = load_key_pair(serving, issuers=ca.cert_pem)
    assert info.dns_names == frozenset(NAMES)
    assert info.is_ca is False
    assert (info.not_before, info.not_after) == (NOW - BACKDATE, NOW + 365 * DAY)
    leaf = x509.load_pem_x509_certificate(serving.cert_pem)
    usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in usage
    (ca_info,) = load_certificates(ca.cert_pem)
    assert ca_info.is_ca is True
    assert ca_info.not_after == NOW + 3650 * DAY


def test_python_tls_verifies_it_for_the_service_name() -> None:
    # The same verification the local API server applies to a webhook's certificate, at the
    # real time of day (TLS checks validity against it).
    ca = issue_ca("test-ca", now=time.time(), validity=DAY)
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    server = server_context(issue_serving(ca, NAMES, now=time.time(), validity=DAY))
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = client.wrap_bio(c_in, c_out, server_hostname=NAMES[0])
    peer = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side, out, into in ((conn, c_out, s_in), (peer, s_out, c_in)):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
            into.write(out.read())
    peer_cert = conn.getpeercert()
    assert peer_cert is not None
    assert peer_cert["subjectAltName"] == tuple(("DNS", n) for n in NAMES)


def test_a_serving_certificate_never_outlives_its_ca() -> None:
    short_ca = issue_ca("short", now=NOW, validity=30 * DAY)
    info = load_key_pair(issue_serving(short_ca, NAMES, now=NOW, validity=365 * DAY))
    assert info.not_after == NOW + 30 * DAY


def test_a_foreign_key_or_issuer_is_refused(ca: KeyPair, serving: KeyPair) -> None:
    other = issue_ca("other", now=NOW, validity=DAY)
    with pytest.raises(CertificateError, match="does not belong"):
        load_key_pair(KeyPair(serving.cert_pem, other.key_pem))
    with pytest.raises(CertificateError, match="not signed by the CA"):
        load_key_pair(serving, issuers=other.cert_pem)
    # Any CA of a bundle may have signed it: the previous one stays trusted after a rotation.
    assert load_key_pair(serving, issuers=other.cert_pem + ca.cert_pem).dns_names


@pytest.mark.parametrize("pem", [b"", b"garbage", b"-----BEGIN CERTIFICATE-----\nAAAA\n"
                                 b"-----END CERTIFICATE-----\n"])
def test_garbage_is_a_certificate_error(pem: bytes, serving: KeyPair) -> None:
    with pytest.raises(CertificateError):
        load_certificates(pem)
    with pytest.raises(CertificateError):
        load_key_pair(KeyPair(serving.cert_pem, pem))


@pytest.mark.parametrize(("days_later", "due"), [
    (0, False), (200, False), (243, False), (244, True), (364, True), (365, True), (400, True),
])
def test_renewal_is_due_with_a_third_of_the_lifetime_left(serving: KeyPair, days_later: int,
                                                          due: bool) -> None:
    info = load_key_pair(serving)
    # Lifetime 365 days + the backdating hour: due once less than a third of it is left.
    assert renewal_due(info, now=NOW + days_later * DAY, renew_fraction=1 / 3) is due


def test_a_certificate_from_the_future_is_due(serving: KeyPair) -> None:
    info = load_key_pair(serving)
    assert renewal_due(info, now=NOW - BACKDATE, renew_fraction=1 / 3) is False
    assert renewal_due(info, now=NOW - 3 * BACKDATE, renew_fraction=1 / 3) is True
