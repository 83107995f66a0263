"""Deterministic resource names, upstream-compatible.

Each name is `k8s-<ns≤8>-<name≤8>-<hash10>` (or `k8s-<group≤17>-<hash10>` for an explicit
Ingress group), where namespace, name and group lose every non-alphanumeric character and
`hash10` is the first 10 hex digits of SHA-256 over the inputs listed per function, concatenated
without separators (as upstream writes them one by one into the hash). The result is at most 32
characters of `[a-zA-Z0-9-]` and never starts or ends with `-`.
"""

from __future__ import annotations

import hashlib
import re

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


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
    """ALB for an Ingress group. Hashes cluster, group id (group name or `namespace/name`),
    scheme: a scheme change yields a new name, i.e. a replacement load balancer."""
    uuid = _hash10(cluster, ingress_group_id(namespace=namespace, name=name, group=group), scheme)
    if group:
        return f"k8s-{_sanitize(group)[:17]}-{uuid}"
    return _name(namespace, name, uuid)


def service_load_balancer_name(
    cluster: str, namespace: str, name: str, scheme: str, *, uid: str
) -> str:
    """NLB for a Service. Hashes cluster, Service UID, scheme (upstream's inputs)."""
    return _name(namespace, name, _hash10(cluster, uid, scheme))


def ingress_security_group_name(cluster: str, namespace: str, name: str,
                                group: str | None = None) -> str:
    """Managed frontend group of an Ingress group. Hashes cluster and group id (unlike the load
    balancer's name, not the scheme, so a scheme change keeps the group)."""
    uuid = _hash10(cluster, ingress_group_id(namespace=namespace, name=name, group=group))
    if group:
        return f"k8s-{_sanitize(group)[:17]}-{uuid}"
    return _name(namespace, name, uuid)


def service_security_group_name(cluster: str, namespace: str, name: str, *, uid: str) -> str:
    """Managed frontend group of a Service's NLB. Hashes cluster, name, namespace and UID, in
    that order (upstream's: the name before the namespace)."""
    return _name(namespace, name, _hash10(cluster, name, namespace, uid))


def backend_security_group_name(cluster: str) -> str:
    """The cluster's shared backend group: `k8s-traffic-<cluster≤232>-<hash10(cluster)>`, the
    cluster's letters keeping their case."""
    return f"k8s-traffic-{_sanitize(cluster)[:232]}-{_hash10(cluster)}"


def target_group_name(
    cluster: str,
    *,
    stack_id: str,
    service_namespace: str,
    service_name: str,
    service_uid: str,
    service_port: str,
    target_port: str,
    target_type: str,
    protocol: str,
    protocol_version: str = "",
    ingress_namespace: str = "",
    ingress_name: str = "",
) -> str:
    """Hashes, in this order: cluster, stack id, Ingress namespace and name (empty for a
    Service), Service UID, Service port, target port, target type, protocol, protocol version.
    Any change to an immutable target group property therefore gives a new name."""
    uuid = _hash10(
        cluster, stack_id, ingress_namespace, ingress_name, service_uid, service_port,
        target_port, target_type, protocol, protocol_version,
    )
    return _name(service_namespace, service_name, uuid)
