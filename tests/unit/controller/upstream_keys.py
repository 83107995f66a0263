"""Upstream's annotation keys, written out from aws-load-balancer-controller v3.5.0's own source
(`pkg/annotations/constants.go`, and the families its model builders compose in code), and
independent of aiolbc's catalogue: the tests hold the catalogue and the code to this list, never
the other way round. A family is given by one member (`actions.web`)."""

from __future__ import annotations

from typing import Final

INGRESS_PREFIX: Final = "alb.ingress.kubernetes.io/"
SERVICE_PREFIX: Final = "service.beta.kubernetes.io/"

# The 69 `IngressSuffix*` (and `IngressLBSuffix*`) constants.
INGRESS_SUFFIXES: Final = (
    "load-balancer-name", "group.name", "group.order", "tags", "ip-address-type", "scheme",
    "subnets", "customer-owned-ipv4-pool", "load-balancer-attributes", "wafv2-acl-arn",
    "wafv2-acl-name", "waf-acl-id", "web-acl-id", "shield-advanced-protection",
    "security-groups", "listen-ports", "ssl-redirect", "inbound-cidrs", "certificate-arn",
    "ssl-policy", "target-type", "backend-protocol", "backend-protocol-version",
    "target-group-attributes", "healthcheck-port", "healthcheck-protocol", "healthcheck-path",
    "healthcheck-interval-seconds", "healthcheck-timeout-seconds", "healthy-threshold-count",
    "unhealthy-threshold-count", "success-codes", "auth-type", "auth-idp-cognito",
    "auth-idp-oidc", "auth-on-unauthenticated-request", "auth-scope", "auth-session-cookie",
    "auth-session-timeout", "jwt-validation", "target-node-labels",
    "manage-backend-security-group-rules", "mutual-authentication",
    "security-group-prefix-lists", "listener-attributes", "multi-cluster-target-group",
    "minimum-load-balancer-capacity", "ipam-ipv4-pool-id", "enable-frontend-nlb",
    "frontend-nlb-scheme", "frontend-nlb-subnets", "frontend-nlb-security-groups",
    "frontend-nlb-listener-port-mapping", "frontend-nlb-eip-allocations",
    "frontend-nlb-healthcheck-port", "frontend-nlb-healthcheck-protocol",
    "frontend-nlb-healthcheck-path", "frontend-nlb-healthcheck-interval-seconds",
    "frontend-nlb-healthcheck-timeout-seconds",
    "frontend-nlb-healthcheck-healthy-threshold-count",
    "frontend-nlb-healthcheck-unhealthy-threshold-count",
    "frontend-nlb-healthcheck-success-codes", "frontend-nlb-attributes", "frontend-nlb-tags",
    "use-regex-path-match", "target-control-port", "create-acm-cert", "acm-pca-arn",
    "dry-run-plan",
)
# Two of the constants are the start of a family (`listener-attributes.HTTP-80`,
# `target-control-port.web.80`); three more families are composed in
# pkg/ingress/enhanced_backend_builder.go.
INGRESS_FAMILIES: Final = ("listener-attributes", "target-control-port")
INGRESS_FAMILY_MEMBERS: Final = ("listener-attributes.HTTP-80", "target-control-port.web.80",
                                 "actions.web", "conditions.web", "transforms.web")
LEGACY_CLASS: Final = "kubernetes.io/ingress.class"

# The 47 `SvcLBSuffix*` constants (all under service.beta.kubernetes.io/).
SERVICE_SUFFIXES: Final = (
    "load-balancer-source-ranges", "aws-load-balancer-type",
    "aws-load-balancer-nlb-target-type", "aws-load-balancer-name", "aws-load-balancer-scheme",
    "aws-load-balancer-internal", "aws-load-balancer-proxy-protocol",
    "aws-load-balancer-proxy-protocol-per-target-group", "aws-load-balancer-ip-address-type",
    "aws-load-balancer-access-log-enabled", "aws-load-balancer-access-log-s3-bucket-name",
    "aws-load-balancer-access-log-s3-bucket-prefix",
    "aws-load-balancer-cross-zone-load-balancing-enabled", "aws-load-balancer-ssl-cert",
    "aws-load-balancer-ssl-ports", "aws-load-balancer-ssl-negotiation-policy",
    "aws-load-balancer-backend-protocol", "aws-load-balancer-additional-resource-tags",
    "aws-load-balancer-healthcheck-healthy-threshold",
    "aws-load-balancer-healthcheck-unhealthy-threshold", "aws-load-balancer-healthcheck-timeout",
    "aws-load-balancer-healthcheck-interval", "aws-load-balancer-healthcheck-protocol",
    "aws-load-balancer-healthcheck-port", "aws-load-balancer-healthcheck-path",
    "aws-load-balancer-healthcheck-success-codes", "aws-load-balancer-target-group-attributes",
    "aws-load-balancer-subnets", "aws-load-balancer-eip-allocations",
    "aws-load-balancer-private-ipv4-addresses", "aws-load-balancer-ipv6-addresses",
    "aws-load-balancer-alpn-policy", "aws-load-balancer-target-node-labels",
    "aws-load-balancer-attributes", "aws-load-balancer-security-groups",
    "aws-load-balancer-manage-backend-security-group-rules",
    "aws-load-balancer-inbound-sg-rules-on-private-link-traffic",
    "aws-load-balancer-security-group-prefix-lists", "aws-load-balancer-listener-attributes",
    "aws-load-balancer-multi-cluster-target-group",
    "aws-load-balancer-enable-prefix-for-ipv6-source-nat",
    "aws-load-balancer-source-nat-ipv6-prefixes",
    "aws-load-balancer-minimum-load-balancer-capacity",
    "aws-load-balancer-enable-icmp-for-path-mtu-discovery",
    "aws-load-balancer-enable-tcp-udp-listener", "aws-load-balancer-disable-nlb-sg",
    "aws-load-balancer-quic-enabled-ports",
)
# `aws-load-balancer-listener-attributes` starts a family (pkg/service/model_build_listener.go);
# `actions.<protocol>-<port>` (ibid.) and the per-port target group attributes
# (pkg/service/model_build_target_group.go) are composed in code.
SERVICE_FAMILIES: Final = ("aws-load-balancer-listener-attributes",)
SERVICE_FAMILY_MEMBERS: Final = ("aws-load-balancer-listener-attributes.TCP-80", "actions.TCP-80",
                                 "aws-load-balancer-target-group-attributes.80")

# Every upstream key an Ingress (or its backend Service) or a Service may carry, families by
# one member: 73 and 49.
INGRESS_KEYS: Final = (
    *(INGRESS_PREFIX + s for s in INGRESS_SUFFIXES if s not in INGRESS_FAMILIES),
    *(INGRESS_PREFIX + s for s in INGRESS_FAMILY_MEMBERS), LEGACY_CLASS)
SERVICE_KEYS: Final = (
    *(SERVICE_PREFIX + s for s in SERVICE_SUFFIXES if s not in SERVICE_FAMILIES),
    *(SERVICE_PREFIX + s for s in SERVICE_FAMILY_MEMBERS))
