"""The whole queue contract against a small reference model (hypothesis stateful testing).

The model keeps one record per queued key: priority, ready time and a sequence number bumped on
every change that re-ranks it. An entry is ready once its ready time has passed; ready entries
leave by (-priority, ready time, sequence). Keys in flight collect re-adds in a separate record
that is applied at `done`. Limiter delays and LOW-lane token spending are recomputed here from
first principles, with a bucket of the model's own.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from runtime.clock import FakeClock
from runtime.reconcile import LOW, NORMAL
from runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    LowLaneOptions,
    PriorityQueue,
    QueueOptions,
    ShutDown,
)

T = TypeVar("T")

KEYS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
PRIORITIES = st.sampled_from([LOW, -1, NORMAL, 1, 5])
AFTERS = st.sampled_from([0.0, 0.0, 0.25, 1.0, 2.5])
STEPS = st.sampled_from([0.1, 0.25, 0.5, 1.0, 3.0])

BASE, MAX_DELAY = 0.5, 4.0


@dataclass
class Record:
    priority: int
    ready_at: float
    seq: int


class ModelBucket:
    """Token bucket arithmetic, written out independently of runtime.tokenbucket."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst, self.tokens, self.last = rate, burst, float(burst), now

    def try_take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0 - 1e-9:
            self.tokens -= 1.0
            return True
        return False


class QueueMachine(RuleBasedStateMachine):
    max_wait: float | None = None
    qps: float | None = None
    burst = 2

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.queue: PriorityQueue[str] = PriorityQueue(
            "model",
            clock=self.clock,
            options=QueueOptions(
                rate_limiter=ItemExponentialFailureRateLimiter(base=BASE, max_delay=MAX_DELAY),
                low_lane=LowLaneOptions(
                    qps=self.qps,
                    burst=self.burst,
                    max_wait=math.inf if self.max_wait is None else self.max_wait,
                ),
            ),
        )
        self.bucket = (
            ModelBucket(self.qps, self.burst, self.clock.now()) if self.qps is not None else None
        )
        self.entries: dict[str, Record] = {}
        self.deferred: dict[str, Record] = {}
        self.processing: set[str] = set()
        self.failures: dict[str, int] = {}
        self.seq = 0
        self.shut = False

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def teardown(self) -> None:
        self.run(self.queue.shutdown())
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.run(asyncio.sleep(0))
        self.loop.close()

    # ---- model --------------------------------------------------------------------------

    def model_add(self, key: str, priority: int, after: float, rate_limited: bool) -> None:
        if self.shut:
            return
        delay = after
        if rate_limited:
            n = self.failures.get(key, 0)
            self.failures[key] = n + 1
            limited = min(BASE * 2.0**n, MAX_DELAY)
            delay = min(after, limited) if after > 0 else limited
        now = self.clock.now()
        ready_at = now + delay if delay > 0 else now
        if key in self.processing:
            d = self.deferred.get(key)
            if d is None:
                self.deferred[key] = Record(priority, ready_at, 0)
            else:
                d.priority = max(d.priority, priority)
                d.ready_at = min(d.ready_at, ready_at)
            return
        e = self.entries.get(key)
        if e is None:
            self.entries[key] = Record(priority, ready_at, self.next_seq())
        elif e.ready_at <= now:
            if priority > e.priority:
                e.priority, e.ready_at, e.seq = priority, now, self.next_seq()
        else:
            changed = priority > e.priority
            e.priority = max(e.priority, priority)
            if delay <= 0:
                e.ready_at, e.seq = now, self.next_seq()
            elif changed or ready_at < e.ready_at:
                e.ready_at, e.seq = min(ready_at, e.ready_at), self.next_seq()

    def ready(self) -> dict[str, Record]:
        now = self.clock.now()
        return {k: e for k, e in self.entries.items() if e.ready_at <= now}

    def token(self) -> bool:
        return self.bucket is None or self.bucket.try_take(self.clock.now())

    def model_take(self) -> str | None:
        now = self.clock.now()
        ready = self.ready()
        low = {k: e for k, e in ready.items() if e.priority < NORMAL}
        normal = {k: e for k, e in ready.items() if e.priority >= NORMAL}

        def rank(k: str) -> tuple[int, float, int]:
            return (-ready[k].priority, ready[k].ready_at, ready[k].seq)

        if low and self.max_wait is not None:
            oldest = min(low, key=lambda k: (low[k].ready_at, -low[k].priority, low[k].seq))
            if now - low[oldest].ready_at >= self.max_wait and self.token():
                return oldest
        if normal:
            return min(normal, key=rank)
        if low and self.token():
            return min(low, key=rank)
        return None

    # ---- rules --------------------------------------------------------------------------

    @rule(key=KEYS, priority=PRIORITIES, after=AFTERS, rate_limited=st.booleans())
    def add(self, key: str, priority: int, after: float, rate_limited: bool) -> None:
        async def go() -> None:
            self.queue.add(key, priority=priority, after=after, rate_limited=rate_limited)

        self.run(go())
        self.model_add(key, priority, after, rate_limited)

    @rule()
    def get(self) -> None:
        expected = self.model_take()
        try:
            got: tuple[str, int] | str = self.queue.get_nowait()
        except asyncio.QueueEmpty:
            got = "empty"
        except ShutDown:
            got = "shutdown"
        if expected is None:
            assert got == ("shutdown" if self.shut and not self.ready() else "empty")
            return
        assert got == (expected, self.entries[expected].priority)
        assert expected not in self.processing  # never two workers on one key
        del self.entries[expected]
        self.processing.add(expected)

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.queue.done(key)
        self.processing.discard(key)
        d = self.deferred.pop(key, None)
        now = self.clock.now()
        if d is not None and (d.ready_at <= now or not self.shut):
            self.entries[key] = Record(d.priority, max(d.ready_at, now), self.next_seq())

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)
        self.failures.pop(key, None)

    @rule(step=STEPS)
    def advance(self, step: float) -> None:
        self.run(self.clock.advance(step))

    @precondition(lambda self: not self.shut)
    @rule()
    def shutdown(self) -> None:
        self.run(self.queue.shutdown())
        self.shut = True
        now = self.clock.now()
        self.entries = {k: e for k, e in self.entries.items() if e.ready_at <= now}

    @precondition(lambda self: self.shut and not self.processing)
    @rule()
    def drain_returns_when_nothing_is_in_flight(self) -> None:
        self.run(asyncio.wait_for(self.queue.shutdown(drain=True), 1))

    # ---- invariants ---------------------------------------------------------------------

    @invariant()
    def lengths_match(self) -> None:
        assert len(self.queue) == len(self.ready())
        assert self.queue.in_flight == len(self.processing)

    @invariant()
    def backoff_matches(self) -> None:
        for key in "abcdef":
            assert self.queue.num_requeues(key) == self.failures.get(key, 0)


class PromotingQueueMachine(QueueMachine):
    max_wait = 2.0


class PacedQueueMachine(QueueMachine):
    max_wait = 2.0
    qps = 2.0
    burst = 2


class PacedWithoutPromotionMachine(QueueMachine):
    qps = 1.0
    burst = 1


@pytest.mark.parametrize(
    "machine",
    [QueueMachine, PromotingQueueMachine, PacedQueueMachine, PacedWithoutPromotionMachine],
)
def test_queue_matches_model(machine: type[QueueMachine]) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=120,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_model_bucket_is_not_trivially_true() -> None:
    bucket = ModelBucket(1.0, 1, 0.0)
    assert bucket.try_take(0.0)
    assert not bucket.try_take(0.5)
    assert bucket.try_take(1.0)
    assert math.isclose(bucket.tokens, 0.0)
