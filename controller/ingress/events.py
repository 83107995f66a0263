"""Event handlers for the Ingress controller: every watched kind maps to the Ingress groups it
concerns; the priority is decided per group (checkpoints), and updates that change nothing the
model reads (our own status and checkpoint writes, a Service's status) are dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import structlog

from controller.apis import CHECKPOINT_ANNOTATIONS as CHECKPOINT_ANNOTATIONS
from controller.ingress.caches import Obj, meta
from runtime.handlers import Enqueuer, EventKind, Request, default_priority, unwrap_tombstone
from runtime.workqueue import NORMAL

log = structlog.get_logger("ingress")

MapFn = Callable[[Obj], Iterable[Request]]
GroupPriority = Callable[[Request, EventKind, int], int]
Relevant = Callable[[Obj], Any]


def ingress_view(obj: Obj) -> Any:
    m = meta(obj)
    annotations = {k: v for k, v in (m.get("annotations") or {}).items()
                   if k not in CHECKPOINT_ANNOTATIONS}
    return (obj.get("spec"), annotations, bool(m.get("deletionTimestamp")))


def service_view(obj: Obj) -> Any:
    m = meta(obj)
    return (obj.get("spec"), m.get("annotations"), m.get("uid"))


def secret_view(obj: Obj) -> Any:
    return obj.get("data")


def spec_and_annotations(obj: Obj) -> Any:
    return (obj.get("spec"), meta(obj).get("annotations"))


def labels_view(obj: Obj) -> Any:
    return meta(obj).get("labels")


class GroupHandler:
    """Like `runtime.handlers.EnqueueFromMap`, with a priority per group and a relevance view:
    an update whose view is unchanged enqueues nothing (resyncs always pass)."""

    def __init__(self, target: Enqueuer, map_fn: MapFn, *, priority: GroupPriority,
                 view: Relevant | None = None, deletes_only: bool = False) -> None:
        self._target = target
        self._map = map_fn
        self._priority = priority
        self._view = view
        self._deletes_only = deletes_only

    def _emit(self, requests: Iterable[Request], kind: EventKind, obj: Obj) -> None:
        default = default_priority(kind)
        # An object being deleted (a member, a backend Service, a binding) is a real change for
        # every group it concerns, whatever the checkpoints say.
        deleting = bool(meta(obj).get("deletionTimestamp"))
        for request in dict.fromkeys(requests):
            try:
                prio = NORMAL if deleting else self._priority(request, kind, default)
            except Exception:  # never raise into the informer's delivery loop
                log.exception("priority decision failed", group=request.key)
                prio = default
            self._target.enqueue(request, priority=prio)

    def _safe_map(self, obj: Obj) -> list[Request]:
        try:
            return list(self._map(obj))
        except Exception:
            log.exception("mapping an event to Ingress groups failed")
            return []

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        if self._deletes_only:
            return
        self._emit(self._safe_map(obj), EventKind.INITIAL_ADD if is_initial_list
                   else EventKind.ADD, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        unchanged = meta(old).get("resourceVersion") == meta(new).get("resourceVersion")
        if unchanged:
            if not self._deletes_only:
                self._emit(self._safe_map(new), EventKind.RESYNC, new)
            return
        if self._deletes_only:
            if meta(new).get("deletionTimestamp") and not meta(old).get("deletionTimestamp"):
                self._emit(self._safe_map(new), EventKind.UPDATE, new)
            return
        if self._view is not None and self._view(old) == self._view(new):
            return
        self._emit([*self._safe_map(new), *self._safe_map(old)], EventKind.UPDATE, new)

    def on_delete(self, obj: Any) -> None:
        gone = unwrap_tombstone(obj)
        self._emit(self._safe_map(gone), EventKind.DELETE, gone)
