"""Certificates from `spec.tls[].secretName` (`--enable-secret-certificates`): the Secret's
certificate is imported into ACM, tagged as the controller's, served on the HTTPS listener,
re-imported under the same ARN when the Secret rotates, and deleted once nothing serves it; a
Secret that is not a certificate is one message and no AWS call; a Secret of another namespace
is never read; with the flag off, secretName is ignored as upstream does."""

from __future__ import annotations

import base64
import time
from typing import Any

from controller.deploy.certificates import SECRET_TAG, VERSION_TAG
from runtime.objects import Obj
from runtime.resources import INGRESSES, SECRETS
from runtime.webhook.certs import KeyPair, issue_ca, issue_serving
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.settings import ingress_settings
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
HTTPS = {A + "listen-ports": '[{"HTTPS": 443}]'}
DAY = 86400.0


def _pair(host: str) -> tuple[KeyPair, KeyPair]:
    ca = issue_ca("team-ca", now=time.time(), validity=30 * DAY)
    return ca, issue_serving(ca, [host], now=time.time(), validity=30 * DAY)


def tls_secret(name: str, crt: bytes, key: bytes, *, kind: str = "kubernetes.io/tls") -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "type": kind,
            "metadata": {"name": name},
            "data": {"tls.crt": base64.b64encode(crt).decode(),
                     "tls.key": base64.b64encode(key).decode()}}


async def put_secret(c: Cluster, obj: Obj) -> None:
    current = await c.find(SECRETS, obj["metadata"]["name"])
    if current is None:
        await c.create(SECRETS, obj)
    else:
        await c.client.update(SECRETS, {**obj, "metadata": current["metadata"]})


async def _listener_certs(c: Cluster) -> list[str] | None:
    return await c.aws.https_certificates()


async def _acm(c: Cluster) -> dict[str, dict[str, Any]]:
    """Every ACM certificate: ARN → {tags, serial, type}."""
    return {arn: {"tags": tags, "serial": detail.get("Serial"), "type": detail.get("Type")}
            for arn, (tags, detail) in (await c.aws.certificates()).items()}


async def test_a_secret_s_certificate_is_imported_rotated_and_deleted(cluster: Cluster) -> None:
    c = cluster
    _, first = _pair("shop.example.com")
    await put_secret(c, tls_secret("shop-tls", first.cert_pem, first.key_pem))
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", HTTPS, backend="web", rules=None, tls_hosts=None)
    ing = await c.get(INGRESSES, "shop")
    ing["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    await c.client.update(INGRESSES, ing)
    before = set(await _acm(c))
    await c.start(ingress=ingress_settings(c.seed, enable_secret_certificates=True))

    async def imported() -> str | None:
        certs = await _listener_certs(c)
        return certs[0] if certs and certs[0] not in before else None

    arn = await eventually(imported, timeout=60)
    acm = await _acm(c)
    assert acm[arn]["type"] == "IMPORTED"
    tags = acm[arn]["tags"]
    assert tags["elbv2.k8s.aws/cluster"] == c.seed.cluster_name
    assert tags["ingress.k8s.aws/stack"] == "default/shop"
    assert tags["ingress.k8s.aws/resource"] == "default/shop-tls"
    assert tags[SECRET_TAG] == "default/shop-tls"
    first_version, first_serial = tags[VERSION_TAG], acm[arn]["serial"]
    await c.settled()

    # Rotation: the same ARN, the new certificate, the version tag moved.
    _, second = _pair("shop.example.com")
    await put_secret(c, tls_secret("shop-tls", second.cert_pem, second.key_pem))

    async def rotated() -> dict[str, Any] | None:
        now = (await _acm(c)).get(arn)
        return now if now and now["tags"].get(VERSION_TAG) != first_version else None

    now = await eventually(rotated, timeout=60)
    assert now["serial"] != first_serial
    assert {k: v for k, v in now["tags"].items() if k != VERSION_TAG} == {
        k: v for k, v in tags.items() if k != VERSION_TAG}
    assert await _listener_certs(c) == [arn]
    assert set(await _acm(c)) == before | {arn}

    # The listener stops serving it (certificate-arn wins): then it is deleted.
    await c.settled()
    ing = await c.get(INGRESSES, "shop")
    ing["metadata"]["annotations"][A + "certificate-arn"] = c.seed.certificate_arn
    await c.client.update(INGRESSES, ing)

    async def deleted() -> bool:
        return arn not in await _acm(c) and await _listener_certs(c) == [c.seed.certificate_arn]

    await eventually(deleted, timeout=60)
    assert set(await _acm(c)) == before
    assert await c.stop() == 0


async def test_bad_secrets_are_one_message_and_nothing_is_created(cluster: Cluster) -> None:
    c = cluster
    _, pair = _pair("a.example.com")
    _, other = _pair("a.example.com")
    await put_secret(c, tls_secret("opaque", pair.cert_pem, pair.key_pem, kind="Opaque"))
    await put_secret(c, tls_secret("garbage", b"not a certificate", pair.key_pem))
    await put_secret(c, tls_secret("mismatch", pair.cert_pem, other.key_pem))
    await c.ingress_class("alb")
    await c.backend("web")
    cases = {
        "opaque": "is not a TLS certificate: its type is not kubernetes.io/tls",
        "garbage": "is not a TLS certificate: tls.crt holds no PEM certificate",
        "mismatch": "tls.key is not the private key of the certificate in tls.crt",
    }
    for name in cases:
        await c.ingress(name, HTTPS, backend="web")
        ing = await c.get(INGRESSES, name)
        ing["spec"]["tls"] = [{"hosts": ["a.example.com"], "secretName": name}]
        await c.client.update(INGRESSES, ing)
    before = set(await _acm(c))
    await c.start(ingress=ingress_settings(c.seed, enable_secret_certificates=True))

    for name, words in cases.items():
        async def told(name: str = name, words: str = words) -> Obj | None:
            found = [e for e in warnings(await c.events(name)) if words in e["message"]]
            return found[0] if found else None

        event = await eventually(told, timeout=30, message=f"{name}: {words}")
        assert f"Secret default/{name}" in event["message"]
        cond = condition(await c.get(INGRESSES, name), "aiolbc/LoadBalancerReady") or {}
        assert words in str(cond.get("message", words))
    await c.settled()
    assert await c.aws.load_balancers() == []
    assert set(await _acm(c)) == before
    assert await c.stop() == 0


async def test_without_the_flag_secret_name_is_ignored_as_upstream(cluster: Cluster) -> None:
    c = cluster
    await put_secret(c, tls_secret("broken", b"x", b"y"))
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", HTTPS, backend="web")
    ing = await c.get(INGRESSES, "shop")
    ing["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "broken"}]
    await c.client.update(INGRESSES, ing)
    ca, pair = _pair("shop.example.com")
    by_hand = (await c.aws.call("acm", "ImportCertificate", Certificate=pair.cert_pem,
                                PrivateKey=pair.key_pem,
                                CertificateChain=ca.cert_pem))["CertificateArn"]
    before = set(await _acm(c))
    await c.start()
    # Discovered by host, the Secret never read.
    assert await eventually(lambda: _listener_certs(c), timeout=60) == [by_hand]
    assert set(await _acm(c)) == before
    assert not warnings(await c.events("shop"))
    assert await c.stop() == 0


async def test_deleting_the_ingress_deletes_its_certificate_and_no_one_else_s(
        cluster: Cluster) -> None:
    c = cluster
    ca, pair = _pair("shop.example.com")
    # Someone else's imported certificate, tagged for this cluster but no stack: never touched.
    theirs = (await c.aws.call(
        "acm", "ImportCertificate", Certificate=pair.cert_pem, PrivateKey=pair.key_pem,
        Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": c.seed.cluster_name}]))["CertificateArn"]
    await put_secret(c, tls_secret("shop-tls", pair.cert_pem + ca.cert_pem, pair.key_pem))
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", HTTPS, backend="web")
    ing = await c.get(INGRESSES, "shop")
    ing["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    await c.client.update(INGRESSES, ing)
    before = set(await _acm(c))
    await c.start(ingress=ingress_settings(c.seed, enable_secret_certificates=True))

    async def imported() -> str | None:
        certs = await _listener_certs(c)
        return certs[0] if certs and certs[0] not in before else None

    arn = await eventually(imported, timeout=60)
    await c.settled()
    await c.delete(INGRESSES, "shop")

    async def gone() -> bool:
        return not await c.aws.load_balancers() and arn not in await _acm(c)

    await eventually(gone, timeout=60)
    assert set(await _acm(c)) == before
    assert theirs in before
    assert await c.stop() == 0


async def test_a_certificate_imported_for_one_group_is_never_discovered_for_another(
        cluster: Cluster) -> None:
    c = cluster
    ca, pair = _pair("shop.example.com")
    await put_secret(c, tls_secret("shop-tls", pair.cert_pem + ca.cert_pem, pair.key_pem))
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", HTTPS, backend="web")
    ing = await c.get(INGRESSES, "shop")
    ing["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    await c.client.update(INGRESSES, ing)
    await c.start(ingress=ingress_settings(c.seed, enable_secret_certificates=True))

    async def imported() -> str | None:
        certs = await _listener_certs(c)
        return certs[0] if certs else None

    theirs = await eventually(imported, timeout=60)
    await c.settled()
    # Another group asks for the same host by discovery: the imported one is not a candidate.
    await c.ingress("copycat", HTTPS, backend="web", tls_hosts=["shop.example.com"])

    async def refused() -> Obj | None:
        found = [e for e in warnings(await c.events("copycat"))
                 if "no ACM certificate covers host 'shop.example.com'" in e["message"]]
        return found[0] if found else None

    await eventually(refused, timeout=30)
    assert len(await c.aws.load_balancers()) == 1
    assert (await _acm(c))[theirs]["tags"][SECRET_TAG] == "default/shop-tls"
    assert await c.stop() == 0
