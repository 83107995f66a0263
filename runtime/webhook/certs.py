"""The certificates of a self-managed webhook: a CA, and a serving certificate it signs for the
webhook Service's DNS names. Pure functions of their inputs and of `now` (Unix seconds), so
expiry decisions are tested with a fake clock.

Keys are ECDSA P-256: fast to generate on every replica's first start, and accepted by every
Kubernetes API server. Certificates are backdated by `BACKDATE` so that a replica (or API
server) whose clock is a little behind still accepts a certificate issued a moment ago.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "BACKDATE",
    "CertificateError",
    "IssuedCertificate",
    "KeyPair",
    "issue_ca",
    "issue_serving",
    "load_certificates",
    "load_key_pair",
    "renewal_due",
]

BACKDATE = 3600.0
_PEM_BEGIN = b"-----BEGIN CERTIFICATE-----"


class CertificateError(ValueError):
    """PEM data that is not a usable certificate or key."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True)
class IssuedCertificate:
    """What the decisions need to know about one certificate."""

    pem: bytes
    not_before: float
    not_after: float
    dns_names: frozenset[str]
    fingerprint: str  # sha256, hex
    is_ca: bool

    @property
    def lifetime(self) -> float:
        return self.not_after - self.not_before


def _utc(ts: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _usage(*, signing: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False,
                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                         key_cert_sign=signing, crl_sign=signing, encipher_only=False,
                         decipher_only=False)


def issue_ca(common_name: str, *, now: float, validity: float) -> KeyPair:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(_utc(now - BACKDATE)).not_valid_after(_utc(now + validity))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(signing=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_serving(ca: KeyPair, dns_names: Sequence[str], *, now: float,
                  validity: float) -> KeyPair:
    """A serving certificate for `dns_names`, signed by `ca`, never outliving it."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    ca_cert = _load_one(ca.cert_pem)
    ca_key = _load_private_key(ca.key_pem)
    key = _new_key()
    not_after = min(_utc(now + validity), ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_utc(now - BACKDATE)).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(signing=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


# ---- reading -------------------------------------------------------------------------------


def _load_one(pem: bytes) -> x509.Certificate:
    certs = _load_all(pem)
    return certs[0]


def _load_all(pem: bytes) -> list[x509.Certificate]:
    if _PEM_BEGIN not in pem:
        raise CertificateError("no PEM certificate found")
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise CertificateError(f"cannot parse certificate: {exc}") from None


def _load_private_key(pem: bytes) -> ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"cannot parse private key: {exc}") from None
    # A CA made elsewhere (an RSA one from a Helm chart) can sign as well as ours.
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise CertificateError("the private key is neither an ECDSA nor an RSA key")
    return key


def _describe(cert: x509.Certificate) -> IssuedCertificate:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = frozenset(san.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        names = frozenset()
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    return IssuedCertificate(
        pem=cert.public_bytes(serialization.Encoding.PEM),
        not_before=cert.not_valid_before_utc.timestamp(),
        not_after=cert.not_valid_after_utc.timestamp(), dns_names=names,
        fingerprint=cert.fingerprint(hashes.SHA256()).hex(), is_ca=is_ca)


def load_certificates(pem: bytes) -> list[IssuedCertificate]:
    """Every certificate of a PEM bundle, in order; raises CertificateError."""
    return [_describe(cert) for cert in _load_all(pem)]


def load_key_pair(pair: KeyPair, *, issuers: bytes | None = None) -> IssuedCertificate:
    """The leaf of `pair` after checking that its key belongs to it and, with `issuers`, that
    one of those certificates signed it; raises CertificateError saying what is wrong."""
    cert = _load_one(pair.cert_pem)
    key = _load_private_key(pair.key_pem)
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, public) != \
            cert.public_key().public_bytes(serialization.Encoding.DER, public):
        raise CertificateError("the private key does not belong to the certificate")
    if issuers is not None:
        for issuer in _load_all(issuers):
            try:
                cert.verify_directly_issued_by(issuer)
            except (ValueError, TypeError, InvalidSignature):
                continue
            break
        else:
            raise CertificateError("the certificate is not signed by the CA")
    return _describe(cert)


def renewal_due(cert: IssuedCertificate, *, now: float, renew_fraction: float) -> bool:
    """Whether `cert` should be replaced now: not valid yet (beyond the backdating margin),
    expired, or with less than `renew_fraction` of its lifetime left."""
    if now < cert.not_before - BACKDATE or now >= cert.not_after:
        return True
    return cert.not_after - now < renew_fraction * cert.lifetime
