"""What the informer caches keep of each object: what the controllers read, not more (the idea
of upstream's pod transform and of controller-runtime's per-type cache transforms).

Every controller asks for its informers through `informer(manager, resource)`, so that one
resource has one transform whoever asks first. What is dropped:
- everywhere: `metadata.managedFields` and kubectl's `last-applied-configuration` annotation,
  often the largest part of a small object and read by nothing here;
- Nodes: the status but for conditions and addresses (images, capacity, daemon endpoints and
  node info are most of a Node).

Trimming is only safe for objects never written back whole. Everything aiolbc writes to an
object it caches is a merge patch of fields it names (finalizers, its annotations, status),
with one exception: managed TargetGroupBindings are updated whole from their cached copy, so
their cache keeps everything but managedFields (`TRIMMED` leaves them out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from controller.apis import INGRESSCLASSPARAMS
from runtime.informer import SharedInformer, Transform
from runtime.manager import Manager
from runtime.objects import Obj
from runtime.resources import (
    INGRESSCLASSES,
    INGRESSES,
    NAMESPACES,
    NODES,
    SERVICES,
    Resource,
)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NODE_STATUS = ("conditions", "addresses")


def strip(obj: Obj) -> Obj:
    """Drop managedFields and the last-applied configuration, in place (the informer owns the
    object it decoded)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            del annotations[LAST_APPLIED]
    return obj


def trim_node(obj: Obj) -> Obj:
    """A Node as the target and networking code read it: labels, spec, metadata, and of the
    status only conditions (readiness) and addresses."""
    strip(obj)
    status = obj.get("status")
    if isinstance(status, dict):
        obj["status"] = {k: status[k] for k in _NODE_STATUS if k in status}
    return obj


TRIMMED: dict[Resource, Transform] = {
    SERVICES: strip,
    NODES: trim_node,
    INGRESSES: strip,
    INGRESSCLASSES: strip,
    INGRESSCLASSPARAMS: strip,
    NAMESPACES: strip,
}


def informer(manager: Manager, resource: Resource, *, transform: Transform | None = None,
             start_after: Sequence[SharedInformer] = (), **scope: Any) -> SharedInformer:
    """The manager's shared informer for `resource`, keeping what `TRIMMED` says (or what
    `transform` says, for a resource whose trimming depends on other caches)."""
    chosen: Callable[[Obj], Obj] | None = transform or TRIMMED.get(resource)
    return manager.informer(resource, transform=chosen, start_after=start_after, **scope)


__all__ = ["LAST_APPLIED", "TRIMMED", "informer", "strip", "trim_node"]
