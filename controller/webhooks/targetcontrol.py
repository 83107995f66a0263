"""The ALB target control agent sidecar, as upstream v3.5.0 builds it
(`pkg/inject/albtargetcontrol`): whether a new pod gets it, and the container made from an
ALBTargetControlConfig spec with the pod's own annotations over it.

Pure: the handler (handlers.py `ALBTargetControlAgentMutator`) reads the namespace and the
config; this module decides. An annotation upstream refuses is `InvalidAgentAnnotation`, in
upstream's words (the webhooks fail closed, so the pod is denied with it); a quantity
annotation that does not parse is ignored, as upstream does."""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Final

from controller.apis.albtargetcontrolconfig import ALBTargetControlConfigSpec
from controller.errors import InvalidInput

SIDECAR_CONTAINER_NAME: Final = "alb-target-control-agent"
INJECT_LABEL: Final = "elbv2.k8s.aws/alb-target-control-agent-inject"
INJECTED_ANNOTATION: Final = "elbv2.k8s.aws/alb-target-control-agent-injected"
NAMESPACE_LABEL: Final = "elbv2.k8s.aws/alb-target-control-agent-injection"
NAMESPACE_ENABLED: Final = "enabled"

_PREFIX: Final = "elbv2.k8s.aws/alb-target-control-agent-"
ANNOTATION_IMAGE: Final = _PREFIX + "image"
ANNOTATION_DATA_ADDRESS: Final = _PREFIX + "data-address"
ANNOTATION_CONTROL_ADDRESS: Final = _PREFIX + "control-address"
ANNOTATION_DESTINATION_ADDRESS: Final = _PREFIX + "destination-address"
ANNOTATION_MAX_CONCURRENCY: Final = _PREFIX + "max-concurrency"
ANNOTATION_TLS_CERT_PATH: Final = _PREFIX + "tls-cert-path"
ANNOTATION_TLS_KEY_PATH: Final = _PREFIX + "tls-key-path"
ANNOTATION_TLS_SECURITY_POLICY: Final = _PREFIX + "tls-security-policy"
ANNOTATION_PROTOCOL_VERSION: Final = _PREFIX + "protocol-version"
ANNOTATION_RUST_LOG: Final = _PREFIX + "rust-log"
ANNOTATION_CPU_REQUEST: Final = _PREFIX + "cpu-request"
ANNOTATION_CPU_LIMIT: Final = _PREFIX + "cpu-limit"
ANNOTATION_MEMORY_REQUEST: Final = _PREFIX + "memory-request"
ANNOTATION_MEMORY_LIMIT: Final = _PREFIX + "memory-limit"

_INT: Final = re.compile(r"[+-]?[0-9]+")  # Go's strconv.ParseInt, base 10
_INT32: Final = range(-(2**31), 2**31)
# resource.Quantity's form (the CRD's pattern for resources' values).
_QUANTITY: Final = re.compile(r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
                              r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
                              r"(\.[0-9]+))))?")


class InvalidAgentAnnotation(InvalidInput):
    """A pod's agent annotation upstream refuses; the message is upstream's."""

    condition_reason = "InvalidALBTargetControlAgentAnnotation"


def injection_enabled(pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None) -> bool:
    """The pod's label first ("true"/"false"), then its namespace's label ("enabled");
    otherwise off. `namespace_labels` None: the namespace could not be read (off, as
    upstream)."""
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(INJECT_LABEL)
    if value == "false":
        return False
    if value == "true":
        return True
    if namespace_labels is None or NAMESPACE_LABEL not in namespace_labels:
        return False
    return namespace_labels[NAMESPACE_LABEL] == NAMESPACE_ENABLED


def has_agent(pod: Mapping[str, Any]) -> bool:
    containers = (pod.get("spec") or {}).get("containers") or []
    return any(isinstance(c, dict) and c.get("name") == SIDECAR_CONTAINER_NAME
               for c in containers)


def _int32(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT32 else None


def _split_host_port(address: str) -> tuple[str, str] | None:
    """Go's net.SplitHostPort: an IPv6 host in brackets, otherwise no colon in the host."""
    if address.startswith("["):
        end = address.find("]")
        if end < 0 or address[end + 1:end + 2] != ":":
            return None
        host, port = address[1:end], address[end + 2:]
        return (host, port) if "[" not in port and "]" not in port else None
    host, sep, port = address.rpartition(":")
    if not sep or ":" in host or "[" in host or "]" in host:
        return None
    return host, port


def _port_of(address: str) -> int:
    """upstream's extractPortFromAddress: 0 when it has none."""
    parts = _split_host_port(address)
    port = _int32(parts[1]) if parts else None
    return port if port is not None else 0


def valid_address(address: str) -> bool:
    """upstream's isValidAddress: an IP literal and a port."""
    parts = _split_host_port(address)
    if parts is None or _int32(parts[1]) is None or "%" in parts[0]:
        return False
    try:
        ipaddress.ip_address(parts[0])
    except ValueError:
        return False
    return True


def _address(annotations: Mapping[str, str], key: str, current: str, example: str,
             what: str) -> str:
    if key not in annotations:
        return current
    value = annotations[key]
    if not valid_address(value):
        raise InvalidAgentAnnotation(f"invalid {what} address format: {value} (expected "
                                     f"host:port format, e.g., {example})")
    return value


def with_agent(pod: Mapping[str, Any], spec: ALBTargetControlConfigSpec) -> dict[str, Any]:
    """A copy of `pod` with the agent sidecar appended and the injected annotation; the pod
    itself is left alone."""
    annotations: dict[str, str] = {
        k: v for k, v in ((pod.get("metadata") or {}).get("annotations") or {}).items()
        if isinstance(v, str)}
    image = annotations.get(ANNOTATION_IMAGE, spec.image)
    concurrency = spec.max_concurrency
    if ANNOTATION_MAX_CONCURRENCY in annotations:
        raw = annotations[ANNOTATION_MAX_CONCURRENCY]
        parsed = _int32(raw)
        if parsed is None or not 0 <= parsed <= 1000:
            raise InvalidAgentAnnotation(f"invalid concurrency value: {raw} (must be 0-1000)")
        concurrency = parsed
    data = _address(annotations, ANNOTATION_DATA_ADDRESS, spec.data_address, "0.0.0.0:80",
                    "data")
    control = _address(annotations, ANNOTATION_CONTROL_ADDRESS, spec.control_address,
                       "0.0.0.0:3000", "control")
    destination = _address(annotations, ANNOTATION_DESTINATION_ADDRESS,
                           spec.destination_address, "127.0.0.1:8080", "destination")
    cert = annotations.get(ANNOTATION_TLS_CERT_PATH, spec.tls_cert_path or "")
    key = annotations.get(ANNOTATION_TLS_KEY_PATH, spec.tls_key_path or "")
    policy = annotations.get(ANNOTATION_TLS_SECURITY_POLICY, spec.tls_security_policy or "")
    protocol = annotations.get(ANNOTATION_PROTOCOL_VERSION, spec.protocol_version or "")
    if protocol not in ("", "HTTP1", "HTTP2", "GRPC") or (
            ANNOTATION_PROTOCOL_VERSION in annotations and not protocol):
        raise InvalidAgentAnnotation(
            f"invalid protocol version: {protocol} (must be HTTP1, HTTP2, or GRPC)")
    rust_log = annotations.get(ANNOTATION_RUST_LOG, spec.rust_log or "")
    if rust_log not in ("", "debug", "info", "error") or (
            ANNOTATION_RUST_LOG in annotations and not rust_log):
        raise InvalidAgentAnnotation(
            f"invalid rust log level: {rust_log} (must be debug, info, or error)")

    resources: dict[str, Any] | None = (
        spec.resources.model_dump(exclude_none=True) if spec.resources is not None else None)
    overrides = ((ANNOTATION_CPU_REQUEST, "requests", "cpu"),
                 (ANNOTATION_CPU_LIMIT, "limits", "cpu"),
                 (ANNOTATION_MEMORY_REQUEST, "requests", "memory"),
                 (ANNOTATION_MEMORY_LIMIT, "limits", "memory"))
    for annotation, kind, name in overrides:
        quantity = annotations.get(annotation)
        if quantity is not None and _QUANTITY.fullmatch(quantity):
            resources = resources if resources is not None else {}
            resources.setdefault(kind, {})[name] = quantity

    env = [{"name": "TARGET_CONTROL_DATA_ADDRESS", "value": data},
           {"name": "TARGET_CONTROL_CONTROL_ADDRESS", "value": control},
           {"name": "TARGET_CONTROL_DESTINATION_ADDRESS", "value": destination},
           {"name": "TARGET_CONTROL_MAX_CONCURRENCY", "value": str(concurrency)}]
    for name, value in (("TARGET_CONTROL_TLS_CERT_PATH", cert),
                        ("TARGET_CONTROL_TLS_KEY_PATH", key),
                        ("TARGET_CONTROL_TLS_SECURITY_POLICY", policy),
                        ("TARGET_CONTROL_PROTOCOL_VERSION", protocol),
                        ("RUST_LOG", rust_log)):
        if value:
            env.append({"name": name, "value": value})
    container: dict[str, Any] = {
        "name": SIDECAR_CONTAINER_NAME, "image": image, "env": env,
        "ports": [{"name": "data", "containerPort": _port_of(data), "protocol": "TCP"},
                  {"name": "control", "containerPort": _port_of(control), "protocol": "TCP"}]}
    if resources:
        container["resources"] = resources

    new = copy.deepcopy(dict(pod))
    spec_ = new.setdefault("spec", {})
    spec_["containers"] = [*(spec_.get("containers") or []), container]
    meta = new.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), INJECTED_ANNOTATION: "true"}
    return new


__all__ = ["InvalidAgentAnnotation", "has_agent", "injection_enabled", "valid_address",
           "with_agent"]
