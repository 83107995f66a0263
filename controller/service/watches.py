"""What the Service controller watches: Services (only those it builds for, or still holds a
finalizer on) and their managed TargetGroupBindings. The views say which updates are changes;
the controller's own writes (finalizer, checkpoint, status) and the TargetGroupBinding
controller's (its checkpoint and status) are outside them, so they never wake a Service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from controller.apis import (
    SERVICE_FINALIZER,
    SERVICE_STACK_NAME_LABEL,
    SERVICE_STACK_NAMESPACE_LABEL,
)
from controller.errors import InvalidInput
from controller.service.actions import parse_listener_actions
from controller.service.annotations import qualifies, reviewed_annotations
from runtime.objects import Obj, has_finalizer, is_deleting, labels_of, meta
from runtime.predicates import Event, EventKind, Predicate
from runtime.reconcile import Request
from runtime.store import Store

SERVICE_STACK_INDEX: Final = "service-stack"  # managed TGB → "namespace/service name"
# Service → "namespace/name" of each backend Service its weighted actions name (serviceName).
BACKEND_SERVICE_INDEX: Final = "service-backends"


def backend_service_index(obj: Obj) -> list[str]:
    """Never raises: an annotation is user data (one that does not parse names nothing)."""
    try:
        actions = parse_listener_actions(obj)
    except (InvalidInput, ValueError):
        return []
    namespace = meta(obj).get("namespace")
    return sorted({f"{namespace}/{t.service_name}" for a in actions.values()
                   for t in a.forward.target_groups if t.service_name}) if namespace else []


def services_for_backend(store: Store) -> Callable[[Obj], list[Request]]:
    """A backend Service's event wakes every Service whose weighted actions name it: its
    target group is built from the backend's ports and UID."""
    def map_fn(obj: Obj) -> list[Request]:
        key = f"{meta(obj).get('namespace', '')}/{meta(obj).get('name', '')}"
        return [Request(str(meta(s).get("namespace")), str(meta(s).get("name")))
                for s in store.by_index(BACKEND_SERVICE_INDEX, key)]
    return map_fn


def backend_view(obj: Obj) -> Any:
    """What a backend Service's target group is built from: its spec and identity."""
    return (obj.get("spec"), meta(obj).get("uid"), is_deleting(obj))


def service_stack_index(obj: Obj) -> list[str]:
    labels = labels_of(obj)
    name = labels.get(SERVICE_STACK_NAME_LABEL)
    namespace = labels.get(SERVICE_STACK_NAMESPACE_LABEL)
    return [f"{namespace}/{name}"] if name and namespace else []


def service_for_binding(obj: Obj) -> list[Request]:
    """A managed binding's event wakes its Service (e.g. one deleted by hand is recreated)."""
    return [Request(*key.split("/", 1)) for key in service_stack_index(obj)]


def services_we_build(load_balancer_class: str, *, load_balancer_only: bool = True,
                      by_annotation: bool = True, finalizer: str = SERVICE_FINALIZER
                      ) -> Predicate:
    """Events of Services we build for, or still hold a finalizer on (an update: in either
    state); the rest never need us, so they are not even queued (most Services of a cluster
    are not load balancers)."""
    def ours(obj: Obj) -> bool:
        return has_finalizer(obj, finalizer) or qualifies(
            obj, load_balancer_class=load_balancer_class, load_balancer_only=load_balancer_only,
            by_annotation=by_annotation)

    def predicate(event: Event) -> bool:
        return ours(event.obj) or (event.kind is EventKind.UPDATE and event.old is not None
                                   and ours(event.old))
    return predicate


def service_view(obj: Obj) -> Any:
    """What the model reads: the spec and our annotations (those reported too: a Warning is
    due when one changes); plus identity and deletion."""
    return (obj.get("spec"), reviewed_annotations(obj), meta(obj).get("uid"), is_deleting(obj))


def binding_view(obj: Obj) -> Any:
    """A managed binding matters to its Service by its spec, its labels and its deletion."""
    return (obj.get("spec"), labels_of(obj), is_deleting(obj))


__all__ = [
    "BACKEND_SERVICE_INDEX",
    "SERVICE_STACK_INDEX",
    "backend_service_index",
    "backend_view",
    "binding_view",
    "service_for_binding",
    "service_stack_index",
    "service_view",
    "services_for_backend",
    "services_we_build",
]
