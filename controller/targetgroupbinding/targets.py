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
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from controller.apis import LabelSelector
from controller.apis.targetgroupbinding import InvalidSpec
from controller.targetgroupbinding.sliceendpoints import endpoints_of
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


# Named tuples, not dataclasses: a Service has thousands of endpoints, and tuples hash and
# compare in C and build faster (a frozen dataclass's __init__ and __hash__ run Python code).
class Target(NamedTuple):
    id: str
    port: int

    @property
    def identifier(self) -> str:
        """`id:port`, the form upstream's multi-cluster ConfigMap stores."""
        return f"{self.id}:{self.port}"


class Endpoint(NamedTuple):
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


def address_family(ip_address_type: str) -> str:
    """The EndpointSlice `addressType` a binding's `ipAddressType` reads."""
    return "IPv6" if ip_address_type == "ipv6" else "IPv4"


def slice_ip_endpoints(slice_: Obj, *, port_name: str, family: str,
                       previous: Mapping[Target, Endpoint] | None = None
                       ) -> dict[Target, Endpoint]:
    """The ip endpoints of one EndpointSlice, by target: its ready Pod endpoints at its port
    named `port_name` (any port when ""), if the slice is of address `family`. `previous`:
    an earlier version's result, whose equal endpoints are reused rather than built again."""
    found: dict[Target, Endpoint] = {}
    if slice_.get("addressType", "IPv4") != family:
        return found
    endpoints = endpoints_of(slice_)
    for port in as_list(slice_.get("ports")):
        if not isinstance(port, dict):
            continue
        if port_name and (port.get("name") or "") != port_name:
            continue
        number = port.get("port")
        if not isinstance(number, int) or isinstance(number, bool):
            continue
        for endpoint in endpoints.serving:  # ready and not terminating
            address = endpoint.address
            checkpoint_id = f"{address}:{number}:{endpoint.uid}"
            # A plain tuple finds a Target: equal, and hashed alike.
            old = previous.get((address, number)) if previous else None  # type: ignore[call-overload]
            if old is not None and old.checkpoint_id == checkpoint_id:
                found[old.target] = old
            else:
                target = Target(address, number)
                found[target] = Endpoint(target, checkpoint_id)
    return found


def ip_endpoints(service_port: Obj, slices: Iterable[Obj], *,
                 ip_address_type: str = "ipv4") -> list[Endpoint]:
    """Every slice's ip endpoints; a target in two slices counts once (the later slice's)."""
    family = address_family(ip_address_type)
    port_name = service_port.get("name") or ""
    found: dict[Target, Endpoint] = {}
    for slice_ in slices:
        found.update(slice_ip_endpoints(slice_, port_name=port_name, family=family))
    return sorted(found.values())


def instance_id(node: Obj) -> str | None:
    """`aws:///us-west-2a/i-0abc` → `i-0abc`; None when the node is not an EC2 instance."""
    provider_id = as_str(dig(node, "spec", "providerID")) or ""
    last = provider_id.rsplit("/", 1)[-1]
    return last if last.startswith("i-") and "/" not in last and len(last) > 2 else None


def node_fit_for_traffic(node: Obj, *, ready: str = "True") -> bool:
    """Whether `node` may carry traffic, its Ready condition's status being `ready`."""
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
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == ready
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
                       selector: LabelSelector | None, service_key: str,
                       fail_open: bool = True) -> list[Endpoint]:
    """The fit nodes at the Service's nodePort: those whose Ready is True, or, with
    `fail_open` (upstream's EndpointsFailOpen gate) and none of them, those whose Ready is
    Unknown (a control plane that lost touch with every node must not empty the target
    group)."""
    svc_type = dig(service, "spec", "type")
    if svc_type not in ("NodePort", "LoadBalancer"):
        raise InvalidSpec(f"service {service_key} must be of type NodePort or LoadBalancer "
                          f"for instance targets, not {svc_type or 'ClusterIP'}")
    node_port = service_port.get("nodePort")
    if not isinstance(node_port, int) or isinstance(node_port, bool):
        raise InvalidSpec(f"service {service_key} port {service_port.get('port')} "
                          "has no nodePort yet")
    candidates = [node for node in nodes
                  if (selector is None or selector.matches(labels_of(node)))
                  and instance_id(node) is not None]
    chosen = [node for node in candidates if node_fit_for_traffic(node)]
    if fail_open and not chosen:
        chosen = [node for node in candidates if node_fit_for_traffic(node, ready="Unknown")]
    found: list[Endpoint] = []
    for node in chosen:
        target = Target(str(instance_id(node)), node_port)
        found.append(Endpoint(target, f"{target.identifier}:{_creation_millis(node)}"))
    return sorted(set(found))
