"""The reconcile contract: what a reconciler is asked (`Request`), what it answers (`Result`), how
it fails (`ReconcileError`, `TerminalError`), the two queue priorities, and what the running
reconcile may ask about itself (`reconcile_priority()`, `reconcile_id()`).

A leaf module: it imports nothing else from the runtime, so handlers, queues, controllers and
reconcilers can all depend on it without cycles (controller-runtime's `pkg/reconcile`).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol

__all__ = [
    "LOW",
    "NORMAL",
    "ReconcileError",
    "ReconcilePriority",
    "Reconciler",
    "Request",
    "Result",
    "TerminalError",
    "current_priority",
    "current_reconcile",
    "reconcile_id",
    "reconcile_priority",
]

# Priorities: higher leaves the work queue first. Anything below NORMAL is in the paced LOW lane.
NORMAL: Final = 0
LOW: Final = -100


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What a reconciler is asked to converge. For namespaced objects `namespace/name`; for
    cluster-scoped objects (and keys that are not objects, e.g. an Ingress group) namespace is
    ""."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The one key rule of the runtime: `namespace/name`, or `name` without a namespace. The
        informer cache keys objects the same way (`runtime.objects.key_of`)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: Mapping[str, Any]) -> Request:
        """The request for an object as the API serves it. Hostile JSON (metadata that is not an
        object, a name that is not a string) gives empty parts rather than an exception."""
        # `type(...) is dict` first: the ABC check costs more than the rest.
        meta = (obj.get("metadata") if type(obj) is dict or isinstance(obj, Mapping)
                else None)
        if type(meta) is not dict and not isinstance(meta, Mapping):
            return cls("", "")
        return cls(_text(meta.get("namespace")), _text(meta.get("name")))

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Result:
    """`requeue_after` > 0: reconcile again after that many seconds (backoff forgotten);
    `requeue`: again with backoff; `priority`: the priority of that requeue (default: the one
    the request was taken with)."""

    requeue: bool = False
    requeue_after: float = 0.0
    priority: int | None = None


class ReconcileError(Exception):
    """An expected failure (an AWS error, a conflict): retried with backoff, no traceback.
    API errors from the Kubernetes client are treated the same way."""


class TerminalError(Exception):
    """Bad input that retrying cannot fix; the reconciler has already reported it on the object
    (Warning Event, status condition). Not retried until the object changes."""


class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result: ...


class ReconcilePriority:
    """The priority of one running reconcile. It is raised in flight when the key gets a
    higher-priority add meanwhile (a real change arriving during its verification): the key
    cannot be handed out twice, so the running reconcile itself stops waiting like a LOW one
    (for the verification budget, say) and finishes as fast as a real change would."""

    __slots__ = ("_raised", "value")

    def __init__(self, value: int) -> None:
        self.value = value
        self._raised = asyncio.Event()

    def raise_to(self, priority: int) -> None:
        if priority > self.value:
            self.value = priority
            self._raised.set()

    async def raised(self) -> None:
        """Return once the priority has been raised (never, if it is not)."""
        await self._raised.wait()


_PRIORITY: contextvars.ContextVar[ReconcilePriority | None] = contextvars.ContextVar(
    "reconcile_priority", default=None)
_RECONCILE_ID: contextvars.ContextVar[str] = contextvars.ContextVar("reconcile_id", default="")


def reconcile_priority() -> int:
    """The queue priority of the reconcile running in this task (NORMAL outside one). A
    reconciler uses it to tell a paced LOW-lane verification from a real change (checkpoints
    skip work only for the latter)."""
    cell = _PRIORITY.get()
    return cell.value if cell is not None else NORMAL


def current_priority() -> ReconcilePriority | None:
    """The running reconcile's priority (None outside one), to wait on its promotion."""
    return _PRIORITY.get()


def reconcile_id() -> str:
    """The id of the reconcile running in this task ("" outside one); every log line of that
    reconcile carries it."""
    return _RECONCILE_ID.get()


@contextmanager
def current_reconcile(*, priority: ReconcilePriority, reconcile_id: str) -> Iterator[None]:
    """Run the body as the reconcile `reconcile_id` taken with `priority` (the controller's
    workers do this around every `reconcile` call)."""
    priority_token = _PRIORITY.set(priority)
    id_token = _RECONCILE_ID.set(reconcile_id)
    try:
        yield
    finally:
        _RECONCILE_ID.reset(id_token)
        _PRIORITY.reset(priority_token)
