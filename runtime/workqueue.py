"""Priority work queue: controller-runtime's priority-queue contract, plus a paced LOW lane that
cannot be starved.

Contract
- One entry per key. Ready items leave in order of higher priority, then earlier ready time, then
  FIFO (a monotonic counter assigned whenever an entry becomes ready or changes).
- Re-adding a queued key keeps the higher priority and the earlier ready time: an already-ready
  entry ignores a new `after`; a waiting one becomes ready now on an immediate add, and a new
  `after` can only shorten its wait. A priority rise moves the entry to the end of its new level.
- A key handed out by `get` is never handed out again before `done(key)`. Adds made meanwhile are
  merged into one deferred entry (same rules) that takes effect at `done`.
- `len(queue)` counts ready items only; delayed ones are not ready.

LOW lane
Items with priority below `NORMAL` (typically `LOW`, for initial-list and unchanged-resync events)
leave the queue through a token bucket (`low_priority_qps`, `low_priority_burst`; None = unpaced),
so a restart cannot flood the APIs behind the reconciler. Normal items never wait for that bucket.
A LOW item that has been ready for `low_priority_max_wait` seconds or more is *promoted*: it is
handed out ahead of every other item (oldest first, ties by priority; one bucket token each), so
constant normal traffic cannot starve it (controller-runtime #3496). Its reported priority stays
LOW.

Two more limits apply to LOW items, promoted or not, when set: `low_priority_gate`, a budget
shared with other queues (the AWS calls verifications may spend, whatever each costs): no LOW
item leaves while it is closed; and `low_priority_max_in_flight`, so that LOW work waiting on that
budget can never occupy every worker and hold back a real change.

Shutdown (client-go semantics)
`shutdown()` drops new adds and delayed entries; `get` keeps handing out ready entries (LOW ones
still paced) and raises `ShutDown` once none is left. `shutdown(drain=True)` also waits until no
item is in flight; a later `shutdown()` without drain ends that wait.

Everything runs on one event loop with no locks: `get` parks on a future that is only a wake-up
signal, and the item is taken synchronously once the getter runs, so a cancelled getter can never
lose an item and no lock is ever held across a hand-off.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable
from typing import Final, Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry

from runtime.clock import Clock, RealClock
from runtime.ratelimit import ItemExponentialFailureRateLimiter, RateLimiter, TokenBucket
from runtime.workqueue_metrics import PrometheusQueueMetrics, QueueMetrics

__all__ = ["LOW", "NORMAL", "LaneGate", "PriorityQueue", "ShutDown"]

K = TypeVar("K", bound=Hashable)

NORMAL: Final = 0
LOW: Final = -100

_WAITING: Final = 1
_READY: Final = 2
_GONE: Final = 3


class LaneGate(Protocol):
    """A budget the LOW lanes of several queues share. The queue only looks; whoever does the
    work spends it (so a LOW item's cost need not be known when it leaves the queue)."""

    def time_to_open(self) -> float:
        """Seconds until the gate opens; 0.0 while it is open."""
        ...


class ShutDown(Exception):
    """The queue is shut down and has no ready item left for this getter."""


class _Entry(Generic[K]):
    __slots__ = ("key", "priority", "ready_at", "seq", "state")

    def __init__(self, key: K, priority: int, ready_at: float) -> None:
        self.key = key
        self.priority = priority
        # For a ready entry: when it became ready (queue-duration start, ordering tie-break).
        self.ready_at = ready_at
        # Heaps delete lazily: a heap tuple is live only while its seq matches the entry's.
        self.seq = 0
        self.state = _GONE


_HeapItem = tuple[float, float, int, _Entry[K]]


class PriorityQueue(Generic[K]):
    """Work queue keyed by `K` (hashable; usually a "namespace/name" string).

    `name` labels the metrics (both `name` and `controller`); with `registry` None or `name` ""
    nothing is recorded. `rate_limiter` answers rate-limited adds (default: per-key exponential,
    5 ms doubling to 1000 s). `low_priority_qps`/`low_priority_burst` pace the LOW lane (qps None
    = unpaced); `low_priority_max_wait` (None = never) is the age at which a ready LOW item is
    promoted. `low_priority_gate` (a shared budget) and `low_priority_max_in_flight` further hold
    LOW items back (module docstring). All methods must be called from the event loop's thread.

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

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        rate_limiter: RateLimiter[K] | None = None,
        registry: CollectorRegistry | None = None,
        low_priority_qps: float | None = None,
        low_priority_burst: int = 10,
        low_priority_max_wait: float | None = 60.0,
        low_priority_gate: LaneGate | None = None,
        low_priority_max_in_flight: int | None = None,
    ) -> None:
        if low_priority_max_wait is not None and not (
            isinstance(low_priority_max_wait, int | float)
            and math.isfinite(low_priority_max_wait)
            and low_priority_max_wait >= 0
        ):
            raise ValueError(
                "low_priority_max_wait must be a number of seconds >= 0 or None, "
                f"got {low_priority_max_wait!r}"
            )
        self._clock: Clock = clock or RealClock()
        self._limiter: RateLimiter[K] = rate_limiter or ItemExponentialFailureRateLimiter()
        self._bucket: TokenBucket | None = None
        if low_priority_qps is not None:
            try:
                self._bucket = TokenBucket(
                    rate=low_priority_qps, burst=low_priority_burst, clock=self._clock
                )
            except ValueError as exc:
                raise ValueError(f"LOW-priority lane: {exc}") from None
        if low_priority_max_in_flight is not None and (
            not isinstance(low_priority_max_in_flight, int) or low_priority_max_in_flight < 1
        ):
            raise ValueError(
                "low_priority_max_in_flight must be an integer >= 1 or None, "
                f"got {low_priority_max_in_flight!r}"
            )
        self._max_wait = low_priority_max_wait
        self._gate = low_priority_gate
        self._max_low_in_flight = low_priority_max_in_flight
        self.name = name

        self._items: dict[K, _Entry[K]] = {}  # queued (waiting or ready), never in flight
        self._deferred: dict[K, _Entry[K]] = {}  # re-added while in flight; applied at done()
        self._processing: dict[K, float] = {}  # in flight → when it was handed out
        self._low_in_flight: set[K] = set()  # in flight, handed out with a LOW priority
        # Heaps of (rank, rank, seq, entry), deleted lazily: a tuple is live only while its seq
        # is the entry's current one and the entry has not been handed out.
        self._waiting: list[_HeapItem[K]] = []  # ready_at, -priority
        self._normal: list[_HeapItem[K]] = []  # -priority, ready_at
        self._low: list[_HeapItem[K]] = []  # -priority, ready_at
        self._aging: list[_HeapItem[K]] = []  # LOW entries: ready_at, -priority
        self._n_waiting = 0
        self._n_normal = 0
        self._n_low = 0
        self._seq = itertools.count(1)

        self._getters: deque[asyncio.Future[None]] = deque()
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = math.inf
        self._shutting_down = False
        self._drain_waiters: list[asyncio.Future[bool]] = []

        self._metrics: QueueMetrics = QueueMetrics()
        if registry is not None and name:
            self._metrics = PrometheusQueueMetrics(
                name=name, registry=registry, in_flight_ages=self._in_flight_ages
            )

    # ---- public API -------------------------------------------------------------------------

    def add(
        self, key: K, *, priority: int = NORMAL, after: float = 0.0, rate_limited: bool = False
    ) -> None:
        """Queue `key`, or merge into its queued entry. With `rate_limited` the limiter's
        `when(key)` (which counts a failure) gives the delay; with `after` too, the shorter wins.
        Dropped once the queue is shutting down."""
        if self._shutting_down:
            return
        delay = after
        if rate_limited:
            limited = self._limiter.when(key)
            delay = min(after, limited) if after > 0 else limited
        if delay > 0:
            self._metrics.retry()
        now = self._clock.now()
        # Entries due by now become ready before this add ranks anything, so FIFO ranks follow
        # readiness order no matter when the timer last ran.
        self._promote_due(now)
        ready_at = now + delay if delay > 0 else now

        if key in self._processing:
            deferred = self._deferred.get(key)
            if deferred is None:
                self._deferred[key] = _Entry(key, priority, ready_at)
            else:
                deferred.priority = max(deferred.priority, priority)
                deferred.ready_at = min(deferred.ready_at, ready_at)
            return

        entry = self._items.get(key)
        if entry is None:
            entry = _Entry(key, priority, ready_at)
            self._items[key] = entry
            self._enqueue(entry, ready_at, now)
            return

        if entry.state == _READY:
            if priority > entry.priority:
                old = entry.priority
                self._count_ready(old, -1)
                entry.priority = priority
                self._push_ready(entry, now)
                self._metrics.reprioritized(old, priority)
                # A LOW entry held back by the lane's pace or gate may have left every getter
                # parked until the lane's next token; lifted out of the lane it is ready now.
                self._wake_one()
            return

        changed = priority > entry.priority
        entry.priority = max(entry.priority, priority)
        if delay <= 0:
            self._n_waiting -= 1
            self._make_ready(entry, now)
            self._wake_one()
        elif changed or ready_at < entry.ready_at:
            self._n_waiting -= 1
            self._make_waiting(entry, min(ready_at, entry.ready_at))
            self._reschedule()
        self._maybe_compact()

    async def get(self) -> tuple[K, int]:
        """Wait for the next item and return `(key, priority)`. The caller must call
        `done(key)` when finished. Raises `ShutDown` once shut down with nothing ready."""
        while True:
            item = self._take()
            if item is not None:
                if self._getters and self._n_normal + self._n_low:
                    self._wake_one()
                return item
            if self._shutting_down and not self._n_normal + self._n_low:
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
        if self._shutting_down and not self._n_normal + self._n_low:
            raise ShutDown(f"work queue {self.name!r} is shut down")
        raise asyncio.QueueEmpty

    def done(self, key: K) -> None:
        """Finish processing `key`; a deferred re-add takes effect now."""
        started = self._processing.pop(key, None)
        if started is None:
            return
        now = self._clock.now()
        self._metrics.done(now - started)
        self._promote_due(now)
        if key in self._low_in_flight:
            self._low_in_flight.discard(key)
            if self._n_low and self._max_low_in_flight is not None:
                self._wake_one()  # a LOW slot is free again
                self._reschedule()
        deferred = self._deferred.pop(key, None)
        if deferred is not None and (deferred.ready_at <= now or not self._shutting_down):
            self._items[key] = deferred
            self._enqueue(deferred, deferred.ready_at, now)
        if not self._processing:
            self._release_drain_waiters()

    def forget(self, key: K) -> None:
        """Reset the rate limiter's failure history for `key`."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.num_requeues(key)

    async def shutdown(self, *, drain: bool = False) -> None:
        if not self._shutting_down:
            self._shutting_down = True
            for entry in [e for e in self._items.values() if e.state == _WAITING]:
                entry.state = _GONE
                del self._items[entry.key]
            self._waiting.clear()
            self._n_waiting = 0
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

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    def __len__(self) -> int:
        self._promote_due(self._clock.now())
        return self._n_normal + self._n_low

    # ---- internals --------------------------------------------------------------------------

    def _enqueue(self, entry: _Entry[K], ready_at: float, now: float) -> None:
        if ready_at > now:
            self._make_waiting(entry, ready_at)
            self._reschedule()
        else:
            self._make_ready(entry, now)
            self._wake_one()

    def _make_waiting(self, entry: _Entry[K], ready_at: float) -> None:
        entry.state = _WAITING
        entry.ready_at = ready_at
        entry.seq = next(self._seq)
        heapq.heappush(self._waiting, (ready_at, -entry.priority, entry.seq, entry))
        self._n_waiting += 1

    def _make_ready(self, entry: _Entry[K], ready_at: float) -> None:
        self._push_ready(entry, ready_at)
        self._metrics.ready(entry.priority)

    def _push_ready(self, entry: _Entry[K], ready_at: float) -> None:
        entry.state = _READY
        entry.ready_at = ready_at
        seq = entry.seq = next(self._seq)
        if entry.priority < NORMAL:
            heapq.heappush(self._low, (-entry.priority, ready_at, seq, entry))
            if self._max_wait is not None:
                heapq.heappush(self._aging, (ready_at, -entry.priority, seq, entry))
        else:
            heapq.heappush(self._normal, (-entry.priority, ready_at, seq, entry))
        self._count_ready(entry.priority, +1)

    def _count_ready(self, priority: int, delta: int) -> None:
        if priority < NORMAL:
            self._n_low += delta
        else:
            self._n_normal += delta

    def _promote_due(self, now: float) -> int:
        moved = 0
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            ready_at, _, seq, entry = heapq.heappop(waiting)
            if entry.state == _WAITING and entry.seq == seq:
                self._n_waiting -= 1
                self._make_ready(entry, ready_at)
                moved += 1
        return moved

    def _take(self) -> tuple[K, int] | None:
        now = self._clock.now()
        self._promote_due(now)
        entry: _Entry[K] | None = None
        if self._n_low and self._max_wait is not None:
            oldest = self._live_head(self._aging)
            if oldest is not None and now - oldest.ready_at >= self._max_wait and self._token():
                entry = oldest
        if entry is None and self._n_normal:
            entry = self._live_head(self._normal)
        if entry is None and self._n_low and self._token():
            entry = self._live_head(self._low)
        if entry is None:
            return None
        entry.state = _GONE
        del self._items[entry.key]
        self._count_ready(entry.priority, -1)
        if entry.priority < NORMAL:
            self._low_in_flight.add(entry.key)
        self._processing[entry.key] = now
        self._metrics.handed_out(entry.priority, now - entry.ready_at)
        return entry.key, entry.priority

    def _token(self) -> bool:
        """May a LOW item leave now? Takes a bucket token if so (checked last: it is spent)."""
        if self._low_slots_full():
            return False
        if self._gate is not None and self._gate.time_to_open() > 0:
            return False
        return self._bucket is None or self._bucket.try_take()

    def _low_slots_full(self) -> bool:
        return (self._max_low_in_flight is not None
                and len(self._low_in_flight) >= self._max_low_in_flight)

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _next_deadline(self) -> float:
        deadline = math.inf
        head = self._live_head(self._waiting)
        if head is not None:
            deadline = head.ready_at
        # Only a parked getter cares when the next LOW token is due; with normal items ready it
        # would not be parked. With every LOW slot busy, `done` is what wakes it.
        if self._getters and self._n_low and not self._low_slots_full():
            wait = 0.0
            if self._bucket is not None:
                wait = self._bucket.time_to_next()
            if self._gate is not None:
                wait = max(wait, self._gate.time_to_open())
            if self._bucket is not None or self._gate is not None:
                deadline = min(deadline, self._clock.now() + wait)
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
        await self._clock.sleep(deadline - self._clock.now())
        self._timer = None
        self._timer_at = math.inf
        wakes = self._promote_due(self._clock.now())
        if self._n_low:
            wakes += 1  # a LOW token may be due
        for _ in range(wakes):
            if not self._getters:
                break
            self._wake_one()
        self._reschedule()

    def _release_drain_waiters(self) -> None:
        finished = not self._processing
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(finished)
        self._drain_waiters.clear()

    def _in_flight_ages(self) -> list[float]:
        now = self._clock.now()
        return [now - started for started in self._processing.values()]

    def _maybe_compact(self) -> None:
        # Lazy deletion leaves stale tuples behind; rebuild a heap once they dominate it.
        for heap, live in (
            (self._waiting, self._n_waiting),
            (self._normal, self._n_normal),
            (self._low, self._n_low),
            (self._aging, self._n_low),
        ):
            if len(heap) > 2 * live + 64:
                heap[:] = [t for t in heap if t[3].seq == t[2] and t[3].state != _GONE]
                heapq.heapify(heap)

    @staticmethod
    def _live_head(heap: list[_HeapItem[K]]) -> _Entry[K] | None:
        while heap:
            _, _, seq, entry = heap[0]
            if entry.seq == seq and entry.state != _GONE:
                return entry
            heapq.heappop(heap)
        return None
