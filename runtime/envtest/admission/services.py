"""Where a webhook's `clientConfig.service` points. The real server dials the Service; here a
test maps the Service to a loopback address (`map`), or the Service's EndpointSlices (else its
Endpoints) name one. Only loopback addresses are ever dialled."""

from __future__ import annotations

import ipaddress
from typing import Any

from runtime.envtest.store import Store

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class ResolveError(Exception):
    """Why a Service cannot be dialled, worded as the real resolvers word it."""


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_target(target: str | int) -> tuple[str, int]:
    """`PORT` (on 127.0.0.1) or `HOST:PORT` with a loopback host; raises ValueError."""
    if isinstance(target, int) and not isinstance(target, bool):
        host, port = "127.0.0.1", target
    elif isinstance(target, str):
        host, sep, port_text = target.rpartition(":")
        if not sep or not port_text.isdigit():
            raise ValueError(f"expected HOST:PORT or a port number, got {target!r}")
        host, port = host.strip("[]"), int(port_text)
    else:
        raise ValueError(f"expected HOST:PORT or a port number, got {target!r}")
    if not loopback(host):
        raise ValueError(f"{host} is not a loopback address: the server dials only loopback")
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be between 1 and 65535, not {port}")
    return ("127.0.0.1" if host == "localhost" else host), port


def _get(obj: Any, *path: str) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, dict) else None
    return obj


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field; stored objects are not schema-checked, so anything else
    counts as empty."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _port_named(ports: Any, name: str) -> int | None:
    number = next((p.get("port") for p in _dicts(ports) if (p.get("name") or "") == name),
                  None)
    return number if isinstance(number, int) and not isinstance(number, bool) else None


class ServiceResolver:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._mapped: dict[tuple[str, str, int], tuple[str, int]] = {}

    def map(self, namespace: str, name: str, port: int, target: str | int) -> None:
        self._mapped[(namespace, name, port)] = parse_target(target)

    def unmap(self, namespace: str, name: str, port: int) -> None:
        self._mapped.pop((namespace, name, port), None)

    def resolve(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        mapped = self._mapped.get((namespace, name, port))
        if mapped is not None:
            return mapped
        service = self._store.get("/services", namespace, name)
        if service is None:
            raise ResolveError(f'service "{name}" not found')
        svc = service.obj
        kind = _get(svc, "spec", "type") or "ClusterIP"
        if kind not in ("ClusterIP", "LoadBalancer", "NodePort"):
            raise ResolveError(f'unsupported service type "{kind}"')
        svc_port = next((p for p in _dicts(_get(svc, "spec", "ports"))
                         if p.get("port") == port), None)
        if svc_port is None:
            raise ResolveError(f'no service port {port} found for service "{name}"')
        port_name = svc_port.get("name") or ""
        address = self._from_slices(namespace, name, port_name) or \
            self._from_endpoints(namespace, name, port_name)
        if address is None:
            raise ResolveError(f'no endpoints available for service "{name}"')
        host, target_port = address
        if not loopback(host):
            raise ResolveError(f"endpoint {host} of service \"{name}\" is not a loopback "
                               "address: the server dials only loopback")
        return host, target_port

    def _from_slices(self, namespace: str, name: str, port_name: str) -> tuple[str, int] | None:
        for entry in self._store.entries("discovery.k8s.io/endpointslices", namespace):
            slice_ = entry.obj
            labels = _get(slice_, "metadata", "labels")
            if not isinstance(labels, dict) or labels.get(SERVICE_NAME_LABEL) != name:
                continue
            number = _port_named(slice_.get("ports"), port_name)
            if number is None:
                continue
            for endpoint in _dicts(slice_.get("endpoints")):
                addresses = [a for a in _get(endpoint, "addresses") or [] if isinstance(a, str)]
                if _get(endpoint, "conditions", "ready") is not False and addresses:
                    return addresses[0], number
        return None

    def _from_endpoints(self, namespace: str, name: str,
                        port_name: str) -> tuple[str, int] | None:
        endpoints = self._store.get("/endpoints", namespace, name)
        for subset in _dicts(endpoints.obj.get("subsets")) if endpoints else []:
            addresses = [a["ip"] for a in _dicts(subset.get("addresses"))
                         if isinstance(a.get("ip"), str)]
            number = _port_named(subset.get("ports"), port_name)
            if addresses and number is not None:
                return addresses[0], number
        return None
