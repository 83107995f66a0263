"""ACM certificates requested for Ingresses (`create-acm-cert`, with the
`EnableCertificateManagement` feature gate), as upstream builds them
(`pkg/ingress/model_build_certificates.go`): one per Ingress (each member of a group its own),
for every host of its rules and TLS sections (sorted; the first is the domain name, all of them
the subject alternative names), issued by the ACM Private CA of `acm-pca-arn`, else of
`--default-pca-arn`, else by Amazon (public, validated through Route53 DNS records).
`certificate-arn` (or the class's `certificateArn`) takes precedence: nothing is requested."""

from __future__ import annotations

import hashlib
import re
from typing import Final

from controller.ingress.annotations import IngressAnnotations
from controller.ingress.groups import Member
from controller.ingress.merge import BuildError
from controller.model import Ref, RequestedCertificate, StackBuilder

# ACM's default quota "domain names per certificate" (the domain name counts).
MAX_NAMES: Final = 10
# RequestCertificate: a fully qualified name (a leading `*.` for a wildcard), labels of at most
# 63 characters, at most 253 in all; the domain name (the first) at most 64 octets.
_NAME: Final = re.compile(r"(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                          r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
MAX_NAME: Final = 253
MAX_DOMAIN_NAME: Final = 64


def certificate_hosts(ingress: object) -> list[str]:
    """Every host of the Ingress's rules and TLS sections, sorted and unique (upstream's set)."""
    spec = (ingress.get("spec") if isinstance(ingress, dict) else None) or {}
    hosts: set[str] = set()
    for rule in spec.get("rules") or []:
        host = rule.get("host") if isinstance(rule, dict) else None
        if isinstance(host, str) and host:
            hosts.add(host)
    for tls in spec.get("tls") or []:
        for host in (tls.get("hosts") if isinstance(tls, dict) else None) or []:
            if isinstance(host, str) and host:
                hosts.add(host)
    return sorted(hosts)


def build_certificate(member: Member, ann: IngressAnnotations, *, default_pca_arn: str,
                      tags: dict[str, str], authorities: frozenset[str] = frozenset()
                      ) -> tuple[str, RequestedCertificate]:
    """The resource id and model of the certificate `member` asks for; BuildError when it
    cannot have one. With --allowed-certificate-authority-arns, a namespace's acm-pca-arn must
    be one of them (the same boundary discovery keeps: which CAs may issue what a listener
    serves is the cluster administrator's choice)."""
    hosts = certificate_hosts(member.ingress)
    if not hosts:
        raise BuildError(f"Ingress {member.key} sets create-acm-cert but names no host in "
                         "spec.rules[].host or spec.tls[].hosts: a certificate needs one")
    if len(hosts) > MAX_NAMES:
        raise BuildError(f"Ingress {member.key} sets create-acm-cert for {len(hosts)} hosts; "
                         f"an ACM certificate covers at most {MAX_NAMES} names")
    if ann.acm_pca_arn and authorities and ann.acm_pca_arn not in authorities:
        raise BuildError(f"Ingress {member.key}: acm-pca-arn {ann.acm_pca_arn} is not one of "
                         "the certificate authorities this controller allows "
                         f"({', '.join(sorted(authorities))})")
    for host in hosts:
        if len(host) > MAX_NAME or _NAME.fullmatch(host) is None:
            raise BuildError(f"Ingress {member.key} sets create-acm-cert, and host "
                             f"{host[:80]!r} is not a name ACM can certify")
    if len(hosts[0]) > MAX_DOMAIN_NAME:
        raise BuildError(f"Ingress {member.key} sets create-acm-cert, and its first host "
                         f"{hosts[0]!r} (the certificate's domain name) is longer than ACM's "
                         f"{MAX_DOMAIN_NAME} characters")
    ca = ann.acm_pca_arn or default_pca_arn
    cert = RequestedCertificate(ingress=member.key, domain_name=hosts[0],
                                subject_alternative_names=tuple(hosts),
                                certificate_authority_arn=ca, tags=dict(tags))
    return resource_id(member.key, cert), cert


def resource_id(ingress: str, cert: RequestedCertificate) -> str:
    """Upstream's `<type>/<domain>-<hash of namespace/name>`, plus a hash of what ACM cannot
    change on an issued certificate (names, issuer): a change requests a new certificate, which
    replaces the old one on the listeners before the old one is deleted."""
    kind = "private" if cert.private else "amazon_issued"
    ing_hash = hashlib.sha256(ingress.encode()).hexdigest()[:8]
    spec = "\n".join((*cert.subject_alternative_names, cert.certificate_authority_arn))
    spec_hash = hashlib.sha256(spec.encode()).hexdigest()[:8]
    # The id is a tag value, which refuses '*'.
    domain = cert.domain_name.replace("*", "wildcard")[:200]
    return f"{kind}/{domain}-{ing_hash}-{spec_hash}"


class RequestedCertificates:
    """The certificates a group's members ask for, each added to the stack once."""

    def __init__(self, builder: StackBuilder, *, default_pca_arn: str, tags: dict[str, str],
                 authorities: frozenset[str] = frozenset()) -> None:
        self._builder = builder
        self._authorities = authorities
        self._default_pca_arn = default_pca_arn
        self._tags = tags
        self._refs: dict[str, Ref] = {}

    def ref(self, member: Member, ann: IngressAnnotations) -> Ref:
        if member.key not in self._refs:
            rid, cert = build_certificate(member, ann, default_pca_arn=self._default_pca_arn,
                                          tags=self._tags, authorities=self._authorities)
            self._refs[member.key] = self._builder.add_certificate(rid, cert)
        return self._refs[member.key]


__all__ = ["MAX_NAMES", "RequestedCertificates", "build_certificate", "certificate_hosts",
           "resource_id"]
