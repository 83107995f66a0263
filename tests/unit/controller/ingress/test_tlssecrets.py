"""Certificates from `spec.tls[].secretName` in the pure stage: the Secret read defensively
(one message naming it for anything that is not a certificate and its key), the Ingress's own
namespace only, the certificate's public digest in the checkpoint, the same decision at
admission (which reads no Secret)."""

from __future__ import annotations

import base64
import dataclasses
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from controller.errors import InvalidInput
from controller.ingress import admit, build_group
from controller.ingress.admission import PresumedSecrets
from controller.ingress.merge import BuildError, MissingObject
from controller.ingress.secrets import ingress_secrets
from controller.ingress.tlssecrets import read_certificate, tls_secret_names
from controller.model import ImportedCertificate, Ref
from controller.model.canonical import canonical_json, checkpoint_digest
from runtime.objects import Obj
from runtime.reconcile import Request
from runtime.store import Store
from runtime.webhook.certs import KeyPair, issue_ca, issue_serving
from tests.support.objects import backend_service, ingress, ingress_class, ingress_path
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
HTTPS = {A + "listen-ports": '[{"HTTPS": 443}]'}
ON = dataclasses.replace(SETTINGS, secret_certificates=True)
DAY = 86400.0
KEY = "default/shop-tls"


def _pair(host: str = "shop.example.com") -> tuple[KeyPair, KeyPair]:
    ca = issue_ca("team-ca", now=time.time(), validity=30 * DAY)
    return ca, issue_serving(ca, [host], now=time.time(), validity=30 * DAY)


def tls_secret(crt: bytes, key: bytes, *, name: str = "shop-tls", kind: str = "kubernetes.io/tls",
               namespace: str = "default", uid: str = "uid-1") -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "type": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "resourceVersion": "1"},
            "data": {"tls.crt": base64.b64encode(crt).decode(),
                     "tls.key": base64.b64encode(key).decode()}}


def test_a_certificate_with_its_chain_and_key_is_read() -> None:
    ca, pair = _pair()
    cert = read_certificate(tls_secret(pair.cert_pem + ca.cert_pem, pair.key_pem), KEY,
                            where="Ingress default/shop")
    assert cert.secret == KEY
    assert cert.certificate.encode().strip() == pair.cert_pem.strip()
    assert cert.chain.encode().strip() == ca.cert_pem.strip()
    assert cert.private_key.encode() == pair.key_pem
    # The version digests public material only: the same certificate with another key...
    # cannot exist; a new certificate is a new version.
    _, other = _pair()
    again = read_certificate(tls_secret(other.cert_pem + ca.cert_pem, other.key_pem), KEY,
                             where="x")
    assert again.version != cert.version
    # Nothing of the PEM reaches the canonical JSON.
    dumped = cert.model_dump(mode="json")
    assert dumped["private_key"] == "[REDACTED]"
    assert dumped["certificate"] == "[REDACTED]"


def _encrypted(pair: KeyPair) -> bytes:
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.BestAvailableEncryption(b"pw"))


def _secrets() -> dict[str, tuple[Obj, str]]:
    ca, pair = _pair()
    _, other = _pair()
    not_tls = "is not a TLS certificate"
    return {
        "opaque": (tls_secret(pair.cert_pem, pair.key_pem, kind="Opaque"),
                   f"{not_tls}: its type is not kubernetes.io/tls"),
        "no-cert": ({**tls_secret(pair.cert_pem, pair.key_pem),
                     "data": {"tls.key": base64.b64encode(pair.key_pem).decode()}},
                    f"{not_tls}: it has no tls.crt"),
        "not-base64": ({**tls_secret(pair.cert_pem, pair.key_pem),
                        "data": {"tls.crt": "***", "tls.key": "***"}},
                       f"{not_tls}: tls.crt is not base64"),
        "no-pem": (tls_secret(b"hello", pair.key_pem), f"{not_tls}: tls.crt holds no PEM "
                   "certificate"),
        "bad-block": (tls_secret(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
                                 pair.key_pem),
                      f"{not_tls}: tls.crt holds a PEM block that is not a certificate"),
        "huge-cert": (tls_secret(pair.cert_pem + b"x" * (400 * 1024), pair.key_pem),
                      f"{not_tls}: tls.crt is larger than ACM accepts"),
        "huge-key": (tls_secret(pair.cert_pem, pair.key_pem + b"x" * (6 * 1024)),
                     f"{not_tls}: tls.key is larger than ACM accepts"),
        "long-chain": (tls_secret(pair.cert_pem + ca.cert_pem * 11, pair.key_pem),
                       f"{not_tls}: tls.crt holds 12 certificates, at most 11 are taken"),
        "encrypted": (tls_secret(pair.cert_pem, _encrypted(pair)),
                      f"{not_tls}: tls.key is not an unencrypted PEM private key"),
        "not-ascii": (tls_secret(pair.cert_pem, "é".encode()), f"{not_tls}: tls.key is not PEM"),
        "mismatch": (tls_secret(pair.cert_pem, other.key_pem),
                     "tls.key is not the private key of the certificate in tls.crt"),
    }


@pytest.mark.parametrize("case", sorted(_secrets()))
def test_what_is_not_a_certificate_and_its_key_is_one_message(case: str) -> None:
    secret, words = _secrets()[case]
    with pytest.raises(BuildError) as info:
        read_certificate(secret, KEY, where="Ingress default/shop")
    assert str(info.value).startswith(f"Ingress default/shop: Secret {KEY}")
    assert words in str(info.value)


def test_a_missing_secret_is_waited_for_and_a_presumed_one_taken_as_well_formed() -> None:
    with pytest.raises(MissingObject, match=f"TLS Secret {KEY} not found"):
        read_certificate(None, KEY, where="Ingress default/shop")
    presumed = PresumedSecrets().get(KEY)
    assert read_certificate(presumed, KEY, where="x") == ImportedCertificate(
        secret=KEY, version="presumed")


@pytest.mark.parametrize("spec", [
    {"tls": "shop-tls"}, {"tls": [None, 3, "x"]}, {"tls": [{"secretName": 5}]},
    {"tls": [{"secretName": ""}]}, {"tls": {"secretName": "x"}}, "spec",
])
def test_hostile_tls_sections_name_no_secret(spec: Any) -> None:
    assert tls_secret_names({"spec": spec}) == []


def test_a_secret_is_read_in_the_ingress_s_namespace_only() -> None:
    ing = ingress("shop", namespace="team-a")
    ing["spec"]["tls"] = [{"secretName": "other-ns/shop-tls"}, {"secretName": "b"}]
    # A name with a namespace in it names no Secret at all: it is never watched.
    assert ingress_secrets(ing, Store(), [], tls=True) == {"team-a/b"}
    assert ingress_secrets(ing, Store(), []) == set()


def test_a_secret_name_that_cannot_be_one_is_refused_before_any_read() -> None:
    ing = _shop("../kube-system/token")
    c = caches(ingress_class("alb"), backend_service("web"), ing)
    with pytest.raises(BuildError, match=r"Ingress default/shop: spec\.tls secretName "
                       r"'\.\./kube-system/token' is not a lowercase RFC 1123 subdomain"):
        build_group(loader(c).load(Request("default", "shop")), c, ON)


def _shop(secret_name: str | None = "shop-tls", **annotations: str) -> Obj:
    ing = ingress("shop", {**HTTPS, **annotations}, paths=[ingress_path("/")])
    ing["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": secret_name}]
    return ing


def test_the_listener_serves_the_imported_certificate_and_its_version_is_checkpointed() -> None:
    ca, pair = _pair()
    secret = tls_secret(pair.cert_pem + ca.cert_pem, pair.key_pem)
    c = caches(ingress_class("alb"), backend_service("web"), _shop(), secret)
    group = loader(c).load(Request("default", "shop"))
    built = build_group(group, c, ON)
    (rid, cert), = built.stack.certificates.items()
    assert isinstance(cert, ImportedCertificate)
    assert cert.secret == KEY
    assert rid == KEY
    assert built.stack.listeners["443"].certificates == (
        Ref.to("AWS::CertificateManager::Certificate", KEY, "certificateARN"),)
    assert KEY in built.secrets
    assert b"PRIVATE KEY" not in canonical_json(built.stack)

    _, rotated = _pair()
    c.secrets.upsert(tls_secret(rotated.cert_pem, rotated.key_pem))
    again = build_group(group, c, ON)
    assert checkpoint_digest(again.stack) != checkpoint_digest(built.stack)

    # Flag off: secretName is ignored (upstream), the hosts discovered, nothing imported.
    off = build_group(group, c, SETTINGS)
    assert off.stack.certificates == {}
    assert KEY not in off.secrets


def test_certificate_arn_wins_and_a_mix_is_refused_at_admission_too() -> None:
    _, pair = _pair()
    secret = tls_secret(pair.cert_pem, pair.key_pem)
    arn = "arn:aws:acm:us-west-2:123456789012:certificate/abc"
    c = caches(ingress_class("alb"), backend_service("web"),
               _shop(**{A + "certificate-arn": arn}), secret)
    built = build_group(loader(c).load(Request("default", "shop")), c, ON)
    assert built.stack.certificates == {}
    assert built.stack.listeners["443"].certificates == (arn,)

    mixed = _shop()
    mixed["spec"]["tls"].append({"hosts": ["api.example.com"]})
    c = caches(ingress_class("alb"), backend_service("web"), mixed, secret)
    with pytest.raises(BuildError) as info:
        build_group(loader(c).load(Request("default", "shop")), c, ON)
    message = str(info.value)
    assert "some TLS sections name a secretName and others do not (hosts api.example.com)" \
        in message
    admission = dataclasses.replace(caches(ingress_class("alb"), backend_service("web")),
                                    secrets=PresumedSecrets())
    with pytest.raises(InvalidInput) as denied:
        admit(mixed, None, admission, ON)
    assert message in str(denied.value)
    # A Secret the webhook cannot see is taken as well-formed: the write is admitted.
    assert admit(_shop(), None, admission, ON) == []
