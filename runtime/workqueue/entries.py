"""The queue's bookkeeping: which keys are queued, ready or delayed, in flight or deferred, and
in which order ready ones leave (the contract in `queue.py`'s docstring). `PriorityQueue` builds
on it with waiting getters, the timer, rate limiting and shutdown.

Speed matters here: every item passes `add`, `get` and `done`, and metrics are recorded on the
way. Ready entries are immutable tuples kept in per-priority FIFOs (`levels.py`), delayed ones
in a heap (`delayed.py`); adding a new key and handing out a ready normal item take short inlined
paths, everything else (merges, delays, the LOW lane) the general ones below.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import ChainMap, deque
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

from runtime.clock import Clock
from runtime.reconcile import NORMAL
from runtime.workqueue.delayed import Delayed
from runtime.workqueue.levels import Levels, Ready
from runtime.workqueue.lowlane import LowLane
from runtime.workqueue.metrics import Durations, QueueMetrics

__all__ = ["Entries"]

K = TypeVar("K", bound=Hashable)

_BATCH = Durations.BATCH


def _age_rank(entry: Ready[K]) -> tuple[float, int]:
    return entry[2], -entry[1]


class Entries(Generic[K]):
    # Slots, not a __dict__: the hot paths read a dozen attributes per item, and an instance
    # dict with more keys than CPython shares per class makes every one of those reads slower.
    __slots__ = ("_deferred", "_delayed", "_getters", "_lane", "_later", "_low", "_low_since",
                 "_max_wait", "_metrics", "_n_low", "_n_normal", "_normal", "_now", "_processing",
                 "_queue_times", "_ready", "_seen", "_seq", "_stale", "_waiting", "_work_times",
                 "adds", "retries")

    def __init__(self, *, clock: Clock, lane: LowLane[K]) -> None:
        self._now = clock.now
        self._lane = lane
        self._max_wait = lane.max_wait
        # A queued key is in exactly one of `_ready` and `_delayed`, and never in flight.
        self._ready: dict[K, Ready[K]] = {}
        self._delayed: Delayed[K] = Delayed()
        self._later = self._delayed.entries  # the two, aliased for the hot paths
        self._waiting = self._delayed.heap
        self._seen: dict[int, None] = {}
        self._normal: Levels[K] = Levels(self._seen)
        self._low: Levels[K] = Levels(self._seen)
        self._n_normal = 0
        self._n_low = 0
        self._stale = 0  # entries left behind in the levels by priority rises
        # A lower bound on the ready time of the oldest ready LOW entry: while it is younger than
        # max_wait, nothing can be promoted and handing out skips the LOW lane entirely.
        self._low_since = math.inf
        self._deferred: dict[K, tuple[int, float]] = {}  # re-added in flight: (priority, ready_at)
        self._processing: dict[K, float] = {}  # in flight → when it was handed out
        self._seq = itertools.count(1).__next__
        self._getters: deque[asyncio.Future[None]] = deque()

        # controller-runtime's adds (entries becoming ready) and retries (delayed adds)
        self.adds = 0
        self.retries = 0
        self._metrics: QueueMetrics | None = None
        # The histograms' raw observation lists, appended to directly on the hot path.
        self._queue_times: list[float] | None = None
        self._work_times: list[float] | None = None

    def _record_into(self, metrics: QueueMetrics) -> None:
        self._metrics = metrics
        self._queue_times = metrics.queue_duration.pending
        self._work_times = metrics.work_duration.pending

    def _reschedule(self) -> None:
        """A delayed entry was added or moved: re-arm the timer (the queue's business)."""
        raise NotImplementedError

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    @property
    def queued(self) -> int:
        """Queued entries, ready or not (in-flight ones aside)."""
        return len(self._ready) + len(self._later)

    @property
    def _items(self) -> ChainMap[K, object]:
        # compatibility: the former entry table, which a benchmark script inspects
        return ChainMap(self._ready, self._later)  # type: ignore[arg-type]

    # ---- what the metrics collector reads at scrape time ------------------------------------

    def ready_priorities(self) -> Iterator[int]:
        return (entry[1] for entry in list(self._ready.values()))

    def priorities_seen(self) -> list[int]:
        return list(self._seen)

    def in_flight_ages(self) -> list[float]:
        now = self._now()
        return [now - started for started in list(self._processing.values())]

    # ---- adding -----------------------------------------------------------------------------

    def _add(self, key: K, priority: int, delay: float, now: float | None = None) -> None:
        if delay > 0:
            self.retries += 1
        if now is None:
            now = self._now()
            # Entries due by now become ready before this add ranks anything, so FIFO ranks
            # follow readiness order no matter when the timer last ran.
            self._promote_due(now)
        ready_at = now + delay if delay > 0 else now

        if key in self._processing:
            deferred = self._deferred.get(key)
            if deferred is not None:
                priority = max(deferred[0], priority)
                ready_at = min(deferred[1], ready_at)
            self._deferred[key] = (priority, ready_at)
            return

        ready = self._ready.get(key)
        if ready is not None:
            old = ready[1]
            if priority > old:  # a rise: to the end of the new level, and not a new add
                self._count_ready(old, -1)
                self._push_ready(key, priority, now)
                self._stale += 1
                if self._stale > self._n_normal + self._n_low + 64:
                    self._compact()
                # A LOW entry held back by the lane's pace or gate may have left every getter
                # parked until the lane's next token; lifted out of the lane it is ready now.
                self._wake_one()
            return

        later = self._later.get(key)
        if later is None:
            self._enqueue(key, priority, ready_at, now)
            return
        old_ready_at, old = later[0], -later[1]
        changed = priority > old
        priority = max(priority, old)
        if delay <= 0:
            self._delayed.remove(key)
            self._make_ready(key, priority, now)
            self._wake_one()
        elif changed or ready_at < old_ready_at:
            self._delayed.put(key, priority, min(ready_at, old_ready_at), self._seq())
            self._reschedule()

    def _enqueue(self, key: K, priority: int, ready_at: float, now: float) -> None:
        if ready_at > now:
            self._delayed.put(key, priority, ready_at, self._seq())
            self._reschedule()
        else:
            self._make_ready(key, priority, now)
            self._wake_one()

    def _make_ready(self, key: K, priority: int, ready_at: float) -> None:
        self._push_ready(key, priority, ready_at)
        self.adds += 1

    def _push_ready(self, key: K, priority: int, ready_at: float) -> None:
        entry = (key, priority, ready_at)
        self._ready[key] = entry
        if priority < NORMAL:
            if not self._n_low:
                self._low_since = ready_at
            self._low.push(entry)
        else:
            self._normal.push(entry)
        self._count_ready(priority, +1)

    def _count_ready(self, priority: int, delta: int) -> None:
        if priority < NORMAL:
            self._n_low += delta
        else:
            self._n_normal += delta

    def _promote_due(self, now: float) -> int:
        """Make the delayed entries due by `now` ready, waking a parked getter for each.
        Whoever gets there first promotes them (a getter, an add, `len`, `done`, the timer);
        the timer, late on a busy loop, then finds nothing left to promote, so unless the
        promotion itself wakes the getters they would sleep with a ready item queued."""
        due = self._delayed.pop_due(now)
        for key, priority, ready_at in due:
            self._make_ready(key, priority, ready_at)
            if self._getters:
                self._wake_one()
        return len(due)

    # ---- handing out ------------------------------------------------------------------------

    def _take(self) -> tuple[K, int] | None:
        now = self._now()
        waiting = self._waiting
        if waiting and waiting[0][0] <= now:
            self._promote_due(now)
        ready = self._ready
        max_wait = self._max_wait
        if self._n_normal and (not self._n_low or max_wait is None
                               or now - self._low_since < max_wait):
            # No LOW item can have aged: the best normal item goes (Levels.pop, inlined).
            normal = self._normal
            fifo = normal.fifos[normal.top]
            entry = fifo.popleft()
            if not fifo or ready.get(entry[0]) is not entry:
                entry = normal.settle(entry, ready)
            self._n_normal -= 1
        else:
            found = self._pick_with_low(now)
            if found is None:
                return None
            entry = found
        key, priority, ready_at = entry
        del ready[key]
        self._processing[key] = now
        queued = self._queue_times
        if queued is not None:  # Durations.observe, inlined; `done` folds for both lists
            queued.append(now - ready_at)
        return key, priority

    def _pick_with_low(self, now: float) -> Ready[K] | None:
        """Aged LOW items first (the lane permitting), then normal ones, then LOW ones."""
        lane = self._lane
        max_wait = self._max_wait
        entry: Ready[K] | None = None
        if self._n_low and max_wait is not None and now - self._low_since >= max_wait:
            # Perhaps aged: find the oldest (ties by priority; each FIFO's head is its oldest).
            oldest = min(self._low.heads(self._ready), key=_age_rank)
            self._low_since = oldest[2]
            if now - oldest[2] >= max_wait and lane.admit():
                entry = self._low.pop_head(oldest[1])
        if entry is None and self._n_normal:
            self._n_normal -= 1
            return self._normal.pop(self._ready)
        if entry is None and self._n_low and (lane.free or lane.admit()):
            entry = self._low.pop(self._ready)
        if entry is not None:
            self._n_low -= 1
            lane.started(entry[0])
        return entry

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _fold(self) -> None:
        assert self._metrics is not None
        self._metrics.queue_duration.fold()
        self._metrics.work_duration.fold()

    def _compact(self) -> None:
        """Drop the stale entries priority rises left behind, once they dominate."""
        self._normal.compact(self._ready)
        self._low.compact(self._ready)
        self._stale = 0
