"""Certificates requested from ACM for Ingresses (create-acm-cert, acm-pca-arn,
--default-pca-arn, the EnableCertificateManagement gate) against moto: a public certificate's
DNS validation records written in the Route53 public hosted zone of each name, the listener
serving it only once ACM issued it, a Private CA's certificate issued at once, a new issuer
re-issuing, and the certificate (with its records) deleted when the Ingress stops asking or
goes; bad input is one message and nothing is created."""

from __future__ import annotations

import uuid
from typing import Any

from controller.config.featuregates import GATES
from controller.deploy.certificates import REQUESTED_TAG
from runtime.objects import Obj
from runtime.resources import INGRESSES
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.settings import ingress_settings
from tests.support.tenancy import warnings
from tests.support.waiting import eventually

A = "alb.ingress.kubernetes.io/"
CREATE = {A + "create-acm-cert": "true", A + "listen-ports": '[{"HTTPS": 443}]'}
ON = GATES.parse("EnableCertificateManagement=true")
PCA = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/1111-aaaa"
PCA2 = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/2222-bbbb"


async def _listener_certs(c: Cluster) -> list[str] | None:
    return await c.aws.https_certificates()


async def _requested(c: Cluster) -> dict[str, dict[str, Any]]:
    """Every certificate a controller requested for an Ingress: ARN → description + tags."""
    return {arn: {**detail, "tags": tags}
            for arn, (tags, detail) in (await c.aws.certificates()).items()
            if REQUESTED_TAG in tags}


async def _zone(c: Cluster, name: str, *, private: bool = False) -> str:
    params: dict[str, Any] = {"Name": name, "CallerReference": uuid.uuid4().hex}
    if private:
        params["VPC"] = {"VPCRegion": c.seed.region, "VPCId": c.seed.vpc_id}
        params["HostedZoneConfig"] = {"PrivateZone": True}
    return str((await c.aws.call("route53", "CreateHostedZone", **params))["HostedZone"]["Id"])


async def _cnames(c: Cluster, zone: str) -> set[str]:
    sets = (await c.aws.call("route53", "ListResourceRecordSets",
                             HostedZoneId=zone))["ResourceRecordSets"]
    return {s["Name"].rstrip(".") for s in sets if s["Type"] == "CNAME"}


async def test_a_public_certificate_is_validated_in_route53_served_once_issued_and_deleted(
        cluster: Cluster) -> None:
    c = cluster
    domain = f"{uuid.uuid4().hex[:8]}.example.org"
    parent = await _zone(c, domain)
    api = await _zone(c, f"api.{domain}")  # the longer suffix wins for api.<domain>
    decoy = await _zone(c, domain, private=True)  # a private zone is never written
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", CREATE, backend="web", host=f"www.{domain}",
                    tls_hosts=[f"api.{domain}"])
    await c.start(ingress=ingress_settings(c.seed, gates=ON))

    async def served() -> str | None:
        certs = await _listener_certs(c)
        return certs[0] if certs else None

    arn = await eventually(served, timeout=60)
    cert = (await _requested(c))[arn]
    assert cert["Status"] == "ISSUED"
    assert cert["Type"] == "AMAZON_ISSUED"
    assert cert["DomainName"] == f"api.{domain}"
    assert sorted(cert["SubjectAlternativeNames"]) == [f"api.{domain}", f"www.{domain}"]
    assert cert["tags"]["elbv2.k8s.aws/cluster"] == c.seed.cluster_name
    assert cert["tags"]["ingress.k8s.aws/stack"] == "default/shop"
    assert cert["tags"][REQUESTED_TAG] == "default_shop"
    # The validation records, each in its name's public zone.
    assert await _cnames(c, parent) == {f"_d930b28be6c5927595552b219965053e.www.{domain}"}
    assert await _cnames(c, api) == {f"_d930b28be6c5927595552b219965053e.api.{domain}"}
    assert await _cnames(c, decoy) == set()
    # Until ACM issued it, the Ingress said why (and no listener served it).
    pending = [e for e in warnings(await c.events("shop")) if "pending" in e["message"]]
    assert pending, "the Ingress was never told the certificate was pending"
    await c.settled()

    # The Ingress names a certificate: it wins, and the requested one goes with its records.
    ing = await c.get(INGRESSES, "shop")
    ing["metadata"]["annotations"][A + "certificate-arn"] = c.seed.certificate_arn
    await c.client.update(INGRESSES, ing)

    async def removed() -> bool:
        return (arn not in await _requested(c)
                and await _listener_certs(c) == [c.seed.certificate_arn])

    await eventually(removed, timeout=60)
    assert await _cnames(c, parent) == set()
    assert await _cnames(c, api) == set()
    assert await c.stop() == 0


async def test_a_private_ca_certificate_is_reissued_for_a_new_ca_and_deleted_with_the_ingress(
        cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", CREATE, backend="web", host="shop.internal.test")
    await c.start(ingress=ingress_settings(c.seed, gates=ON, default_pca_arn=PCA))

    async def served(ca: str) -> str | None:
        certs = await _listener_certs(c)
        if not certs:
            return None
        cert = (await _requested(c)).get(certs[0])
        return certs[0] if cert and cert.get("CertificateAuthorityArn") == ca else None

    first = await eventually(lambda: served(PCA), timeout=60)
    assert (await _requested(c))[first]["Type"] == "PRIVATE"
    await c.settled()

    # The annotation's CA wins over the flag's: a new certificate, the old one deleted.
    ing = await c.get(INGRESSES, "shop")
    ing["metadata"]["annotations"][A + "acm-pca-arn"] = PCA2
    await c.client.update(INGRESSES, ing)
    second = await eventually(lambda: served(PCA2), timeout=60)
    assert second != first

    async def only_second() -> bool:
        return set(await _requested(c)) == {second}

    await eventually(only_second, timeout=60)
    await c.settled()

    await c.delete(INGRESSES, "shop")

    async def all_gone() -> bool:
        return not await _requested(c) and not await c.aws.load_balancers()

    await eventually(all_gone, timeout=60)
    assert await c.stop() == 0


async def test_bad_input_is_one_message_and_nothing_is_created(cluster: Cluster) -> None:
    c = cluster
    await c.ingress_class("alb")
    await c.backend("web")
    cases: dict[str, tuple[dict[str, str], list[str], str]] = {
        "nohost": ({}, [], "names no host"),
        "toomany": ({}, [f"h{i}.example.net" for i in range(11)], "at most 10 names"),
        "badca": ({A + "acm-pca-arn": "arn:aws:iam::123456789012:role/x"}, ["a.example.net"],
                  "is not an ACM Private CA ARN"),
    }
    for name, (extra, hosts, _) in cases.items():
        await c.ingress(name, {**CREATE, **extra}, backend="web",
                        host=hosts[0] if hosts else None, tls_hosts=hosts[1:] or None)
    await c.start(ingress=ingress_settings(c.seed, gates=ON))
    for name, (_, _, words) in cases.items():
        async def told(name: str = name, words: str = words) -> Obj | None:
            found = [e for e in warnings(await c.events(name)) if words in e["message"]]
            return found[0] if found else None

        await eventually(told, timeout=30, message=f"{name}: {words}")
        cond = condition(await c.get(INGRESSES, name), "aiolbc/LoadBalancerReady") or {}
        assert words in str(cond.get("message", words))
    await c.settled()
    assert await c.aws.load_balancers() == []
    assert await _requested(c) == {}
    assert await c.stop() == 0


async def test_a_name_without_a_public_zone_is_told_and_nothing_is_requested(
        cluster: Cluster) -> None:
    c = cluster
    domain = f"{uuid.uuid4().hex[:8]}.example.org"
    await _zone(c, domain, private=True)  # only a private zone: never used for validation
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", CREATE, backend="web", host=f"www.{domain}")
    await c.start(ingress=ingress_settings(c.seed, gates=ON))

    async def told() -> Obj | None:
        found = [e for e in warnings(await c.events("shop"))
                 if f"no Route53 public hosted zone for 'www.{domain}'" in e["message"]]
        return found[0] if found else None

    await eventually(told, timeout=30)
    assert await _requested(c) == {}
    assert await _listener_certs(c) is None
    assert await c.stop() == 0


async def test_with_the_gate_off_create_acm_cert_is_ignored_as_upstream(
        cluster: Cluster) -> None:
    c = cluster
    host = f"{uuid.uuid4().hex[:8]}.example.org"
    # A certificate discovery finds for the host (a Private CA's: issued at once).
    by_hand = (await c.aws.call("acm", "RequestCertificate", DomainName=host,
                                CertificateAuthorityArn=PCA))["CertificateArn"]
    await c.ingress_class("alb")
    await c.backend("web")
    await c.ingress("shop", CREATE, backend="web", host=host)
    await c.start(ingress=ingress_settings(c.seed))
    assert await eventually(lambda: _listener_certs(c), timeout=60) == [by_hand]
    assert await _requested(c) == {}
    assert await c.stop() == 0


async def test_a_validation_record_another_certificate_relies_on_is_kept(
        cluster: Cluster) -> None:
    c = cluster
    domain = f"{uuid.uuid4().hex[:8]}.example.org"
    zone = await _zone(c, domain)
    await c.ingress_class("alb")
    await c.backend("web")
    # Two groups, the same host: ACM names one validation record for both certificates.
    for name in ("shop", "copy"):
        await c.ingress(name, CREATE, backend="web", host=f"www.{domain}")
    await c.start(ingress=ingress_settings(c.seed, gates=ON))

    async def both_issued() -> bool:
        certs = await _requested(c)
        return len(certs) == 2 and all(x["Status"] == "ISSUED" for x in certs.values())

    await eventually(both_issued, timeout=60)
    record = f"_d930b28be6c5927595552b219965053e.www.{domain}"
    assert await _cnames(c, zone) == {record}
    await c.settled()

    await c.delete(INGRESSES, "copy")

    async def one_left() -> bool:
        return len(await _requested(c)) == 1

    await eventually(one_left, timeout=60)
    await c.settled()
    assert await _cnames(c, zone) == {record}  # the other certificate still needs it

    await c.delete(INGRESSES, "shop")

    async def none_left() -> bool:
        return not await _requested(c) and not await _cnames(c, zone)

    await eventually(none_left, timeout=60)
    assert await c.stop() == 0
