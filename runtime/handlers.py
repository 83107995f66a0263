"""Event handlers: map informer notifications to (request, priority) and enqueue. They never do
I/O, so an informer's delivery loop is never held up by a reconciler.

Priorities follow controller-runtime's handlers: an add from the informer's initial list and an
update whose resourceVersion did not change (a resync, or a relist that found nothing new) are
LOW; everything else is NORMAL. A controller may pass its own `priority` function (checkpoints
plug in there): it sees the event and the default and returns the priority to use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from runtime.workqueue import LOW, NORMAL

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What a reconciler is asked to converge. For namespaced objects `namespace/name`; for
    cluster-scoped objects (and keys that are not objects, e.g. an Ingress group) namespace is
    ""."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: Obj) -> Request:
        meta = obj.get("metadata") or {}
        return cls(str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def __str__(self) -> str:
        return self.key


class EventKind(Enum):
    ADD = "add"
    INITIAL_ADD = "initial-add"
    UPDATE = "update"
    RESYNC = "resync"  # update with an unchanged resourceVersion
    DELETE = "delete"


class Enqueuer(Protocol):
    """The part of a controller a handler needs."""

    def enqueue(self, request: Request, *, priority: int = NORMAL) -> None: ...


PriorityFn = Callable[[Obj, EventKind, int], int]
"""(object, event kind, default priority) → priority to use."""

MapFn = Callable[[Obj], Iterable[Request]]


def unwrap_tombstone(obj: Any) -> Obj:
    """A delete missed by the watch and found at relist arrives as a tombstone holding the last
    known state; handlers want that state."""
    inner = getattr(obj, "obj", None)
    if isinstance(inner, dict):
        return inner
    if isinstance(obj, dict):
        return obj
    raise TypeError(f"unexpected delete notification {type(obj).__name__}")


def _resource_version(obj: Obj) -> str | None:
    meta = obj.get("metadata") or {}
    rv = meta.get("resourceVersion")
    return str(rv) if rv is not None else None


def default_priority(kind: EventKind) -> int:
    return LOW if kind in (EventKind.INITIAL_ADD, EventKind.RESYNC) else NORMAL


class _Handler:
    def __init__(self, target: Enqueuer, priority: PriorityFn | None) -> None:
        self._target = target
        self._priority = priority

    def _requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def _emit(self, obj: Obj, kind: EventKind) -> None:
        prio = default_priority(kind)
        if self._priority is not None:
            prio = self._priority(obj, kind, prio)
        for request in self._requests(obj):
            self._target.enqueue(request, priority=prio)

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        self._emit(obj, EventKind.INITIAL_ADD if is_initial_list else EventKind.ADD)

    def on_update(self, old: Obj, new: Obj) -> None:
        unchanged = _resource_version(old) == _resource_version(new)
        self._emit(new, EventKind.RESYNC if unchanged else EventKind.UPDATE)

    def on_delete(self, obj: Any) -> None:
        self._emit(unwrap_tombstone(obj), EventKind.DELETE)


class EnqueueForObject(_Handler):
    """Enqueue the object's own `namespace/name` (the primary resource of a controller)."""

    def __init__(self, target: Enqueuer, *, priority: PriorityFn | None = None) -> None:
        super().__init__(target, priority)

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return (Request.for_object(obj),)


class EnqueueFromMap(_Handler):
    """Enqueue whatever `map_fn` says the object affects (e.g. an EndpointSlice → the
    TargetGroupBindings of its Service, found through an indexer)."""

    def __init__(self, target: Enqueuer, map_fn: MapFn, *,
                 priority: PriorityFn | None = None) -> None:
        super().__init__(target, priority)
        self._map = map_fn

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return self._map(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        # As controller-runtime: both states are mapped, so a change that moves the object from
        # one owner to another (a relabelled EndpointSlice) wakes both.
        unchanged = _resource_version(old) == _resource_version(new)
        kind = EventKind.RESYNC if unchanged else EventKind.UPDATE
        prio = default_priority(kind)
        if self._priority is not None:
            prio = self._priority(new, kind, prio)
        requests = dict.fromkeys(self._map(new))
        if not unchanged:
            requests.update(dict.fromkeys(self._map(old)))
        for request in requests:
            self._target.enqueue(request, priority=prio)
