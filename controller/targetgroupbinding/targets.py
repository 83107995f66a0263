"""Which targets a TargetGroupBinding wants, computed from the informer caches only.

ip targets come from the Service's EndpointSlices: ready, not terminating endpoints backed by a
Pod, at the endpoint port named like the Service port (EndpointSlice ports carry the Service
port's name, which is how named target ports are resolved). instance targets are the nodes fit to
proxy traffic, at the Service port's nodePort.

Each endpoint also has a *checkpoint identifier* that changes when the thing behind an address
changes. Upstream appends the pod's or node's creation time; for pods aiolbc appends the pod UID
from the EndpointSlice's targetRef instead, which distinguishes a new pod reusing an IP just as
well and needs no pod cache (upstream's pod cache is its largest memory cost).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterable
from dataclasses import dataclass

from controller.apis import LabelSelector
from controller.apis.targetgroupbinding import InvalidSpec
from runtime.objects import Obj

SERVICE_NAME_LABEL = "kubernetes.io/service-name"

# Nodes that must never carry load-balancer traffic (upstream, after the Kubernetes service
# controller): control-plane and explicitly excluded nodes, and Fargate.
_EXCLUDE_LABELS = ("node-role.kubernetes.io/master",
                   "node.kubernetes.io/exclude-from-external-load-balancers",
                   "alpha.service-controller.kubernetes.io/exclude-balancer")
# Taints that mean a node is on its way out; registering it would only drain it again.
_REMOVAL_TAINTS = ("ToBeDeletedByClusterAutoscaler",)


class BackendNotFound(InvalidSpec):
    """The Service (or its port) the binding points at does not exist."""


@dataclass(frozen=True, order=True, slots=True)
class Target:
    id: str
    port: int

    @property
    def identifier(self) -> str:
        """`id:port`, the form upstream's multi-cluster ConfigMap stores."""
        return f"{self.id}:{self.port}"


@dataclass(frozen=True, order=True, slots=True)
class Endpoint:
    target: Target
    checkpoint_id: str


def find_service_port(service: Obj | None, port: int | str, *, service_key: str) -> Obj:
    if service is None:
        raise BackendNotFound(f"service {service_key} not found")
    for candidate in (service.get("spec") or {}).get("ports") or []:
        if isinstance(port, int) and candidate.get("port") == port:
            return dict(candidate)
        if isinstance(port, str) and candidate.get("name") == port:
            return dict(candidate)
    raise BackendNotFound(f"unable to find port {port} on service {service_key}")


def _ready(endpoint: Obj) -> bool:
    conditions = endpoint.get("conditions") or {}
    return conditions.get("ready") is True and conditions.get("terminating") is not True


def ip_endpoints(service_port: Obj, slices: Iterable[Obj], *,
                 ip_address_type: str = "ipv4") -> list[Endpoint]:
    family = "IPv6" if ip_address_type == "ipv6" else "IPv4"
    wanted_name = service_port.get("name") or ""
    found: dict[Target, Endpoint] = {}
    for slice_ in slices:
        if slice_.get("addressType", "IPv4") != family:
            continue
        for port in slice_.get("ports") or []:
            if wanted_name and (port.get("name") or "") != wanted_name:
                continue
            number = port.get("port")
            if not isinstance(number, int):
                continue
            for endpoint in slice_.get("endpoints") or []:
                ref = endpoint.get("targetRef") or {}
                addresses = endpoint.get("addresses") or []
                if ref.get("kind") != "Pod" or not addresses or not _ready(endpoint):
                    continue
                target = Target(str(addresses[0]), number)
                found[target] = Endpoint(target, f"{target.identifier}:{ref.get('uid', '')}")
    return sorted(found.values())


def instance_id(node: Obj) -> str | None:
    """`aws:///us-west-2a/i-0abc` → `i-0abc`; None when the node is not an EC2 instance."""
    provider_id = str((node.get("spec") or {}).get("providerID") or "")
    last = provider_id.rsplit("/", 1)[-1]
    return last if last.startswith("i-") and "/" not in last and len(last) > 2 else None


def node_fit_for_traffic(node: Obj) -> bool:
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    spec = node.get("spec") or {}
    if meta.get("deletionTimestamp") or spec.get("unschedulable"):
        return False
    if labels.get("eks.amazonaws.com/compute-type") == "fargate":
        return False
    if any(label in labels for label in _EXCLUDE_LABELS):
        return False
    if any(t.get("key") in _REMOVAL_TAINTS for t in spec.get("taints") or []):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def _creation_millis(obj: Obj) -> int:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(stamp, str):
        return 0
    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) * 1000
    except ValueError:
        return 0


def instance_endpoints(service: Obj, service_port: Obj, nodes: Iterable[Obj], *,
                       selector: LabelSelector | None, service_key: str) -> list[Endpoint]:
    svc_type = (service.get("spec") or {}).get("type")
    if svc_type not in ("NodePort", "LoadBalancer"):
        raise InvalidSpec(f"service {service_key} must be of type NodePort or LoadBalancer "
                          f"for instance targets, not {svc_type or 'ClusterIP'}")
    node_port = service_port.get("nodePort")
    if not isinstance(node_port, int):
        raise InvalidSpec(f"service {service_key} port {service_port.get('port')} "
                          "has no nodePort yet")
    found: list[Endpoint] = []
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if selector is not None and not selector.matches(labels):
            continue
        instance = instance_id(node)
        if instance is None or not node_fit_for_traffic(node):
            continue
        target = Target(instance, node_port)
        found.append(Endpoint(target, f"{target.identifier}:{_creation_millis(node)}"))
    return sorted(set(found))
