"""Event filters, declared rather than hand-coded in each handler (controller-runtime's
`pkg/predicate`). A predicate sees one informer event and says whether it may enqueue anything;
the handlers (`EnqueueForObject`, `EnqueueFromMap`) take `predicates=` and deliver an event only
if every one of them passes, as controller-runtime's `WithEventFilter` does.

Which events each predicate judges:
- The change predicates (`GenerationChanged`, `AnnotationChanged`, `LabelChanged`,
  `ViewChanged`) judge updates only: adds (initial-list ones included), deletes and resyncs
  pass. A resync is the informer replaying its cache on purpose, with nothing changed, so that
  drift is repaired in the paced LOW lane; filtering it on "did something change" would end
  those verifications.
- `ResourceVersionChanged` drops resyncs, and nothing else: a resync is exactly an update whose
  resourceVersion did not change (controller-runtime documents the same for its
  ResourceVersionChangedPredicate). Add it to turn periodic verification off for a watch.
- `DeletionStarted` passes deletes, updates that set `deletionTimestamp`, and adds of objects
  already terminating (their deletion started before this process looked).

Predicates run in the informer's delivery loop: they must be quick and must not do I/O. One that
raises is logged and the event let through: a reconcile too many costs less than a change missed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from runtime.objects import (
    Obj,
    annotations_of,
    generation_of,
    is_deleting,
    labels_of,
)

__all__ = [
    "And",
    "AnnotationChanged",
    "DeletionStarted",
    "Event",
    "EventKind",
    "GenerationChanged",
    "LabelChanged",
    "Not",
    "Or",
    "Predicate",
    "ResourceVersionChanged",
    "ViewChanged",
]


class EventKind(Enum):
    ADD = "add"
    INITIAL_ADD = "initial-add"
    UPDATE = "update"
    RESYNC = "resync"  # update with an unchanged resourceVersion
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Event:
    """One informer notification: `obj` is the new state (the last known one for a delete);
    `old` is set for updates and resyncs only."""

    kind: EventKind
    obj: Obj
    old: Obj | None = None


Predicate = Callable[[Event], bool]
"""Any callable taking an Event; the classes below are the common ones."""


def _is_change(event: Event) -> bool:
    return event.kind is EventKind.UPDATE and event.old is not None


class ResourceVersionChanged:
    """Drops resyncs (updates whose resourceVersion did not change); everything else passes."""

    def __call__(self, event: Event) -> bool:
        return event.kind is not EventKind.RESYNC


class GenerationChanged:
    """Updates pass only when `metadata.generation` changed (the spec did, for kinds with a
    status subresource): our own status writes never wake us."""

    def __call__(self, event: Event) -> bool:
        if not _is_change(event):
            return True
        assert event.old is not None
        return generation_of(event.old) != generation_of(event.obj)


class AnnotationChanged:
    """Updates pass only when an annotation changed; with `keys`, only one of those."""

    def __init__(self, keys: frozenset[str] | set[str] | list[str] | None = None) -> None:
        self._keys = frozenset(keys) if keys is not None else None

    def _view(self, obj: Obj) -> dict[str, str]:
        annotations = annotations_of(obj)
        if self._keys is None:
            return annotations
        return {k: v for k, v in annotations.items() if k in self._keys}

    def __call__(self, event: Event) -> bool:
        if not _is_change(event):
            return True
        assert event.old is not None
        return self._view(event.old) != self._view(event.obj)


class LabelChanged:
    """Updates pass only when the labels changed."""

    def __call__(self, event: Event) -> bool:
        if not _is_change(event):
            return True
        assert event.old is not None
        return labels_of(event.old) != labels_of(event.obj)


class ViewChanged:
    """Updates pass only when `view(old) != view(new)`: the view is what the reconciler reads
    (say spec and some annotations), so writes to anything else enqueue nothing."""

    def __init__(self, view: Callable[[Obj], Any]) -> None:
        self._view = view

    def __call__(self, event: Event) -> bool:
        if not _is_change(event):
            return True
        assert event.old is not None
        return bool(self._view(event.old) != self._view(event.obj))


class DeletionStarted:
    """Only deletions: deletes, updates that set `deletionTimestamp`, adds of objects already
    terminating."""

    def __call__(self, event: Event) -> bool:
        kind = event.kind
        if kind is EventKind.DELETE:
            return True
        if kind in (EventKind.ADD, EventKind.INITIAL_ADD):
            return is_deleting(event.obj)
        if kind is EventKind.UPDATE and event.old is not None:
            return is_deleting(event.obj) and not is_deleting(event.old)
        return False


class And:
    def __init__(self, *predicates: Predicate) -> None:
        self._predicates = predicates

    def __call__(self, event: Event) -> bool:
        return all(p(event) for p in self._predicates)


class Or:
    def __init__(self, *predicates: Predicate) -> None:
        self._predicates = predicates

    def __call__(self, event: Event) -> bool:
        return any(p(event) for p in self._predicates)


class Not:
    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def __call__(self, event: Event) -> bool:
        return not self._predicate(event)
