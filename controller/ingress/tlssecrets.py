"""Certificates from Kubernetes TLS Secrets (`spec.tls[].secretName`, with
`--enable-secret-certificates`): which Secrets an Ingress names, and each one read defensively
into an `ImportedCertificate`.

A Secret is read from the Ingress's own namespace only (the field has no namespace). Its bytes
are hostile: the Secret must be of type `kubernetes.io/tls`, its `tls.crt` a PEM certificate
(the first is the served one, the rest its chain) and `tls.key` the PEM private key of that
certificate, within ACM's own size bounds; anything else is one `BuildError` naming the Secret,
and no AWS call is made for the group. The version that stands for the material in digests is
the digest of the public certificate and chain: nothing secret is digested.

The admission webhook reads no Secret (`admission.PresumedSecrets`, whose Secrets have no uid):
such a Secret is taken as a well-formed certificate, so a missing or malformed one is the
reconciler's to report.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from controller.flagrules import dns_subdomain_problem
from controller.ingress.merge import BuildError, MissingObject
from controller.model import ImportedCertificate, digest
from runtime.objects import Obj, meta

TLS_SECRET_TYPE: Final = "kubernetes.io/tls"
# ACM ImportCertificate: certificate ≤ 32 KiB, private key ≤ 5 KiB (an RSA 4096 key in PEM is
# about 3.3 KiB), chain ≤ 2 MiB; a Secret is at most 1 MiB anyway.
MAX_CERTIFICATE: Final = 32 * 1024
MAX_PRIVATE_KEY: Final = 5 * 1024
MAX_CHAIN_CERTIFICATES: Final = 10
_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.+?\r?\n-----END CERTIFICATE-----",
                       re.DOTALL)
_PRESUMED_VERSION: Final = "presumed"


def tls_secret_names(ing: Mapping[str, Any]) -> list[str]:
    """Secret names an Ingress's `spec.tls[].secretName` reference (never raises); a value that
    cannot name a Secret is no reference (the build refuses it, `secret_name_problem`)."""
    spec = ing.get("spec")
    tls = spec.get("tls") if isinstance(spec, dict) else None
    if not isinstance(tls, list):
        return []
    names = [t.get("secretName") for t in tls if isinstance(t, dict)]
    return sorted({n for n in names
                   if isinstance(n, str) and n and dns_subdomain_problem(n) is None})


def secret_name_problem(name: str, *, where: str) -> None:
    """Raises `BuildError` when `name` cannot be a Secret's name."""
    problem = dns_subdomain_problem(name)
    if problem is not None:
        raise BuildError(f"{where}: spec.tls secretName {problem}")


def read_certificate(secret: Obj | None, key: str, *, where: str) -> ImportedCertificate:
    """The certificate Secret `key` (namespace/name) holds; `where` names the Ingress."""
    if secret is None:
        raise MissingObject(f"{where}: TLS Secret {key} not found")
    if not meta(secret).get("uid"):
        return ImportedCertificate(secret=key, version=_PRESUMED_VERSION)
    bad = f"{where}: Secret {key} is not a TLS certificate"
    if secret.get("type") != TLS_SECRET_TYPE:
        raise BuildError(f"{bad}: its type is not {TLS_SECRET_TYPE}")
    data = secret.get("data") or {}
    crt = _decoded(data, "tls.crt", MAX_CERTIFICATE * (MAX_CHAIN_CERTIFICATES + 1), bad)
    pem_key = _decoded(data, "tls.key", MAX_PRIVATE_KEY, bad)
    blocks = _PEM_CERT.findall(crt)
    if not blocks:
        raise BuildError(f"{bad}: tls.crt holds no PEM certificate")
    if len(blocks) > MAX_CHAIN_CERTIFICATES + 1:
        raise BuildError(f"{bad}: tls.crt holds {len(blocks)} certificates, at most "
                         f"{MAX_CHAIN_CERTIFICATES + 1} are taken")
    if len(blocks[0]) > MAX_CERTIFICATE:
        raise BuildError(f"{bad}: its certificate is larger than ACM's {MAX_CERTIFICATE} bytes")
    try:
        certs = [x509.load_pem_x509_certificate(block) for block in blocks]
    except ValueError:
        raise BuildError(f"{bad}: tls.crt holds a PEM block that is not a certificate") from None
    try:
        private = serialization.load_pem_private_key(pem_key, password=None)
    except (ValueError, TypeError):
        raise BuildError(f"{bad}: tls.key is not an unencrypted PEM private key") from None
    if not isinstance(private, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise BuildError(f"{bad}: ACM imports RSA and ECDSA keys only")
    served = certs[0].public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    held = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if served != held:
        raise BuildError(f"{where}: Secret {key}: tls.key is not the private key of the "
                         "certificate in tls.crt")
    certificate = blocks[0].decode()
    chain = "\n".join(block.decode() for block in blocks[1:])
    return ImportedCertificate(
        secret=key, version=digest(b"\n".join(blocks)), certificate=certificate, chain=chain,
        private_key=pem_key.decode())


def _decoded(data: Mapping[str, Any], name: str, limit: int, bad: str) -> bytes:
    raw = data.get(name)
    if not isinstance(raw, str) or not raw:
        raise BuildError(f"{bad}: it has no {name}")
    # base64 is 4/3 of the bytes: refuse what cannot fit before decoding it.
    if len(raw) > (limit * 4) // 3 + 4:
        raise BuildError(f"{bad}: {name} is larger than ACM accepts")
    try:
        value = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise BuildError(f"{bad}: {name} is not base64") from None
    if len(value) > limit:
        raise BuildError(f"{bad}: {name} is larger than ACM accepts")
    try:
        value.decode("ascii")
    except UnicodeDecodeError:
        raise BuildError(f"{bad}: {name} is not PEM") from None
    return value


__all__ = ["TLS_SECRET_TYPE", "read_certificate", "secret_name_problem", "tls_secret_names"]
