"""Objects carrying every annotation key the controllers act on, with values that take every
branch that reads one more key (an HTTP health check, OIDC authentication, access logs on;
JWT validation, which excludes authentication, on an Ingress of its own: `INGRESS_JWT`), for
the tests that hold the parsers' reads to the catalogue (`recording()`, `found_in()`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from controller.ingress.caches import Caches
from controller.ingress.model import BuiltGroup, build_group
from runtime.objects import Obj
from runtime.reconcile import Request
from tests.support.objects import (
    WEB_PORTS,
    backend_service,
    class_params,
    ingress,
    ingress_class,
    ingress_path,
    secret,
    service_port,
    web_service,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

CERT: Final = "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d"
OIDC: Final = json.dumps({"issuer": "https://idp.example.com",
                          "authorizationEndpoint": "https://idp.example.com/auth",
                          "tokenEndpoint": "https://idp.example.com/token",
                          "userInfoEndpoint": "https://idp.example.com/userinfo",
                          "secretName": "oidc"})
COGNITO: Final = json.dumps({
    "userPoolARN": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abcDEF123",
    "userPoolClientID": "client1", "userPoolDomain": "shop-auth"})
JWT: Final = json.dumps({"jwksEndpoint": "https://idp.example.com/jwks",
                         "issuer": "https://idp.example.com"})

# Read from the backend Service first (upstream's svcAndIngAnnotations), then the Ingress.
TARGET_GROUP: Final = {
    "target-type": "ip", "backend-protocol": "HTTP", "backend-protocol-version": "HTTP1",
    "target-group-attributes": "deregistration_delay.timeout_seconds=30",
    "healthcheck-port": "8081", "healthcheck-protocol": "HTTP", "healthcheck-path": "/hz",
    "healthcheck-interval-seconds": "20", "healthcheck-timeout-seconds": "6",
    "healthy-threshold-count": "3", "unhealthy-threshold-count": "3", "success-codes": "200",
    "multi-cluster-target-group": "true", "target-node-labels": "pool=a", "tags": "team=web",
    "auth-type": "oidc", "auth-idp-oidc": OIDC, "auth-idp-cognito": COGNITO,
    "auth-scope": "openid email",
    "auth-session-cookie": "session", "auth-session-timeout": "3600",
    "auth-on-unauthenticated-request": "deny",
    "target-control-port.web.80": "9000",
}
INGRESS: Final = {
    **TARGET_GROUP,
    "scheme": "internal", "load-balancer-name": "shop", "ip-address-type": "ipv4",
    "subnets": "subnet-1,subnet-2", "security-groups": "sg-1",
    "load-balancer-attributes": "idle_timeout.timeout_seconds=60",
    "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]', "ssl-redirect": "443",
    "inbound-cidrs": "10.0.0.0/8", "ssl-policy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "certificate-arn": CERT, "tags": "team=shop", "security-group-prefix-lists": "pl-1",
    # Read, and then passed over: certificate-arn wins (nothing is requested).
    "create-acm-cert": "true",
    "acm-pca-arn": "arn:aws:acm-pca:us-west-2:123456789012:certificate-authority/0a1b",
    "manage-backend-security-group-rules": "true", "group.order": "5",
    "wafv2-acl-arn": "arn:aws:wafv2:us-west-2:123456789012:regional/webacl/shop/0a1b",
    "wafv2-acl-name": "shop", "waf-acl-id": "0a1b2c3d", "web-acl-id": "0a1b2c3d",
    "shield-advanced-protection": "true",
    "use-regex-path-match": "false",
    "minimum-load-balancer-capacity": "CapacityUnits=100",
    "ipam-ipv4-pool-id": "ipam-pool-0a1b2c",
    "customer-owned-ipv4-pool": "ipv4pool-coip-0a1b2c",
    "transforms.web": json.dumps([{"type": "url-rewrite", "urlRewriteConfig": {
        "rewrites": [{"regex": "^/api/(.+)$", "replace": "/$1"}]}}]),
    "actions.web": json.dumps({"type": "forward", "forwardConfig": {"targetGroups": [
        {"serviceName": "web", "servicePort": 80}]}}),
    "conditions.web": json.dumps([{"field": "source-ip",
                                   "sourceIpConfig": {"values": ["10.0.0.0/8"]}}]),
    "mutual-authentication": '[{"port": 443, "mode": "passthrough"}]',
    "listener-attributes.HTTPS-443": "routing.http.response.server.enabled=false",
    # The controller's own output (IngressPlanAnnotation); a stale one is removed.
    "dry-run-plan": "{}",
}
INGRESS_JWT: Final = {**INGRESS, "auth-type": "none", "jwt-validation": JWT}
SERVICE: Final = {
    "aws-load-balancer-type": "external", "aws-load-balancer-nlb-target-type": "ip",
    "aws-load-balancer-name": "web", "aws-load-balancer-scheme": "internal",
    "aws-load-balancer-ip-address-type": "ipv4",
    "aws-load-balancer-subnets": "subnet-1,subnet-2", "aws-load-balancer-ssl-cert": CERT,
    "aws-load-balancer-ssl-ports": "443",
    "aws-load-balancer-ssl-negotiation-policy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "aws-load-balancer-backend-protocol": "ssl", "aws-load-balancer-alpn-policy": "HTTP2Preferred",
    "aws-load-balancer-healthcheck-protocol": "HTTP", "aws-load-balancer-healthcheck-port": "8081",
    "aws-load-balancer-healthcheck-path": "/hz",
    "aws-load-balancer-healthcheck-healthy-threshold": "3",
    "aws-load-balancer-healthcheck-unhealthy-threshold": "3",
    "aws-load-balancer-healthcheck-timeout": "5", "aws-load-balancer-healthcheck-interval": "10",
    "aws-load-balancer-healthcheck-success-codes": "200-399",
    "aws-load-balancer-target-group-attributes": "deregistration_delay.timeout_seconds=30",
    "aws-load-balancer-target-node-labels": "pool=a",
    "aws-load-balancer-attributes": "load_balancing.cross_zone.enabled=true",
    "aws-load-balancer-additional-resource-tags": "team=web",
    "aws-load-balancer-proxy-protocol": "*",
    "aws-load-balancer-multi-cluster-target-group": "true",
    "aws-load-balancer-listener-attributes.TLS-443": "tcp.idle_timeout.seconds=60",
    "actions.TLS-443": '{"type": "forward", "forwardConfig": {"baseServiceWeight": 1, '
                       '"targetGroups": [{"targetGroupARN": "arn:aws:elasticloadbalancing:'
                       'us-west-2:123456789012:targetgroup/b/1e7d7b29959735a4", "weight": 1}]}}',
    "aws-load-balancer-access-log-enabled": "true",
    "aws-load-balancer-access-log-s3-bucket-name": "logs",
    "aws-load-balancer-access-log-s3-bucket-prefix": "web",
    "aws-load-balancer-cross-zone-load-balancing-enabled": "true",
    "aws-load-balancer-security-groups": "sg-1",
    "aws-load-balancer-security-group-prefix-lists": "pl-1",
    "load-balancer-source-ranges": "10.0.0.0/8",
    "aws-load-balancer-manage-backend-security-group-rules": "true",
    "aws-load-balancer-disable-nlb-sg": "false",
    "aws-load-balancer-enable-icmp-for-path-mtu-discovery": "on",
    "aws-load-balancer-inbound-sg-rules-on-private-link-traffic": "off",
    "aws-load-balancer-minimum-load-balancer-capacity": "CapacityUnits=3000",
    "aws-load-balancer-enable-tcp-udp-listener": "true",
    "aws-load-balancer-proxy-protocol-per-target-group": "443",
    "aws-load-balancer-target-group-attributes.443": "deregistration_delay.timeout_seconds=60",
    "aws-load-balancer-private-ipv4-addresses": "10.0.1.5,10.0.2.5",
    "aws-load-balancer-quic-enabled-ports": "dns",
}
# Read only when the scheme annotation is absent (upstream ignores it then); and the group
# name takes the Ingress out of its implicit group.
SERVICE_INTERNAL: Final = {**{k: v for k, v in SERVICE.items()
                              if k != "aws-load-balancer-scheme"},
                           "aws-load-balancer-internal": "true"}
# The keys an internet-facing dualstack load balancer reads and an internal one refuses.
SERVICE_PUBLIC_DUALSTACK: Final = {
    **{k: v for k, v in SERVICE.items() if k != "aws-load-balancer-private-ipv4-addresses"},
    "aws-load-balancer-scheme": "internet-facing", "aws-load-balancer-ip-address-type":
    "dualstack", "aws-load-balancer-eip-allocations": "eipalloc-1,eipalloc-2",
    "aws-load-balancer-ipv6-addresses": "2600:1f13::5,2600:1f13:0:1::5",
    "aws-load-balancer-enable-prefix-for-ipv6-source-nat": "on",
    "aws-load-balancer-source-nat-ipv6-prefixes": "auto_assigned,2600:1f13:0:1:1::/80"}
# A named group with a frontend NLB (its keys are read only when the group enables it).
FRONTEND_NLB: Final = {
    "enable-frontend-nlb": "true", "frontend-nlb-scheme": "internet-facing",
    "frontend-nlb-subnets": "subnet-3,subnet-4", "frontend-nlb-security-groups": "sg-2",
    "frontend-nlb-listener-port-mapping": "8443=443",
    "frontend-nlb-healthcheck-port": "traffic-port",
    "frontend-nlb-healthcheck-protocol": "HTTPS", "frontend-nlb-healthcheck-path": "/hz",
    "frontend-nlb-healthcheck-interval-seconds": "20",
    "frontend-nlb-healthcheck-timeout-seconds": "6",
    "frontend-nlb-healthcheck-healthy-threshold-count": "3",
    "frontend-nlb-healthcheck-unhealthy-threshold-count": "3",
    "frontend-nlb-healthcheck-success-codes": "200-299",
    "frontend-nlb-attributes": "load_balancing.cross_zone.enabled=true",
    "frontend-nlb-tags": "team=edge",
    "frontend-nlb-eip-allocations": "eipalloc-3,eipalloc-4",
}
INGRESS_GROUP: Final = {"group.name": "shop", **FRONTEND_NLB}

REQUEST: Final = Request("default", "shop")


def ingress_world(annotations: Mapping[str, str | None],
                  service_annotations: Mapping[str, str] | None = None, *,
                  params: Obj | None = None) -> tuple[Caches, Obj]:
    """Caches with Ingress default/shop (`/` to Service web), its class (with `params`), the
    Service and the OIDC Secret; and the Ingress."""
    ing = ingress("shop", annotations, paths=[ingress_path("/", "web")])
    objs: list[Obj] = [ingress_class("alb", params=None if params is None
                                     else params["metadata"]["name"]),
                       backend_service("web", service_annotations), ing,
                       secret("oidc", {"clientID": "id", "clientSecret": "shh"})]
    if params is not None:
        objs.append(params)
    return caches(*objs), ing


def build(c: Caches, request: Request = REQUEST) -> BuiltGroup:
    return build_group(loader(c).load(request), c, SETTINGS)


def namespace_only_params() -> Obj:
    """IngressClassParams that override no annotation."""
    return class_params("scoped", {"namespaceSelector": {"matchLabels": {}}})


def nlb(annotations: Mapping[str, str]) -> dict[str, Any]:
    # A UDP port too: the QUIC key upgrades it (no other port can be QUIC).
    return web_service(annotations, load_balancer_class=None,
                       ports=[*WEB_PORTS, service_port(53, 5353, "dns", protocol="UDP")])
