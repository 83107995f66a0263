"""The priority work queue: controller-runtime's priority-queue contract, plus a LOW lane that is
paced and cannot be starved (its policy: `lowlane.py`; its options: `options.py`).

Contract
- One entry per key. Ready items leave in order of higher priority, then earlier ready time, then
  FIFO (a monotonic counter assigned whenever an entry becomes ready or changes).
- Re-adding a queued key keeps the higher priority and the earlier ready time: an already-ready
  entry ignores a new `after`; a waiting one becomes ready now on an immediate add, and a new
  `after` can only shorten its wait. A priority rise moves the entry to the end of its new level.
- A key handed out by `get` is never handed out again before `done(key)`. Adds made meanwhile are
  merged into one deferred entry (same rules) that takes effect at `done`.
- `len(queue)` counts ready items only; delayed ones are not ready.

LOW lane: items below `NORMAL` leave only when the lane admits them, so a restart cannot flood
the APIs behind the reconciler; normal items never wait for it. A LOW item ready for `max_wait`
seconds or more is *promoted*: handed out ahead of every other item (oldest first, ties by
priority), so constant normal traffic cannot starve it (controller-runtime #3496). Its reported
priority stays LOW.

Shutdown (client-go semantics): `shutdown()` drops new adds and delayed entries; `get` keeps
handing out ready entries (LOW ones still paced) and raises `ShutDown` once none is left.
`shutdown(drain=True)` also waits until no item is in flight; a later `shutdown()` ends that wait.

Everything runs on one event loop with no locks: `get` parks on a future that is only a wake-up
signal, and the item is taken synchronously once the getter runs, so a cancelled getter can never
lose an item and no lock is ever held across a hand-off. The bookkeeping is `entries.py`'s.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Hashable
from typing import TypeVar

from prometheus_client import CollectorRegistry

from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL
from runtime.workqueue.entries import Entries
from runtime.workqueue.lowlane import LowLane
from runtime.workqueue.metrics import Durations, queue_metrics
from runtime.workqueue.options import QueueOptions, with_defaults
from runtime.workqueue.ratelimit import RateLimiter

__all__ = ["PriorityQueue", "ShutDown"]

K = TypeVar("K", bound=Hashable)

_BATCH = Durations.BATCH


class ShutDown(Exception):
    """The queue is shut down and has no ready item left for this getter."""


class PriorityQueue(Entries[K]):
    """Work queue keyed by `K` (hashable; usually a `Request`).

    `name` labels the metrics (both `name` and `controller`); with `registry` None or `name` ""
    nothing is recorded. `options` (defaults: `with_defaults`) set the rate limiter of
    rate-limited adds and the LOW lane. All methods must be called from the event loop's thread.

    Worker loop::

        while True:
            try:
                key, priority = await queue.get()
            except ShutDown:
                return
            try:
                ...  # on failure: queue.add(key, priority=priority, rate_limited=True)
            finally:
                queue.done(key)
    """

    # `__dict__` too: tests may wrap a method of one queue.
    __slots__ = ("__dict__", "_clock", "_drain_waiters", "_limiter", "_shutting_down", "_timer",
                 "_timer_at", "name", "options")

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        options: QueueOptions | None = None,
    ) -> None:
        self.options = with_defaults(options)
        self.name = name
        self._clock: Clock = clock or RealClock()
        assert self.options.rate_limiter is not None
        self._limiter: RateLimiter[K] = self.options.rate_limiter
        super().__init__(clock=self._clock, lane=LowLane(self.options.low_lane, clock=self._clock))
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = math.inf
        self._shutting_down = False
        self._drain_waiters: list[asyncio.Future[bool]] = []

        if registry is not None and name:
            self._record_into(queue_metrics(registry, name, self))

    # ---- public API -------------------------------------------------------------------------

    def add(
        self, key: K, *, priority: int = NORMAL, after: float = 0.0, rate_limited: bool = False
    ) -> None:
        """Queue `key`, or merge into its queued entry. With `rate_limited` the limiter's
        `when(key)` (which counts a failure) gives the delay; with `after` too, the shorter wins.
        Dropped once the queue is shutting down."""
        if self._shutting_down:
            return
        if rate_limited or after > 0:
            delay = after
            if rate_limited:
                limited = self._limiter.when(key)
                delay = min(after, limited) if after > 0 else limited
            self._add(key, priority, delay)
            return
        now = self._now()
        waiting = self._waiting
        if waiting and waiting[0][0] <= now:
            self._promote_due(now)
        ready = self._ready
        if key not in ready and key not in self._later and key not in self._processing:
            # The common case, `_make_ready` inlined: a new key, ready now.
            entry = (key, priority, now)
            ready[key] = entry
            if priority >= NORMAL:
                fifo = self._normal.fifos.get(priority)
                if fifo is None:
                    self._normal.push(entry)
                else:
                    fifo.append(entry)
                self._n_normal += 1
            else:
                if not self._n_low:
                    self._low_since = now
                self._low.push(entry)
                self._n_low += 1
            self.adds += 1
            if self._getters:
                self._wake_one()
            return
        self._add(key, priority, 0.0, now)

    async def get(self) -> tuple[K, int]:
        """Wait for the next item and return `(key, priority)`. The caller must call
        `done(key)` when finished. Raises `ShutDown` once shut down with nothing ready."""
        while True:
            item = self._take()
            if item is not None:
                if self._getters and (self._n_normal or self._n_low):
                    self._wake_one()
                return item
            if self._shutting_down and not (self._n_normal or self._n_low):
                raise ShutDown(f"work queue {self.name!r} is shut down")
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            self._reschedule()
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # hand the wake-up we consumed to another getter
                raise

    def get_nowait(self) -> tuple[K, int]:
        """Like `get` but never waits: raises `asyncio.QueueEmpty` if nothing can be handed out
        now, `ShutDown` if shut down with nothing ready."""
        item = self._take()
        if item is not None:
            return item
        if self._shutting_down and not (self._n_normal or self._n_low):
            raise ShutDown(f"work queue {self.name!r} is shut down")
        raise asyncio.QueueEmpty

    def done(self, key: K) -> None:
        """Finish processing `key`; a deferred re-add takes effect now."""
        started = self._processing.pop(key, None)
        if started is None:
            return
        now = self._now()
        worked = self._work_times
        if worked is not None:  # Durations.observe, inlined (hot path)
            worked.append(now - started)
            # One check for both lists: the hand-out list is longer only by what is in flight.
            if len(worked) >= _BATCH:
                self._fold()
        lane = self._lane
        if lane.in_flight and lane.finished(key) and self._n_low:
            self._wake_one()  # a LOW slot is free again
            self._reschedule()
        if self._deferred:
            deferred = self._deferred.pop(key, None)
            if deferred is not None:
                priority, ready_at = deferred
                if ready_at <= now or not self._shutting_down:
                    self._promote_due(now)
                    self._enqueue(key, priority, ready_at, now)
        if self._drain_waiters and not self._processing:
            self._release_drain_waiters()

    def forget(self, key: K) -> None:
        """Reset the rate limiter's failure history for `key`."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.num_requeues(key)

    async def shutdown(self, *, drain: bool = False) -> None:
        if not self._shutting_down:
            self._shutting_down = True
            self._delayed.clear()
            self._cancel_timer()
            while self._getters:
                self._wake_one()
        if not drain:
            self._release_drain_waiters()
            return
        while self._processing:
            drained: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(drained)
            if not await drained:  # a plain shutdown() ended the drain
                return

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        self._promote_due(self._now())
        return self._n_normal + self._n_low

    # ---- timer ------------------------------------------------------------------------------

    def _next_deadline(self) -> float:
        head = self._delayed.next_ready_at()
        deadline = math.inf if head is None else head
        # Only a parked getter cares when the lane admits the next LOW item; with normal items
        # ready it would not be parked. With every LOW slot busy, `done` is what wakes it.
        lane = self._lane
        if self._getters and self._n_low and lane.paced and not lane.full():
            deadline = min(deadline, self._now() + lane.time_to_admit())
        return deadline

    def _reschedule(self) -> None:
        deadline = self._next_deadline()
        if deadline == math.inf:
            return
        if self._timer is not None and self._timer_at <= deadline:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: get/len promote due entries themselves
        self._cancel_timer()
        self._timer_at = deadline
        self._timer = loop.create_task(self._fire(deadline), name=f"workqueue-timer-{self.name}")

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = math.inf

    async def _fire(self, deadline: float) -> None:
        await self._clock.sleep(deadline - self._now())
        self._timer = None
        self._timer_at = math.inf
        self._promote_due(self._now())  # wakes a getter for each entry it made ready
        if self._n_low and self._getters:
            self._wake_one()  # the lane may admit a LOW item now
        self._reschedule()

    # ---- housekeeping -----------------------------------------------------------------------

    def _release_drain_waiters(self) -> None:
        finished = not self._processing
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(finished)
        self._drain_waiters.clear()

