"""Priority decisions off the event path.

A checkpoint priority decision builds the object's model from the caches: milliseconds each,
and on becoming leader every cached object asks for one. Made inside the informers' delivery,
they filled the event loop: a real change's reconcile waited a whole turn of every replaying
handler at each of its awaits (seconds, at a thousand Ingresses).

So a priority function may answer `Deferred(decide)` when it cannot decide cheaply (a stored
checkpoint that only the model can confirm); what it can decide cheaply (nothing stored, a
deletion, an ordinary event) it still answers at once. The controller keeps each deferred
request in its `Decisions`, whose task decides them in the order they came, in slices: short ones
while a reconcile of a real change (NORMAL or above) is in flight anywhere in the manager
(`Foreground`), longer ones otherwise, giving the loop back between slices. A request enqueued
NORMAL or above meanwhile leaves the pending set: a real event has decided for it, and the
queue keeps the higher priority anyway.

Several handlers may defer the same request (each of an Ingress group's members, Services and
class): it is decided once, at the highest priority any of its decisions gives, as the queue
would have merged their separate enqueues.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Final

import structlog

from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, Request

__all__ = ["Decisions", "Deferred", "Foreground"]

log = structlog.get_logger("decisions")

# Seconds of decisions per turn of the loop while a real change is being reconciled: each of
# its awaits waits at most this long per controller with decisions pending.
BUSY_SLICE: Final = 0.002
IDLE_SLICE: Final = 0.02  # ... and while none is
MAX_HOLD: Final = 2.0  # longest a paced LOW lane waits for real changes at a stretch
HOLD_POLL: Final = 0.05


class Deferred:
    """A priority decided later, once (the value is kept: the requests of one event share it)."""

    __slots__ = ("_decide", "_value")

    def __init__(self, decide: Callable[[], int]) -> None:
        self._decide = decide
        self._value: int | None = None

    def __call__(self) -> int:
        if self._value is None:
            self._value = self._decide()
        return self._value


class Foreground:
    """How many reconciles of real changes are in flight, across a manager's controllers.

    Also a gate for paced LOW lanes (workqueue.LaneGate): closed while a real change is being
    reconciled, and while a controller is still settling (replaying its caches to its handlers,
    or deciding priorities: until then nobody knows which requests are real changes), so that a
    verification does not start beside a real change and take the loop, the API's patience and
    the stand-ins' time from it. Never closed for more than `max_hold` seconds at a stretch, so
    real changes that follow one another without a pause cannot starve the verifications."""

    __slots__ = ("_clock", "_in_flight", "_settling", "_stretch", "max_hold")

    def __init__(self, *, clock: Clock | None = None, max_hold: float = MAX_HOLD) -> None:
        self._clock: Clock = clock or RealClock()
        self._in_flight = 0
        self._stretch: float | None = None  # when the gate last closed
        self._settling: list[Callable[[], bool]] = []
        self.max_hold = max_hold

    @property
    def busy(self) -> bool:
        """A real change is being reconciled."""
        return self._in_flight > 0

    def watch_settling(self, settling: Callable[[], bool]) -> None:
        """Keep paced lanes closed while `settling()` (a controller replaying or deciding)."""
        self._settling.append(settling)

    @contextlib.contextmanager
    def reconciling(self, priority: int) -> Iterator[None]:
        if priority < NORMAL:
            yield
            return
        if not self._in_flight and self._stretch is None:
            self._stretch = self._clock.now()
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight and not self._any_settling():
                self._stretch = None

    def _any_settling(self) -> bool:
        return any(settling() for settling in self._settling)

    def time_to_open(self) -> float:
        if not self._in_flight and not self._any_settling():
            self._stretch = None
            return 0.0
        now = self._clock.now()
        if self._stretch is None:
            self._stretch = now
        held = now - self._stretch
        if held >= self.max_hold:
            return 0.0
        # Looked at again soon: the real change may end well before the hold does.
        return min(HOLD_POLL, self.max_hold - held)


Enqueue = Callable[[Request, int], None]


class Decisions:
    """One controller's deferred priority decisions and the task that makes them."""

    def __init__(self, name: str, enqueue: Enqueue, foreground: Foreground) -> None:
        self._name = name
        self._enqueue = enqueue
        self.foreground = foreground
        self._pending: dict[Request, list[Deferred]] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def defer(self, request: Request, decision: Deferred) -> None:
        waiting = self._pending.get(request)
        if waiting is None:
            self._pending[request] = [decision]
            self._wakeup.set()
        elif all(d is not decision for d in waiting):
            waiting.append(decision)

    def settled(self, request: Request) -> None:
        """A real event enqueued `request` at NORMAL or above: nothing left to decide."""
        self._pending.pop(request, None)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"{self._name}-decisions")

    async def stop(self) -> None:
        """Drop what is pending: a controller started again replays every object."""
        self._pending.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        pending = self._pending
        while True:
            while not pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            deadline = time.perf_counter() + (
                BUSY_SLICE if self.foreground.busy else IDLE_SLICE)
            while pending:
                request = next(iter(pending))
                self._enqueue(request, self._decide(request, pending.pop(request)))
                if time.perf_counter() >= deadline:
                    break
            await asyncio.sleep(0)

    def _decide(self, request: Request, decisions: list[Deferred]) -> int:
        priority: int | None = None
        for decision in decisions:
            try:
                value = decision()
            except Exception:  # a decision that fails is a real change to look at
                log.exception("priority decision failed", controller=self._name,
                              key=request.key)
                value = NORMAL
            priority = value if priority is None else max(priority, value)
        return NORMAL if priority is None else priority
