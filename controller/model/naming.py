"""Deterministic resource names, computed exactly as upstream computes them.

A name is only an input at creation: the deployer finds what a stack owns by its tags (upstream
does the same), so a load balancer or target group that an older model, or an older upstream
release, named differently is still adopted. New names must nonetheless equal upstream's, so
that a switch between the two controllers, in either direction, finds nothing to replace.

Each name is `k8s-<ns≤8>-<name≤8>-<hash10>` (or `k8s-<group≤17>-<hash10>` for an explicit
Ingress group), where namespace, name and group lose every non-alphanumeric character and
`hash10` is the first 10 hex digits of SHA-256 over the inputs listed per function, concatenated
without separators (upstream writes them one by one into the hash). The result is at most 32
characters of `[a-zA-Z0-9-]` and never starts or ends with `-`.
"""

from __future__ import annotations

import hashlib
import re

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
# Upstream's default for `backend-protocol-version` on HTTP and HTTPS target groups; it is
# hashed even when no annotation sets it (pkg/ingress/model_builder.go).
DEFAULT_PROTOCOL_VERSION = "HTTP1"


def _hash10(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
    return h.hexdigest()[:10]


def _sanitize(value: str) -> str:
    return _NON_ALNUM.sub("", value)


def _name(namespace: str, name: str, uuid: str) -> str:
    return f"k8s-{_sanitize(namespace)[:8]}-{_sanitize(name)[:8]}-{uuid}"


def ingress_group_id(*, namespace: str, name: str, group: str | None = None) -> str:
    """Upstream's IngressGroup id: the explicit group name, else `namespace/name`."""
    return group if group else f"{namespace}/{name}"


def load_balancer_name(
    cluster: str, namespace: str, name: str, scheme: str, group: str | None = None
) -> str:
    """ALB for an Ingress group (pkg/ingress/model_build_load_balancer.go): hashes cluster,
    group id (group name or `namespace/name`), scheme."""
    uuid = _hash10(cluster, ingress_group_id(namespace=namespace, name=name, group=group), scheme)
    if group:
        return f"k8s-{_sanitize(group)[:17]}-{uuid}"
    return _name(namespace, name, uuid)


def service_load_balancer_name(
    cluster: str, namespace: str, name: str, scheme: str, *, uid: str
) -> str:
    """NLB for a Service (pkg/service/model_build_load_balancer.go): hashes cluster, Service
    UID, scheme."""
    return _name(namespace, name, _hash10(cluster, uid, scheme))


def ingress_security_group_name(cluster: str, namespace: str, name: str,
                                group: str | None = None) -> str:
    """Managed frontend group of an Ingress group. Hashes cluster and group id (unlike the load
    balancer's name, not the scheme, so a scheme change keeps the group)."""
    uuid = _hash10(cluster, ingress_group_id(namespace=namespace, name=name, group=group))
    if group:
        return f"k8s-{_sanitize(group)[:17]}-{uuid}"
    return _name(namespace, name, uuid)


def frontend_nlb_target_group_name(cluster: str, group_id: str, port: int, hc_port: str,
                                   hc_protocol: str, *, explicit: bool) -> str:
    """A frontend NLB's target group (pkg/ingress/model_build_frontend_nlb.go): hashes
    cluster, group id, the NLB port, target type `alb`, protocol TCP, the health check's port
    and protocol."""
    uuid = _hash10(cluster, group_id, str(port), "alb", "TCP", hc_port, hc_protocol)
    if explicit:
        return f"k8s-{_sanitize(group_id)[:17]}-{uuid}"
    namespace, _, name = group_id.partition("/")
    return _name(namespace, name, uuid)


def service_security_group_name(cluster: str, namespace: str, name: str, *, uid: str) -> str:
    """Managed frontend group of a Service's NLB. Hashes cluster, name, namespace and UID, in
    that order (upstream's: the name before the namespace)."""
    return _name(namespace, name, _hash10(cluster, name, namespace, uid))


def backend_security_group_name(cluster: str) -> str:
    """The cluster's shared backend group: `k8s-traffic-<cluster≤232>-<hash10(cluster)>`, the
    cluster's letters keeping their case."""
    return f"k8s-traffic-{_sanitize(cluster)[:232]}-{_hash10(cluster)}"


def ingress_target_group_name(
    cluster: str,
    *,
    group_id: str,
    ingress_namespace: str,
    ingress_name: str,
    service_namespace: str,
    service_name: str,
    service_uid: str,
    service_port: int | str,
    target_port: int,
    target_type: str,
    protocol: str,
    protocol_version: str | None = None,
    target_control_port: int | None = None,
) -> str:
    """A target group of an Ingress backend (pkg/ingress/model_build_target_group.go). Hashes,
    in this order: cluster, group id, Ingress namespace and name, Service UID, the backend port
    as the Ingress gives it (a number or a port name), the target group port, target type,
    protocol, protocol version (`HTTP1` when none is set) and, only when there is one, the
    target control port. The name shows the Service's namespace and name, which are not
    hashed."""
    parts = [cluster, group_id, ingress_namespace, ingress_name, service_uid, str(service_port),
             str(target_port), target_type, protocol,
             protocol_version or DEFAULT_PROTOCOL_VERSION]
    if target_control_port is not None:
        parts.append(str(target_control_port))
    return _name(service_namespace, service_name, _hash10(*parts))


def service_target_group_name(
    cluster: str,
    *,
    namespace: str,
    name: str,
    uid: str,
    target_port: int,
    service_port: int,
    target_type: str,
    protocol: str,
    health_check_protocol: str,
    health_check_interval: int,
    base_uid: str | None = None,
) -> str:
    """A target group of a Service port (pkg/service/model_build_target_group.go). Hashes, in
    this order: cluster, the base Service's UID (weighted target groups only), the Service UID,
    the target group port, the Service port, target type, protocol, the health check protocol
    (upper case) and interval."""
    parts = [cluster, *([base_uid] if base_uid is not None else []), uid, str(target_port),
             str(service_port), target_type, protocol, health_check_protocol.upper(),
             str(health_check_interval)]
    return _name(namespace, name, _hash10(*parts))
