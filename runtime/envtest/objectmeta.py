"""Server-side object rules: name validation, generated names, generation, per-kind defaults."""

from __future__ import annotations

import random
import re
import time
from typing import Any

from runtime.envtest.registry import RBAC_GROUP, ResourceType

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
              "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')")

# Letters the real server uses for generateName suffixes (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

Cause = tuple[str, str, str]


def name_problems(rt: ResourceType, name: str, *, field: str = "metadata.name") -> list[Cause]:
    """Validation causes for an object name, as the real validators word them."""
    if rt.plural in ("services",):
        pattern, message, limit = _DNS1035_LABEL, _DNS1035_MSG, 63
    elif rt.plural == "namespaces":
        pattern, message, limit = _DNS1123_LABEL, _LABEL_MSG, 63
    elif rt.plural in ("events",):
        return []  # event names are free-form (they carry a dot and a hex suffix)
    elif rt.group == RBAC_GROUP:
        return _path_segment_problems(name, field)  # `system:discovery` is a valid role name
    else:
        pattern, message, limit = _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG, 253
    causes: list[Cause] = []
    if len(name) > limit:
        causes.append((field, "FieldValueInvalid",
                       f'Invalid value: "{name}": must be no more than {limit} characters'))
    if not pattern.match(name):
        causes.append((field, "FieldValueInvalid", f'Invalid value: "{name}": {message}'))
    return causes


def _path_segment_problems(name: str, field: str) -> list[Cause]:
    causes: list[Cause] = []
    if name in (".", ".."):
        causes.append((field, "FieldValueInvalid", f"Invalid value: \"{name}\": may not be "
                       f"'{name}'"))
    for bad in ("/", "%"):
        if bad in name:
            causes.append((field, "FieldValueInvalid", f"Invalid value: \"{name}\": may not "
                           f"contain '{bad}'"))
    return causes


def generate_name(prefix: str, rng: random.Random) -> str:
    # The real server trims the prefix so that the result stays within 63 characters.
    return prefix[:58] + "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(5))


def timestamp(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


def spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """What a generation bump looks at: spec, or for kinds without one, everything outside
    metadata and status."""
    if "spec" in obj:
        return {"spec": obj["spec"]}
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "status", "apiVersion", "kind")}


def normalized(rt: ResourceType, body: dict[str, Any], api_version: str | None = None
               ) -> dict[str, Any]:
    """A copy of the object with apiVersion, kind and metadata first.

    The fixed order lets lists strip apiVersion/kind from items by slicing serialized bytes."""
    out: dict[str, Any] = {"apiVersion": api_version or rt.api_version, "kind": rt.kind,
                           "metadata": body.get("metadata") or {}}
    for key, value in body.items():
        if key not in out:
            out[key] = value
    return out


def apply_create_defaults(rt: ResourceType, obj: dict[str, Any], *, ip_counter: int) -> None:
    """The defaults the real server fills on create for kinds aiolbc reads."""
    if rt.plural == "namespaces" and not rt.group:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif rt.plural == "services" and not rt.group:
        spec = obj.setdefault("spec", {})
        _default_service(spec, ip_counter)
        obj["status"] = {"loadBalancer": {}}
    elif rt.plural == "pods" and not rt.group:
        obj["status"] = {"phase": "Pending"}
    elif rt.plural == "ingresses" and rt.group == "networking.k8s.io":
        obj["status"] = {"loadBalancer": {}}
    elif rt.plural == "secrets" and not rt.group:
        obj.setdefault("type", "Opaque")


def _default(spec: dict[str, Any], key: str, value: Any) -> Any:
    """Set `key` unless it has a non-empty value (defaulting treats "" as unset)."""
    if spec.get(key) in (None, ""):
        spec[key] = value
    return spec[key]


def _default_service(spec: dict[str, Any], ip_counter: int) -> None:
    kind = _default(spec, "type", "ClusterIP")
    _default(spec, "sessionAffinity", "None")
    if kind != "ExternalName":
        # Addresses are only strings in objects here; nothing ever connects to them.
        ip = _default(spec, "clusterIP", f"10.96.{(ip_counter >> 8) & 255}.{ip_counter & 255 or 1}")
        _default(spec, "clusterIPs", [ip])
        _default(spec, "ipFamilies", ["IPv4"])
        _default(spec, "ipFamilyPolicy", "SingleStack")
        _default(spec, "internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        _default(spec, "externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)
    for index, port in enumerate(spec.get("ports") or []):
        if not isinstance(port, dict):
            continue
        _default(port, "protocol", "TCP")
        if "port" in port:
            _default(port, "targetPort", port["port"])
        node_ports = kind == "NodePort" or (
            kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True))
        if node_ports and not port.get("nodePort"):
            port["nodePort"] = 30000 + (ip_counter * 7 + index) % 2768
