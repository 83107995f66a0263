"""What the TargetGroupBinding controller watches, and what each event means to it: the indexes
its mapping functions read, the mapping functions themselves (cache reads only, never raising on
any JSON), and the views that decide which updates are changes at all — the controller's own
writes (finalizer, checkpoint annotation, status) are outside every view, so they never wake the
binding they were made to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from controller.targetgroupbinding.pods import GATE_INDEX
from controller.targetgroupbinding.sliceendpoints import endpoints_of
from runtime.objects import Obj, is_deleting, key_of, labels_of, name_of, namespace_of
from runtime.predicates import Event, EventKind
from runtime.reconcile import Request
from runtime.store import Store

SERVICE_INDEX: Final = "service"  # TGB → "namespace/service name"
TARGET_TYPE_INDEX: Final = "targetType"  # TGB → spec.targetType ("" when inferred)
SLICE_SERVICE_INDEX: Final = "service"  # EndpointSlice → "namespace/service name"
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def binding_service_index(obj: Obj) -> list[str]:
    ref = _spec(obj).get("serviceRef")
    name = ref.get("name") if isinstance(ref, dict) else None
    namespace = namespace_of(obj)
    return [f"{namespace}/{name}"] if isinstance(name, str) and name and namespace else []


def binding_target_type_index(obj: Obj) -> list[str]:
    value = _spec(obj).get("targetType")
    return [value if isinstance(value, str) else ""]


def slice_service_index(obj: Obj) -> list[str]:
    # Read directly rather than through labels_of (a copy of every label): this runs several
    # times for each event of every EndpointSlice.
    service = _service_label(obj)
    namespace = namespace_of(obj)
    return [f"{namespace}/{service}"] if type(service) is str and service and namespace else []


# ---- views --------------------------------------------------------------------------------

def binding_view(obj: Obj) -> Any:
    return (_spec(obj), is_deleting(obj))


def service_view(obj: Obj) -> Any:
    """A Service matters to its bindings by its ports and type (nodePorts, target ports)."""
    return _spec(obj)


def slice_view(obj: Obj) -> Any:
    return (endpoints_of(obj), obj.get("ports"), obj.get("addressType"),
            labels_of(obj).get(SERVICE_NAME_LABEL))


def _service_label(obj: Obj) -> object:
    """The service-name label as it is (only compared: no need to check it is a string)."""
    meta = obj.get("metadata")
    labels = meta.get("labels") if type(meta) is dict else None
    return labels.get(SERVICE_NAME_LABEL) if type(labels) is dict else None


class SliceChanged:
    """The slice predicate: an update passes when it changed what a binding of its Service
    reads. That is the slice's ports, address type and Service, and the endpoints that serve
    (ready, not terminating: the targets). Endpoints that do not serve (a pod starting, one
    crash-looping, most of a rollout's events) are read only for pods gated on target health,
    so a change among them passes only when a binding of the Service has such pods in the pod
    cache. A gated pod that the pod cache does not hold yet wakes its binding itself when it
    arrives (its gate names the binding), and finds the slice in the cache then."""

    def __init__(self, bindings: Store, pods: Store | None) -> None:
        self._bindings = bindings
        self._pods = pods

    def __call__(self, event: Event) -> bool:
        old, new = event.old, event.obj
        if event.kind is not EventKind.UPDATE or old is None:
            return True
        if (old.get("ports") != new.get("ports")
                or old.get("addressType") != new.get("addressType")
                or _service_label(old) != _service_label(new)):
            return True
        before, after = endpoints_of(old), endpoints_of(new)
        if self._gated(new):
            return before != after
        return before.serving != after.serving

    def _gated(self, slice_: Obj) -> bool:
        if self._pods is None:
            return False
        return any(self._pods.indexed(GATE_INDEX, key_of(binding))
                   for service in slice_service_index(slice_)
                   for binding in self._bindings.by_index(SERVICE_INDEX, service))


def node_view(obj: Obj) -> Any:
    """What decides whether a node carries traffic, not its heartbeats."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    ready = [(c.get("type"), c.get("status")) for c in conditions or []
             if isinstance(c, dict) and c.get("type") == "Ready"]
    return (labels_of(obj), _spec(obj), ready, is_deleting(obj))


# ---- mapping ------------------------------------------------------------------------------

def bindings_of_service(bindings: Store) -> Callable[[Obj], list[Request]]:
    def map_fn(obj: Obj) -> list[Request]:
        key = f"{namespace_of(obj)}/{name_of(obj)}"
        return [Request.for_object(b) for b in bindings.by_index(SERVICE_INDEX, key)]
    return map_fn


def bindings_of_slice(bindings: Store) -> Callable[[Obj], list[Request]]:
    def map_fn(obj: Obj) -> list[Request]:
        return [Request.for_object(b) for key in slice_service_index(obj)
                for b in bindings.by_index(SERVICE_INDEX, key)]
    return map_fn


def bindings_of_node(bindings: Store) -> Callable[[Obj], list[Request]]:
    """Bindings whose type is inferred may be instance bindings too; they are few, and a
    checkpoint match makes their reconcile free."""
    def map_fn(obj: Obj) -> list[Request]:
        del obj  # every node concerns every instance binding
        return [Request.for_object(b) for value in ("instance", "")
                for b in bindings.by_index(TARGET_TYPE_INDEX, value)]
    return map_fn


__all__ = [
    "SERVICE_INDEX",
    "SLICE_SERVICE_INDEX",
    "TARGET_TYPE_INDEX",
    "SliceChanged",
    "binding_service_index",
    "binding_target_type_index",
    "binding_view",
    "bindings_of_node",
    "bindings_of_service",
    "bindings_of_slice",
    "node_view",
    "service_view",
    "slice_service_index",
    "slice_view",
]
