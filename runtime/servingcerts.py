"""Serving certificates for the HTTPS endpoints (secure metrics): read from a directory, as a
mounted `kubernetes.io/tls` Secret lays them out, or made self-signed at start when none is
given, as controller-runtime's metrics server does. A self-signed certificate suits a scraper
that authenticates with a token and skips server verification (Prometheus'
`insecure_skip_verify`); give a directory when scrapers verify the server."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path

__all__ = ["CERT_FILE", "KEY_FILE", "CertificateError", "load_server_context",
           "self_signed_server_context"]

# A kubernetes.io/tls Secret's keys, and controller-runtime's default CertName/KeyName.
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


class CertificateError(ValueError):
    """The certificate or key cannot be used; the message says which file and why."""


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def load_server_context(directory: str | Path) -> ssl.SSLContext:
    """A server context from `directory`'s tls.crt and tls.key (PEM)."""
    cert, key = Path(directory) / CERT_FILE, Path(directory) / KEY_FILE
    for path in (cert, key):
        if not path.is_file():
            raise CertificateError(f"{path} does not exist")
    context = _server_context()
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
        raise CertificateError(f"{cert} and {key} are not a usable certificate and key "
                               f"({reason})") from None
    return context


def self_signed_server_context(*, hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
                               days: int = 365) -> ssl.SSLContext:
    """A context serving a fresh self-signed certificate for `hosts` (names or addresses); the
    key never leaves the process except for the moment `load_cert_chain` reads it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    context = _server_context()
    # load_cert_chain reads files only: the key sits in a private temporary directory just
    # long enough to be loaded.
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp) / CERT_FILE, Path(tmp) / KEY_FILE
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        context.load_cert_chain(cert_path, key_path)
    return context
