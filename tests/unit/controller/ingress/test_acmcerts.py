"""Certificates requested from ACM for Ingresses in the pure stage (create-acm-cert,
acm-pca-arn, --default-pca-arn, the EnableCertificateManagement gate): upstream's domain and
names, the issuer's precedence, certificate-arn winning, one per member, bad input refused with
one message (the same at admission), and the checkpoint covering it."""

from __future__ import annotations

import dataclasses

import pytest

from controller.config.featuregates import GATES
from controller.errors import InvalidInput
from controller.ingress import admit, build_group
from controller.ingress.acmcerts import certificate_hosts
from controller.ingress.settings import IngressConfig, Settings
from controller.model import Ref, RequestedCertificate
from controller.model.canonical import checkpoint_digest
from runtime.objects import Obj
from runtime.reconcile import Request
from tests.support.objects import backend_service, ingress, ingress_class
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
CREATE = {A + "create-acm-cert": "true", A + "listen-ports": '[{"HTTPS": 443}]'}
ON = dataclasses.replace(SETTINGS, certificate_management=True)
PCA = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/1111-2222-3333"
PCA2 = "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/9999-2222-3333"
CERT = "arn:aws:acm:us-west-2:123456789012:certificate/abc"


def _shop(name: str = "shop", hosts: tuple[str, ...] = ("www.example.com", "api.example.com"),
          extra: dict[str, str] | None = None) -> Obj:
    ing = ingress(name, {**CREATE, **(extra or {})}, host=hosts[0] if hosts else None,
                  tls_hosts=list(hosts[1:]) or None)
    ing["metadata"]["annotations"][A + "group.name"] = "shared"
    return ing


def _build(*objs: Obj, settings: object = ON, key: str = "shared") -> object:
    c = caches(ingress_class("alb"), backend_service("web"), *objs)
    return build_group(loader(c).load(Request("", key)), c, settings)  # type: ignore[arg-type]


def _certs(built: object) -> dict[str, RequestedCertificate]:
    certs = built.stack.certificates  # type: ignore[attr-defined]
    assert all(isinstance(c, RequestedCertificate) for c in certs.values())
    return dict(certs)


def test_the_domain_is_the_first_host_and_every_host_is_a_name() -> None:
    built = _build(_shop())
    (rid, cert), = _certs(built).items()
    assert cert.domain_name == "api.example.com"
    assert cert.subject_alternative_names == ("api.example.com", "www.example.com")
    assert cert.certificate_authority_arn == ""
    assert not cert.private
    assert cert.ingress == "default/shop"
    assert rid.startswith("amazon_issued/api.example.com-")
    assert built.stack.listeners["443"].certificates == (  # type: ignore[attr-defined]
        Ref.to("AWS::CertificateManager::Certificate", rid, "certificateARN"),)


def test_hosts_are_read_from_rules_and_tls_sections_once() -> None:
    ing = ingress("x", host="b.example.com", tls_hosts=["a.example.com", "b.example.com"])
    assert certificate_hosts(ing) == ["a.example.com", "b.example.com"]
    assert certificate_hosts({"spec": {"rules": [None, {"host": 7}], "tls": "x"}}) == []


def test_the_gate_off_requests_nothing() -> None:
    built = _build(_shop(), settings=SETTINGS)
    assert built.stack.certificates == {}  # type: ignore[attr-defined]


def test_the_annotation_pca_wins_over_the_flag_and_an_empty_one_does_not() -> None:
    flagged = dataclasses.replace(ON, default_pca_arn=PCA)
    (cert,) = _certs(_build(_shop(), settings=flagged)).values()
    assert cert.certificate_authority_arn == PCA
    assert cert.private
    (cert,) = _certs(_build(_shop(extra={A + "acm-pca-arn": PCA2}), settings=flagged)).values()
    assert cert.certificate_authority_arn == PCA2
    (cert,) = _certs(_build(_shop(extra={A + "acm-pca-arn": ""}), settings=flagged)).values()
    assert cert.certificate_authority_arn == PCA


def test_an_annotation_pca_outside_the_allowed_authorities_is_refused() -> None:
    allowed = dataclasses.replace(ON, allowed_certificate_authorities=frozenset({PCA}),
                                  default_pca_arn=PCA)
    (cert,) = _certs(_build(_shop(extra={A + "acm-pca-arn": PCA}), settings=allowed)).values()
    assert cert.certificate_authority_arn == PCA
    with pytest.raises(InvalidInput, match="is not one of the certificate authorities"):
        _build(_shop(extra={A + "acm-pca-arn": PCA2}), settings=allowed)


def test_a_new_issuer_is_a_new_certificate_and_a_new_checkpoint() -> None:
    public = _build(_shop())
    private = _build(_shop(), settings=dataclasses.replace(ON, default_pca_arn=PCA))
    assert set(_certs(public)) != set(_certs(private))
    assert (checkpoint_digest(public.stack)  # type: ignore[attr-defined]
            != checkpoint_digest(private.stack))  # type: ignore[attr-defined]


def test_certificate_arn_takes_precedence() -> None:
    built = _build(_shop(extra={A + "certificate-arn": CERT}))
    assert built.stack.certificates == {}  # type: ignore[attr-defined]
    assert built.stack.listeners["443"].certificates == (CERT,)  # type: ignore[attr-defined]


def test_each_member_of_a_group_gets_its_own_certificate() -> None:
    built = _build(_shop(), _shop("blog", hosts=("blog.example.com",)))
    certs = _certs(built)
    assert sorted(c.ingress for c in certs.values()) == ["default/blog", "default/shop"]
    assert len(built.stack.listeners["443"].certificates) == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(("hosts", "annotations", "message"), [
    ((), {}, "names no host"),
    (tuple(f"h{i}.example.com" for i in range(11)), {}, "at most 10 names"),
    (("www.example.com", "bad_host!.example.com"), {}, "is not a name ACM can certify"),
    (("a" * 60 + ".example.com",), {}, "longer than ACM's 64 characters"),
    (("www.example.com",), {A + "acm-pca-arn": "arn:aws:acm:us-west-2:1:certificate/x"},
     "is not an ACM Private CA ARN"),
])
def test_bad_input_is_one_message_and_the_same_at_admission(
        hosts: tuple[str, ...], annotations: dict[str, str], message: str) -> None:
    ing = _shop(hosts=hosts, extra=annotations)
    with pytest.raises(InvalidInput, match=message):
        _build(ing)
    c = caches(ingress_class("alb"), backend_service("web"))
    with pytest.raises(InvalidInput, match=message):
        admit(ing, None, c, ON)


def test_the_flag_refuses_what_is_not_a_pca_arn_and_the_gate_reaches_the_builder() -> None:
    from controller.ingress.settings import _pca_arn
    assert _pca_arn("") is None
    assert _pca_arn(PCA) is None
    assert "not an ACM Private CA ARN" in (_pca_arn("arn:aws:iam::1:role/x") or "")
    config = IngressConfig(default_pca_arn=PCA)
    off = Settings(cluster=SETTINGS.cluster, config=config, gates=GATES)
    assert off.builder().certificate_management is False
    assert off.deployer.manage_certificates is False
    on = dataclasses.replace(off, gates=GATES.parse("EnableCertificateManagement=true"))
    assert on.builder().certificate_management is True
    assert on.builder().default_pca_arn == PCA
    assert on.deployer.manage_certificates is True
