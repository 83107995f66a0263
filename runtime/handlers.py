"""Event handlers: map informer notifications to (request, priority) and enqueue. They never do
I/O, so an informer's delivery loop is never held up by a reconciler.

One shape for every watch (controller-runtime's builder `doWatch`): predicates filter the event,
a map function says which requests it concerns (`EnqueueForObject`: the object itself), and a
priority function, if any, prices each mapped request.

Priorities follow controller-runtime's handlers: an add from the informer's initial list and an
update whose resourceVersion did not change (a resync, or a relist that found nothing new) are
LOW; everything else is NORMAL. A controller may pass its own `priority` function (checkpoints
plug in there): it sees the mapped request, the event and the default, and returns the
priority. Deletion is always a real change: a delete, or any event about an object whose
`deletionTimestamp` is set, is never LOW, whatever the priority function says.

A priority function may also answer `Deferred(decide)` (runtime.prioritydecisions) for an
initial-list add or a resync it cannot judge cheaply: the controller then makes that decision
off the event path, giving way to real changes, and enqueues the request with its result.

One event may concern many requests (an IngressClass: every Ingress group of the class). The
first `CHUNK` are enqueued at once; the rest in a coroutine the informer awaits before this
handler's next event, giving the loop back between chunks, so a priority function that loads
what it prices is never run hundreds of times in one go.

User functions meet hostile objects: a map function that raises skips that object for this
handler, a priority function that raises gives NORMAL, a predicate that raises lets the event
through; each logs one line per object per interval (runtime.failures). Other objects and other
handlers are not affected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Final, Protocol

from runtime.failures import FailureLog
from runtime.objects import Obj, is_deleting, key_of, resource_version_of
from runtime.predicates import Event, EventKind, Predicate
from runtime.prioritydecisions import Deferred
from runtime.reconcile import LOW, NORMAL, Request

__all__ = [
    "CHUNK",
    "Deferred",
    "EnqueueForObject",
    "EnqueueFromMap",
    "Enqueuer",
    "MapFn",
    "PriorityFn",
    "default_priority",
    "unwrap_tombstone",
]

CHUNK: Final = 16  # requests of one event enqueued between giving the loop back


class Enqueuer(Protocol):
    """The part of a controller a handler needs. `replay`: the event is an initial-list add
    (a cached object replayed to a handler at start), which the controller may find adds
    nothing to what the replay already enqueued (runtime.controller)."""

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None: ...

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        """Enqueue `request` with the priority `decision()` gives, made later."""


PriorityFn = Callable[[Request, Event, int], int | Deferred]
"""(mapped request, the event, default priority) → priority to use, or a decision to make
later."""

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


Emitted = Coroutine[Any, Any, None] | None
"""What a handler method returns: None, or the rest of a large fan-out for the informer to
await."""


class _Handler:
    def __init__(self, target: Enqueuer, priority: PriorityFn | None,
                 predicates: Sequence[Predicate], failures: FailureLog | None) -> None:
        self._target = target
        self._priority = priority
        self._predicates = tuple(predicates)
        self._failures = failures if failures is not None else FailureLog()

    def _requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def _passes(self, event: Event) -> bool:
        for predicate in self._predicates:
            try:
                if not predicate(event):
                    return False
            except Exception as exc:  # fail open: a reconcile too many beats a change missed
                self._failures.failed("event predicate", key_of(event.obj), exc,
                                      predicate=getattr(predicate, "__name__",
                                                        type(predicate).__name__))
        return True

    def _mapped(self, obj: Obj) -> list[Request]:
        try:
            return list(self._requests(obj))
        except Exception as exc:
            self._failures.failed("map function", key_of(obj), exc)
            return []

    def _emit(self, event: Event, requests: Sequence[Request]) -> Emitted:
        if not requests:
            return None  # nothing to wake: the priority function need not run
        self._enqueue(event, requests[:CHUNK])
        if len(requests) <= CHUNK:
            return None
        return self._enqueue_rest(event, requests[CHUNK:])

    async def _enqueue_rest(self, event: Event, requests: Sequence[Request]) -> None:
        for start in range(0, len(requests), CHUNK):
            await asyncio.sleep(0)
            self._enqueue(event, requests[start:start + CHUNK])

    def _enqueue(self, event: Event, requests: Sequence[Request]) -> None:
        kind = event.kind
        deletion = kind is EventKind.DELETE or is_deleting(event.obj)
        default = NORMAL if deletion else default_priority(kind)
        replay = kind is EventKind.INITIAL_ADD
        target = self._target
        for request in requests:
            prio = default if self._priority is None else self._priced(request, event, default)
            if deletion and (isinstance(prio, Deferred) or prio < NORMAL):
                prio = NORMAL
            if isinstance(prio, Deferred):
                target.defer(request, prio, replay=replay)
            else:
                target.enqueue(request, priority=prio, replay=replay)

    def _priced(self, request: Request, event: Event, default: int) -> int | Deferred:
        assert self._priority is not None
        try:
            return self._priority(request, event, default)
        except Exception as exc:
            self._failures.failed("priority function", key_of(event.obj), exc,
                                  request=request.key)
            return NORMAL

    def on_add(self, obj: Obj, is_initial_list: bool) -> Emitted:
        event = Event(EventKind.INITIAL_ADD if is_initial_list else EventKind.ADD, obj)
        if not self._passes(event):
            return None
        return self._emit(event, self._mapped(obj))

    def on_update(self, old: Obj, new: Obj) -> Emitted:
        unchanged = resource_version_of(old) == resource_version_of(new)
        event = Event(EventKind.RESYNC if unchanged else EventKind.UPDATE, new, old)
        if not self._passes(event):
            return None
        return self._emit(event, self._update_requests(old, new, unchanged))

    def _update_requests(self, old: Obj, new: Obj, unchanged: bool) -> Sequence[Request]:
        return self._mapped(new)

    def on_delete(self, obj: Any) -> Emitted:
        event = Event(EventKind.DELETE, unwrap_tombstone(obj))
        if not self._passes(event):
            return None
        return self._emit(event, self._mapped(event.obj))


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
    TargetGroupBindings of its Service, found through an indexer), each request once."""

    def __init__(self, target: Enqueuer, map_fn: MapFn, *,
                 priority: PriorityFn | None = None, predicates: Sequence[Predicate] = (),
                 failures: FailureLog | None = None) -> None:
        super().__init__(target, priority, predicates, failures)
        self._map = map_fn

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return self._map(obj)

    def _mapped(self, obj: Obj) -> list[Request]:
        requests = super()._mapped(obj)
        return requests if len(requests) < 2 else list(dict.fromkeys(requests))

    def _update_requests(self, old: Obj, new: Obj, unchanged: bool) -> Sequence[Request]:
        # As controller-runtime: both states are mapped, so a change that moves the object from
        # one owner to another (a relabelled EndpointSlice) wakes both.
        requests = self._mapped(new)
        if unchanged:
            return requests
        before = self._mapped(old)
        if not before or before == requests:
            return requests
        return list(dict.fromkeys([*requests, *before]))
