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
from runtime.objects import Obj, as_dict, as_list, as_str, dig, is_deleting, labels_of

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
    for candidate in as_list(dig(service, "spec", "ports")):
        if not isinstance(candidate, dict):
            continue
        if isinstance(port, int) and candidate.get("port") == port:
            return dict(candidate)
        if isinstance(port, str) and candidate.get("name") == port:
            return dict(candidate)
    raise BackendNotFound(f"unable to find port {port} on service {service_key}")


def _ready(endpoint: Obj) -> bool:
    conditions = endpoint.get("conditions")
    return (isinstance(conditions, dict) and conditions.get("ready") is True
            and conditions.get("terminating") is not True)


def ip_endpoints(service_port: Obj, slices: Iterable[Obj], *,
                 ip_address_type: str = "ipv4") -> list[Endpoint]:
    family = "IPv6" if ip_address_type == "ipv6" else "IPv4"
    wanted_name = service_port.get("name") or ""
    found: dict[Target, Endpoint] = {}
    for slice_ in slices:
        if slice_.get("addressType", "IPv4") != family:
            continue
        for port in as_list(slice_.get("ports")):
            if not isinstance(port, dict):
                continue
            if wanted_name and (port.get("name") or "") != wanted_name:
                continue
            number = port.get("port")
            if not isinstance(number, int) or isinstance(number, bool):
                continue
            for endpoint in as_list(slice_.get("endpoints")):
                if not isinstance(endpoint, dict) or not _ready(endpoint):
                    continue
                ref = endpoint.get("targetRef")
                addresses = endpoint.get("addresses")
                if (not isinstance(ref, dict) or ref.get("kind") != "Pod"
                        or not isinstance(addresses, list) or not addresses
                        or not isinstance(addresses[0], str)):
                    continue
                target = Target(addresses[0], number)
                found[target] = Endpoint(target, f"{target.identifier}:{ref.get('uid', '')}")
    return sorted(found.values())


def instance_id(node: Obj) -> str | None:
    """`aws:///us-west-2a/i-0abc` → `i-0abc`; None when the node is not an EC2 instance."""
    provider_id = as_str(dig(node, "spec", "providerID")) or ""
    last = provider_id.rsplit("/", 1)[-1]
    return last if last.startswith("i-") and "/" not in last and len(last) > 2 else None


def node_fit_for_traffic(node: Obj) -> bool:
    labels = labels_of(node)
    spec = as_dict(node.get("spec"))
    if is_deleting(node) or spec.get("unschedulable"):
        return False
    if labels.get("eks.amazonaws.com/compute-type") == "fargate":
        return False
    if any(label in labels for label in _EXCLUDE_LABELS):
        return False
    if any(isinstance(t, dict) and t.get("key") in _REMOVAL_TAINTS
           for t in as_list(spec.get("taints"))):
        return False
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in as_list(dig(node, "status", "conditions")))


def _creation_millis(obj: Obj) -> int:
    stamp = dig(obj, "metadata", "creationTimestamp")
    if not isinstance(stamp, str):
        return 0
    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) * 1000
    except ValueError:
        return 0


def instance_endpoints(service: Obj, service_port: Obj, nodes: Iterable[Obj], *,
                       selector: LabelSelector | None, service_key: str) -> list[Endpoint]:
    svc_type = dig(service, "spec", "type")
    if svc_type not in ("NodePort", "LoadBalancer"):
        raise InvalidSpec(f"service {service_key} must be of type NodePort or LoadBalancer "
                          f"for instance targets, not {svc_type or 'ClusterIP'}")
    node_port = service_port.get("nodePort")
    if not isinstance(node_port, int) or isinstance(node_port, bool):
        raise InvalidSpec(f"service {service_key} port {service_port.get('port')} "
                          "has no nodePort yet")
    found: list[Endpoint] = []
    for node in nodes:
        if selector is not None and not selector.matches(labels_of(node)):
            continue
        instance = instance_id(node)
        if instance is None or not node_fit_for_traffic(node):
            continue
        target = Target(instance, node_port)
        found.append(Endpoint(target, f"{target.identifier}:{_creation_millis(node)}"))
    return sorted(set(found))
