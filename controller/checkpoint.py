"""Checkpoints for Services and Ingress groups: a digest of the model last deployed, stored as an
annotation on the object(s), so that a restarted controller can tell unchanged objects from
changed ones without asking AWS.

Value: `v<builder version>:<checkpoint_digest(stack)>`, where the digest covers the pure
stage's canonical JSON with secret material (OIDC client credentials) folded in, and nothing
read from AWS; so it is stable across restarts and computable from the informer caches.
Bumping a builder's version invalidates every stored checkpoint of its kind at once: the next
start verifies everything at normal priority.

The priority decision starts in the event handler (no I/O there): an initial-list add or a
resync whose computed checkpoint equals the stored one goes to the paced LOW lane; anything
else is NORMAL. What needs the model (an object with a stored checkpoint) is decided off the
event path (`runtime.prioritydecisions.Deferred`); an object without one is NORMAL at once. "" is
never a valid checkpoint, so it doubles as the reset marker written before a changed model is
deployed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from controller.apis import (
    CHECKPOINT_ANNOTATION,
    CHECKPOINT_ANNOTATIONS,
    CHECKPOINT_TIMESTAMP_ANNOTATION,
)
from controller.model import Stack, checkpoint_digest
from runtime.handlers import Deferred, PriorityFn
from runtime.objects import Obj, is_deleting
from runtime.predicates import Event, EventKind
from runtime.reconcile import LOW, NORMAL, Request

log = structlog.get_logger("checkpoint")


def compute(stack: Stack, *, version: int) -> str:
    """The checkpoint of a desired stack built by a builder of `version`."""
    if version < 1:
        raise ValueError(f"builder version must be >= 1, got {version}")
    return f"v{version}:{checkpoint_digest(stack)}"


def stored(obj: Mapping[str, Any]) -> str:
    """The object's stored checkpoint, "" when it has none."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CHECKPOINT_ANNOTATION)
    return value if isinstance(value, str) else ""


def group_stored(members: Iterable[Mapping[str, Any]]) -> str:
    """An Ingress group's stored checkpoint: the one value its members carry. Members without
    the annotation are ignored; conflicting values (or none at all) give "" (as upstream's
    prototype): a new member changes the model anyway, so it can never cause a false match."""
    values = {value for member in members if (value := stored(member))}
    return values.pop() if len(values) == 1 else ""


def matches(computed: str | None, current: str) -> bool:
    return bool(computed) and computed == current


def patch(value: str, *, timestamp: float) -> Obj:
    """Merge patch writing the checkpoint and its Unix-seconds timestamp."""
    return {"metadata": {"annotations": {
        CHECKPOINT_ANNOTATION: value,
        CHECKPOINT_TIMESTAMP_ANNOTATION: str(int(timestamp)),
    }}}


def removal_patch() -> Obj:
    """Merge patch dropping both annotations (an object we no longer manage)."""
    return {"metadata": {"annotations": dict.fromkeys(sorted(CHECKPOINT_ANNOTATIONS))}}


def without_checkpoint(annotations: Mapping[str, Any] | None) -> dict[str, Any]:
    """Annotations minus the checkpoint ones, for comparing objects we and another controller
    both write (a managed TargetGroupBinding carries the TGB controller's checkpoint)."""
    return {k: v for k, v in (annotations or {}).items() if k not in CHECKPOINT_ANNOTATIONS}


def priority_function(compute_from_cache: Callable[[Obj], str | Iterable[str] | None], *,
                      enabled: bool, current: Callable[[Obj], str] = stored) -> PriorityFn:
    """The one priority decision of every controller, as a handler priority function
    (runtime.handlers.PriorityFn).

    It prices the object of the event (the controller's own kind: its request is the
    object's). `compute_from_cache(obj)` runs the pure stage from the informer caches and
    returns the checkpoint (or the checkpoints it could be, when one input is known only from
    AWS), or None when there is nothing to compare (bad input, not ours); it must not do I/O.
    `current(obj)` reads the stored checkpoint. Initial-list adds and resyncs that match go
    LOW; other initial-list adds and resyncs go NORMAL, as does any object being deleted; other
    events keep their default. The comparison, which builds the model, is deferred (made off
    the event path); an object with nothing stored is NORMAL at once. Disabled: all NORMAL, so
    a restart reconciles everything at full speed, as upstream does."""

    def decide(obj: Obj, have: str) -> int:
        try:
            value = compute_from_cache(obj)
        except ValueError:
            return NORMAL  # bad input: its reconcile reports it, at once and without AWS calls
        except Exception:
            # Decided where nothing may raise (an informer's delivery, the decisions' task).
            log.exception("checkpoint computation failed", object=_name(obj))
            return NORMAL
        candidates = (value,) if value is None or isinstance(value, str) else tuple(value)
        return LOW if any(matches(c, have) for c in candidates) else NORMAL

    def priority(request: Request, event: Event, default: int) -> int | Deferred:
        if not enabled:
            return NORMAL
        obj, kind = event.obj, event.kind
        if kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            return default
        if is_deleting(obj):
            return NORMAL  # a deletion is always a real change
        try:
            have = current(obj)
        except Exception:
            log.exception("checkpoint read failed", object=_name(obj))
            return NORMAL
        if not have:
            return NORMAL  # nothing deployed to compare with: no model to build
        return Deferred(lambda: decide(obj, have))

    return priority


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


__all__ = [
    "compute",
    "group_stored",
    "matches",
    "patch",
    "priority_function",
    "removal_patch",
    "stored",
    "without_checkpoint",
]
