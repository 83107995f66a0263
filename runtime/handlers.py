"""Event handlers: map informer notifications to (request, priority) and enqueue. They never do
I/O, so an informer's delivery loop is never held up by a reconciler.

Priorities follow controller-runtime's handlers: an add from the informer's initial list and an
update whose resourceVersion did not change (a resync, or a relist that found nothing new) are
LOW; everything else is NORMAL. A controller may pass its own `priority` function (checkpoints
plug in there): it sees the object, the event kind and the default, and returns the priority.
Deletion is always a real change: a delete, or any event about an object whose
`deletionTimestamp` is set, is never LOW, whatever the priority function says.

A priority function may also answer `Deferred(decide)` (runtime.decisions) for an initial-list
add or a resync it cannot judge cheaply: the controller then makes that decision off the event
path, giving way to real changes, and enqueues the request with its result.

`predicates=` filters events before anything is mapped (all must pass; runtime.predicates).

User functions meet hostile objects: a map function that raises skips that object for this
handler, a priority function that raises gives NORMAL, a predicate that raises lets the event
through; each logs one line per object per interval (runtime.failures). Other objects and other
handlers are not affected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from runtime.decisions import Deferred
from runtime.failures import FailureLog
from runtime.objects import Obj, is_deleting, key_of, resource_version_of
from runtime.predicates import Event, EventKind, Predicate
from runtime.reconcile import LOW, NORMAL, Request

__all__ = [
    "Deferred",
    "EnqueueForObject",
    "EnqueueFromMap",
    "Enqueuer",
    "MapFn",
    "PriorityFn",
    "default_priority",
    "unwrap_tombstone",
]


class Enqueuer(Protocol):
    """The part of a controller a handler needs. `replay`: the event is an initial-list add
    (a cached object replayed to a handler at start), which the controller may find adds
    nothing to what the replay already enqueued (runtime.controller)."""

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None: ...

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        """Enqueue `request` with the priority `decision()` gives, made later."""


PriorityFn = Callable[[Obj, EventKind, int], int | Deferred]
"""(object, event kind, default priority) → priority to use, or a decision to make later."""

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


def default_priority(kind: EventKind) -> int:
    return LOW if kind in (EventKind.INITIAL_ADD, EventKind.RESYNC) else NORMAL


def _deletion(obj: Obj, kind: EventKind) -> bool:
    return kind is EventKind.DELETE or is_deleting(obj)


class _Handler:
    def __init__(self, target: Enqueuer, priority: PriorityFn | None,
                 predicates: Sequence[Predicate], failures: FailureLog | None) -> None:
        self._target = target
        self._priority = priority
        self._predicates = tuple(predicates)
        self._failures = failures if failures is not None else FailureLog()

    def _requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def _passes(self, kind: EventKind, obj: Obj, old: Obj | None) -> bool:
        if not self._predicates:
            return True
        event = Event(kind, obj, old)
        for predicate in self._predicates:
            try:
                if not predicate(event):
                    return False
            except Exception as exc:  # fail open: a reconcile too many beats a change missed
                self._failures.failed("event predicate", key_of(obj), exc,
                                      predicate=getattr(predicate, "__name__",
                                                        type(predicate).__name__))
        return True

    def _priority_of(self, obj: Obj, kind: EventKind) -> int | Deferred:
        deletion = _deletion(obj, kind)
        default = NORMAL if deletion else default_priority(kind)
        prio: int | Deferred = default
        if self._priority is not None:
            try:
                prio = self._priority(obj, kind, default)
            except Exception as exc:
                self._failures.failed("priority function", key_of(obj), exc)
                return NORMAL
        if deletion and (isinstance(prio, Deferred) or prio < NORMAL):
            return NORMAL
        return prio

    def _mapped(self, obj: Obj) -> list[Request]:
        try:
            return list(self._requests(obj))
        except Exception as exc:
            self._failures.failed("map function", key_of(obj), exc)
            return []

    def _emit(self, obj: Obj, kind: EventKind, requests: list[Request] | dict[Request, None]
              ) -> None:
        if not requests:
            return  # nothing to wake: the priority function need not run
        prio = self._priority_of(obj, kind)
        replay = kind is EventKind.INITIAL_ADD
        if isinstance(prio, Deferred):
            for request in requests:
                self._target.defer(request, prio, replay=replay)
            return
        for request in requests:
            self._target.enqueue(request, priority=prio, replay=replay)

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        kind = EventKind.INITIAL_ADD if is_initial_list else EventKind.ADD
        if self._passes(kind, obj, None):
            self._emit(obj, kind, self._mapped(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        unchanged = resource_version_of(old) == resource_version_of(new)
        kind = EventKind.RESYNC if unchanged else EventKind.UPDATE
        if self._passes(kind, new, old):
            self._emit(new, kind, self._update_requests(old, new, unchanged))

    def _update_requests(self, old: Obj, new: Obj, unchanged: bool
                         ) -> list[Request] | dict[Request, None]:
        return self._mapped(new)

    def on_delete(self, obj: Any) -> None:
        state = unwrap_tombstone(obj)
        if self._passes(EventKind.DELETE, state, None):
            self._emit(state, EventKind.DELETE, self._mapped(state))


class EnqueueForObject(_Handler):
    """Enqueue the object's own `namespace/name` (the primary resource of a controller)."""

    def __init__(self, target: Enqueuer, *, priority: PriorityFn | None = None,
                 predicates: Sequence[Predicate] = (),
                 failures: FailureLog | None = None) -> None:
        super().__init__(target, priority, predicates, failures)

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return (Request.for_object(obj),)


class EnqueueFromMap(_Handler):
    """Enqueue whatever `map_fn` says the object affects (e.g. an EndpointSlice → the
    TargetGroupBindings of its Service, found through an indexer)."""

    def __init__(self, target: Enqueuer, map_fn: MapFn, *,
                 priority: PriorityFn | None = None, predicates: Sequence[Predicate] = (),
                 failures: FailureLog | None = None) -> None:
        super().__init__(target, priority, predicates, failures)
        self._map = map_fn

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return self._map(obj)

    def _update_requests(self, old: Obj, new: Obj, unchanged: bool
                         ) -> list[Request] | dict[Request, None]:
        # As controller-runtime: both states are mapped, so a change that moves the object from
        # one owner to another (a relabelled EndpointSlice) wakes both.
        requests: dict[Request, None] = dict.fromkeys(self._mapped(new))
        if not unchanged:
            requests.update(dict.fromkeys(self._mapped(old)))
        return requests
