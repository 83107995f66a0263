"""The one catalogue of annotation keys under aiolbc's prefixes: upstream's full list
(aws-load-balancer-controller v3.5.0, `pkg/annotations/constants.go`, plus the key families its
model builders compose in code), each marked acted on or not, whether it narrows who can reach
the load balancer, and, for an Ingress key, whether upstream also reads it on a backend Service.

Everything that needs to know a key reads it here: the parsers' key sets
(`INGRESS_ANNOTATION_KEYS`, `SERVICE_ANNOTATION_KEYS` are views of this list), the restart
matrix, the docs' tables and `controller.annotationreview`, which tells an object's owner about
every key it carries that is not acted on. A key is added to a parser and here together: a test
parses objects carrying every key and compares the keys read with the acted-on ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from controller.apis.names import (
    INGRESS_ANNOTATION_PREFIX,
    LEGACY_CLASS_ANNOTATION,
    SERVICE_ANNOTATION_PREFIX,
)

Kind = Literal["ingress", "service"]
# What aiolbc does with an Ingress key found on a backend Service: read it there ("acted", as
# upstream does for target-group and authentication settings), or not although upstream does
# ("ignored"). None: upstream reads the key on the Ingress only.
Backend = Literal["acted", "ignored"] | None

NLB_PREFIX: Final = SERVICE_ANNOTATION_PREFIX + "aws-load-balancer-"
SOURCE_RANGES_KEY: Final = SERVICE_ANNOTATION_PREFIX + "load-balancer-source-ranges"



@dataclass(frozen=True, slots=True, kw_only=True)
class AnnotationKey:
    """One key, or one family of keys (`key` ending in `.*`, the rest of the name chosen by the
    user; `placeholder` is how the docs write that rest)."""

    key: str
    kind: Kind
    feature: str  # what it is for, a noun phrase ("WAFv2 web ACL association")
    acted_on: bool
    # Narrows who can reach the load balancer (WAF, Shield, authentication, mutual TLS,
    # CIDRs, source ranges, security groups, an internal scheme): not acted on, it stops the
    # object (fail closed).
    narrows: bool = False
    backend: Backend = None
    placeholder: str = "<name>"
    # Said instead of "aiolbc does not support <feature>" when a plain refusal would mislead.
    note: str = ""
    # Not upstream's: a spelling aiolbc once read, and the key that replaced it.
    replaced_by: str | None = None

    @property
    def family(self) -> bool:
        return self.key.endswith(".*")

    @property
    def stem(self) -> str:
        """The key, or a family's common start (`...actions.`)."""
        return self.key[:-1] if self.family else self.key

    @property
    def shown(self) -> str:
        """How messages and docs write it (`alb.ingress.kubernetes.io/actions.<name>`)."""
        return self.stem + self.placeholder if self.family else self.key

    def matches(self, key: str) -> bool:
        if self.family:
            return key.startswith(self.stem) and len(key) > len(self.stem)
        return key == self.key


def _ingress(suffix: str, feature: str, *, acted: bool, narrows: bool = False,
             backend: Backend = None,
             placeholder: str = "<name>", note: str = "") -> AnnotationKey:
    return AnnotationKey(key=INGRESS_ANNOTATION_PREFIX + suffix, kind="ingress",
                         feature=feature, acted_on=acted, narrows=narrows, backend=backend,
                         placeholder=placeholder, note=note)


def _service(suffix: str, feature: str, *, acted: bool, narrows: bool = False,
             placeholder: str = "<name>", note: str = "") -> AnnotationKey:
    return AnnotationKey(key=SERVICE_ANNOTATION_PREFIX + suffix, kind="service",
                         feature=feature, acted_on=acted, narrows=narrows,
                         placeholder=placeholder, note=note)


_FRONTEND_NLB = "a frontend NLB in front of the ALB"
_TG = "target group settings"
_AUTH = "authentication"

# The 69 `IngressSuffix*` constants, the `actions.`, `conditions.` and `transforms.` families
# (pkg/ingress/enhanced_backend_builder.go), and `kubernetes.io/ingress.class`: 73 keys.
INGRESS_KEYS: Final[tuple[AnnotationKey, ...]] = (
    AnnotationKey(key=LEGACY_CLASS_ANNOTATION, kind="ingress", feature="the Ingress's class",
                  acted_on=True),
    _ingress("load-balancer-name", "the load balancer's name", acted=True),
    _ingress("group.name", "Ingress groups", acted=True),
    _ingress("group.order", "Ingress groups", acted=True),
    _ingress("tags", "tags", acted=True, backend="acted"),
    _ingress("ip-address-type", "the IP address type", acted=True),
    _ingress("scheme", "the load balancer's scheme", acted=True, narrows=True),
    _ingress("subnets", "subnets", acted=True),
    _ingress("customer-owned-ipv4-pool", "customer-owned IPv4 pools (Outposts)", acted=True),
    _ingress("load-balancer-attributes", "load balancer attributes", acted=True),
    _ingress("wafv2-acl-arn", "WAFv2 web ACL association", acted=True, narrows=True),
    _ingress("wafv2-acl-name", "WAFv2 web ACL association", acted=True, narrows=True),
    _ingress("waf-acl-id", "WAF Classic web ACL association", acted=True, narrows=True),
    _ingress("web-acl-id", "WAF Classic web ACL association (deprecated key)", acted=True,
             narrows=True),
    _ingress("shield-advanced-protection", "AWS Shield Advanced protection", acted=True,
             narrows=True),
    _ingress("security-groups", "security groups", acted=True, narrows=True),
    _ingress("listen-ports", "listeners", acted=True),
    _ingress("ssl-redirect", "listeners", acted=True),
    _ingress("inbound-cidrs", "inbound CIDRs", acted=True, narrows=True),
    _ingress("certificate-arn", "certificates", acted=True),
    _ingress("ssl-policy", "the TLS policy", acted=True),
    _ingress("target-type", _TG, acted=True, backend="acted"),
    _ingress("backend-protocol", _TG, acted=True, backend="acted"),
    _ingress("backend-protocol-version", _TG, acted=True, backend="acted"),
    _ingress("target-group-attributes", _TG, acted=True, backend="acted"),
    _ingress("healthcheck-port", _TG, acted=True, backend="acted"),
    _ingress("healthcheck-protocol", _TG, acted=True, backend="acted"),
    _ingress("healthcheck-path", _TG, acted=True, backend="acted"),
    _ingress("healthcheck-interval-seconds", _TG, acted=True, backend="acted"),
    _ingress("healthcheck-timeout-seconds", _TG, acted=True, backend="acted"),
    _ingress("healthy-threshold-count", _TG, acted=True, backend="acted"),
    _ingress("unhealthy-threshold-count", _TG, acted=True, backend="acted"),
    _ingress("success-codes", _TG, acted=True, backend="acted"),
    _ingress("auth-type", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("auth-idp-cognito", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("auth-idp-oidc", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("auth-on-unauthenticated-request", _AUTH, acted=True, narrows=True,
             backend="acted"),
    _ingress("auth-scope", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("auth-session-cookie", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("auth-session-timeout", _AUTH, acted=True, narrows=True, backend="acted"),
    _ingress("jwt-validation", "JWT validation", acted=True, narrows=True),
    _ingress("target-node-labels", "target node labels for ALB instance targets", acted=True,
             backend="acted"),
    _ingress("manage-backend-security-group-rules", "backend security group rules",
             acted=True),
    _ingress("mutual-authentication", "mutual TLS authentication", acted=True, narrows=True),
    _ingress("security-group-prefix-lists", "security group prefix lists", acted=True,
             narrows=True),
    _ingress("listener-attributes.*", "listener attributes", acted=True,
             placeholder="<protocol>-<port>"),
    _ingress("multi-cluster-target-group", "multi-cluster target groups", acted=True,
             backend="acted"),
    _ingress("minimum-load-balancer-capacity", "capacity reservations", acted=True),
    _ingress("ipam-ipv4-pool-id", "IPAM IPv4 pools", acted=True),
    _ingress("enable-frontend-nlb", _FRONTEND_NLB, acted=True),
    *(_ingress("frontend-nlb-" + s, _FRONTEND_NLB, acted=True) for s in (
        "scheme", "subnets", "security-groups", "listener-port-mapping",
        "healthcheck-port", "healthcheck-protocol", "healthcheck-path",
        "healthcheck-interval-seconds", "healthcheck-timeout-seconds",
        "healthcheck-healthy-threshold-count", "healthcheck-unhealthy-threshold-count",
        "healthcheck-success-codes", "attributes", "tags")),
    _ingress("frontend-nlb-eip-allocations", "static EIP addresses for a frontend NLB",
             acted=True),
    _ingress("use-regex-path-match", "regular-expression path matching", acted=True),
    _ingress("target-control-port.*", "the ALB Target Control Agent's port", acted=True,
             backend="acted", placeholder="<service>.<port>"),
    _ingress("create-acm-cert", "ACM certificate creation", acted=True,
             note="with the EnableCertificateManagement feature gate, as upstream"),
    _ingress("acm-pca-arn", "ACM certificate creation", acted=True,
             note="with the EnableCertificateManagement feature gate; within "
             "--allowed-certificate-authority-arns when set"),
    _ingress("dry-run-plan", "upstream's dry-run plan", acted=True,
             note="an output, never read: with the IngressPlanAnnotation feature gate the "
                  "group's model on its first member, removed elsewhere and without the gate"),
    _ingress("actions.*", "rule actions", acted=True),
    _ingress("conditions.*", "rule conditions", acted=True, narrows=True),
    _ingress("transforms.*", "URL and host-header transforms", acted=True),
)

# The 47 `SvcLBSuffix*` constants, `actions.<protocol>-<port>`
# (pkg/service/model_build_listener.go) and the per-port target group attributes
# (pkg/service/model_build_target_group.go): 49 keys.
SERVICE_KEYS: Final[tuple[AnnotationKey, ...]] = (
    _service("load-balancer-source-ranges", "source ranges", acted=True, narrows=True),
    _service("aws-load-balancer-type", "the load balancer type", acted=True),
    _service("aws-load-balancer-nlb-target-type", "the target type", acted=True),
    _service("aws-load-balancer-name", "the load balancer's name", acted=True),
    _service("aws-load-balancer-scheme", "the load balancer's scheme", acted=True,
             narrows=True),
    _service("aws-load-balancer-internal", "the load balancer's scheme", acted=True,
             narrows=True),
    _service("aws-load-balancer-proxy-protocol", "proxy protocol v2", acted=True),
    _service("aws-load-balancer-proxy-protocol-per-target-group",
             "proxy protocol per target group", acted=True),
    _service("aws-load-balancer-ip-address-type", "the IP address type", acted=True),
    _service("aws-load-balancer-access-log-enabled", "access logs", acted=True),
    _service("aws-load-balancer-access-log-s3-bucket-name", "access logs", acted=True),
    _service("aws-load-balancer-access-log-s3-bucket-prefix", "access logs", acted=True),
    _service("aws-load-balancer-cross-zone-load-balancing-enabled", "cross-zone load balancing",
             acted=True),
    _service("aws-load-balancer-ssl-cert", "TLS listeners", acted=True),
    _service("aws-load-balancer-ssl-ports", "TLS listeners", acted=True),
    _service("aws-load-balancer-ssl-negotiation-policy", "TLS listeners", acted=True),
    _service("aws-load-balancer-backend-protocol", "TLS to the targets", acted=True),
    _service("aws-load-balancer-additional-resource-tags", "tags", acted=True),
    *(_service("aws-load-balancer-healthcheck-" + s, "health checks", acted=True) for s in (
        "healthy-threshold", "unhealthy-threshold", "timeout", "interval", "protocol", "port",
        "path", "success-codes")),
    _service("aws-load-balancer-target-group-attributes", "target group attributes",
             acted=True),
    _service("aws-load-balancer-subnets", "subnets", acted=True),
    _service("aws-load-balancer-eip-allocations", "static EIP addresses", acted=True),
    _service("aws-load-balancer-private-ipv4-addresses", "static private IPv4 addresses",
             acted=True),
    _service("aws-load-balancer-ipv6-addresses", "static IPv6 addresses", acted=True),
    _service("aws-load-balancer-alpn-policy", "the ALPN policy", acted=True),
    _service("aws-load-balancer-target-node-labels", "target node labels", acted=True),
    _service("aws-load-balancer-attributes", "load balancer attributes", acted=True),
    _service("aws-load-balancer-security-groups", "security groups", acted=True, narrows=True),
    _service("aws-load-balancer-manage-backend-security-group-rules",
             "backend security group rules", acted=True),
    _service("aws-load-balancer-inbound-sg-rules-on-private-link-traffic",
             "security group rules on PrivateLink traffic", acted=True, narrows=True),
    _service("aws-load-balancer-security-group-prefix-lists", "security group prefix lists",
             acted=True, narrows=True),
    _service("aws-load-balancer-listener-attributes.*", "listener attributes", acted=True,
             placeholder="<protocol>-<port>"),
    _service("aws-load-balancer-multi-cluster-target-group", "multi-cluster target groups",
             acted=True),
    _service("aws-load-balancer-enable-prefix-for-ipv6-source-nat", "IPv6 source NAT prefixes",
             acted=True),
    _service("aws-load-balancer-source-nat-ipv6-prefixes", "IPv6 source NAT prefixes",
             acted=True),
    _service("aws-load-balancer-minimum-load-balancer-capacity", "capacity reservations",
             acted=True),
    _service("aws-load-balancer-enable-icmp-for-path-mtu-discovery", "ICMP for path MTU "
             "discovery", acted=True),
    _service("aws-load-balancer-enable-tcp-udp-listener", "the TCP_UDP listener switch",
             acted=True),
    _service("aws-load-balancer-disable-nlb-sg", "security groups", acted=True),
    _service("aws-load-balancer-quic-enabled-ports", "QUIC listeners", acted=True),
    _service("actions.*", "weighted default actions", acted=True,
             placeholder="<protocol>-<port>"),
    _service("aws-load-balancer-target-group-attributes.*", "per-port target group attributes",
             acted=True, placeholder="<port>"),
)

# Keys no upstream release ever read that aiolbc once did: they narrow access, so an object
# still carrying one must not be served as if they were not there.
RETIRED_KEYS: Final[tuple[AnnotationKey, ...]] = (
    AnnotationKey(key=NLB_PREFIX + "source-ranges", kind="service", feature="source ranges",
                  acted_on=False, narrows=True, replaced_by=SOURCE_RANGES_KEY,
                  note="source ranges are read from spec.loadBalancerSourceRanges, else "
                       f"{SOURCE_RANGES_KEY} (upstream's key)"),
)

ALL_KEYS: Final = (*INGRESS_KEYS, *SERVICE_KEYS, *RETIRED_KEYS)

# Which keys an object of each kind is reviewed for: everything under these prefixes is ours
# to act on or to report. Other `service.beta.kubernetes.io/` keys belong to other controllers.
INGRESS_REVIEWED_PREFIXES: Final = (INGRESS_ANNOTATION_PREFIX,)
SERVICE_REVIEWED_PREFIXES: Final = (NLB_PREFIX, SERVICE_ANNOTATION_PREFIX + "load-balancer-",
                                    SERVICE_ANNOTATION_PREFIX + "actions.")

# The parsers' key sets (what each reads; the checkpoint and the restart matrix walk them).
INGRESS_ANNOTATION_KEYS: Final[frozenset[str]] = frozenset(
    k.key for k in INGRESS_KEYS if k.acted_on and k.key.startswith(INGRESS_ANNOTATION_PREFIX))
INGRESS_BACKEND_KEYS: Final[frozenset[str]] = frozenset(
    k.key for k in INGRESS_KEYS if k.backend == "acted")
SERVICE_ANNOTATION_KEYS: Final[frozenset[str]] = frozenset(
    k.key for k in SERVICE_KEYS if k.acted_on)


def _index(entries: Iterable[AnnotationKey]) -> tuple[dict[str, AnnotationKey],
                                                      tuple[AnnotationKey, ...]]:
    exact = {e.key: e for e in entries if not e.family}
    # Longest stem first, so a family never shadows a longer one.
    families = tuple(sorted((e for e in entries if e.family), key=lambda e: -len(e.stem)))
    return exact, families


_INGRESS_INDEX: Final = _index(INGRESS_KEYS)
_SERVICE_INDEX: Final = _index((*SERVICE_KEYS, *RETIRED_KEYS))


def entry_for(key: str, kind: Kind) -> AnnotationKey | None:
    """The catalogue entry `key` is (a family's member included), or None: unknown."""
    exact, families = _INGRESS_INDEX if kind == "ingress" else _SERVICE_INDEX
    found = exact.get(key)
    if found is not None:
        return found
    return next((f for f in families if f.matches(key)), None)


def reviewed(key: object, kind: Kind) -> bool:
    """Whether `key` is under a prefix the catalogue speaks for on an object of `kind`."""
    prefixes = INGRESS_REVIEWED_PREFIXES if kind == "ingress" else SERVICE_REVIEWED_PREFIXES
    return isinstance(key, str) and key.startswith(prefixes)


def reviewed_annotations(annotations: Mapping[str, Any], kind: Kind) -> dict[str, Any]:
    """The annotations the catalogue speaks for: what a watch must see change to report."""
    return {k: v for k, v in annotations.items() if reviewed(k, kind)}


__all__ = [
    "ALL_KEYS",
    "INGRESS_ANNOTATION_KEYS",
    "INGRESS_BACKEND_KEYS",
    "INGRESS_KEYS",
    "NLB_PREFIX",
    "RETIRED_KEYS",
    "SERVICE_ANNOTATION_KEYS",
    "SERVICE_KEYS",
    "SOURCE_RANGES_KEY",
    "AnnotationKey",
    "Kind",
    "entry_for",
    "reviewed",
    "reviewed_annotations",
]
