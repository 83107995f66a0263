"""PriorityQueue contract: ordering, merging, in-flight keys, delays, rate limiting, shutdown."""

from __future__ import annotations

import asyncio
import random

import pytest

from runtime.clock import FakeClock
from runtime.reconcile import LOW, NORMAL
from runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    PriorityQueue,
    QueueOptions,
    ShutDown,
)
from tests.support.queues import low_lane, settle, take_ready


def make(clock: FakeClock, options: QueueOptions | None = None) -> PriorityQueue[str]:
    return PriorityQueue("test", clock=clock, options=options)


async def test_constants() -> None:
    assert NORMAL == 0
    assert LOW == -100


async def test_higher_priority_first_then_fifo() -> None:
    queue = make(FakeClock())
    queue.add("a")
    queue.add("b", priority=10)
    queue.add("c")
    queue.add("d", priority=LOW)
    queue.add("e", priority=10)
    assert take_ready(queue) == [("b", 10), ("e", 10), ("a", 0), ("c", 0), ("d", LOW)]


async def test_one_entry_per_key() -> None:
    queue = make(FakeClock())
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert take_ready(queue) == [("a", 0), ("b", 0)]


async def test_priority_rise_moves_to_end_of_new_level_and_never_lowers() -> None:
    queue = make(FakeClock())
    queue.add("x", priority=5)
    queue.add("a")
    queue.add("b")
    queue.add("a", priority=5)  # rises: behind x
    queue.add("b", priority=-3)  # a lower priority never lowers
    assert take_ready(queue) == [("x", 5), ("a", 5), ("b", 0)]


async def test_earlier_ready_time_ranks_first_within_a_priority() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("late", after=2.0)
    queue.add("early", after=1.0)
    await clock.advance(1.5)
    queue.add("now")
    await clock.advance(1.0)
    # early was ready at +1, now at +1.5, late at +2: ready time, not add order, decides.
    assert take_ready(queue) == [("early", 0), ("now", 0), ("late", 0)]


async def test_len_counts_ready_items_only() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a")
    queue.add("b", after=5.0)
    assert len(queue) == 1
    await clock.advance(5.0)
    assert len(queue) == 2
    await queue.shutdown()


async def test_readd_merges_ready_time() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("ready")
    queue.add("ready", after=10.0)  # already ready: a new delay is ignored
    queue.add("w1", after=10.0)
    queue.add("w1")  # waiting + immediate add: ready now
    queue.add("w2", after=10.0)
    queue.add("w2", after=3.0)  # shortens
    queue.add("w3", after=3.0)
    queue.add("w3", after=10.0)  # never lengthens
    assert take_ready(queue) == [("ready", 0), ("w1", 0)]
    await clock.advance(3.0)
    assert sorted(take_ready(queue)) == [("w2", 0), ("w3", 0)]
    await queue.shutdown()


async def test_waiting_item_keeps_the_higher_priority() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a", after=1.0, priority=7)
    queue.add("a", after=5.0, priority=1)
    queue.add("b", priority=3)
    await clock.advance(1.0)
    assert take_ready(queue) == [("a", 7), ("b", 3)]


async def test_in_flight_key_is_not_handed_out_again_until_done() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a")
    assert queue.get_nowait() == ("a", 0)
    queue.add("a", priority=3)
    queue.add("a", priority=1)
    queue.add("b")
    assert len(queue) == 1
    assert take_ready(queue) == [("b", 0)]
    assert queue.in_flight == 2
    queue.done("a")
    assert take_ready(queue) == [("a", 3)]  # merged re-adds: highest priority kept


async def test_delayed_readd_while_in_flight_keeps_its_delay() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a")
    queue.get_nowait()
    queue.add("a", after=2.0)
    await clock.advance(1.0)
    queue.done("a")
    assert take_ready(queue) == []
    await clock.advance(1.0)
    assert take_ready(queue) == [("a", 0)]


async def test_done_of_unknown_key_is_harmless() -> None:
    queue = make(FakeClock())
    queue.done("nope")
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue = make(FakeClock())
    getter = asyncio.create_task(queue.get())
    await settle()
    assert not getter.done()
    queue.add("a", priority=2)
    assert await asyncio.wait_for(getter, 1) == ("a", 2)


async def test_get_wakes_when_a_delay_expires() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a", after=3.0)
    getter = asyncio.create_task(queue.get())
    await clock.advance(2.9)
    assert not getter.done()
    await clock.advance(0.1)
    await settle()
    assert getter.done()
    assert getter.result() == ("a", 0)


async def test_cancelled_getter_loses_no_item() -> None:
    queue = make(FakeClock())
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("a")  # wakes `first`...
    first.cancel()  # ...which is cancelled before it runs
    await settle()
    assert first.cancelled()
    assert await asyncio.wait_for(second, 1) == ("a", 0)


async def test_rate_limited_add_uses_the_limiter() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base=1.0, max_delay=60.0
    )
    queue = make(clock, QueueOptions(rate_limiter=limiter))
    queue.add("a", rate_limited=True)  # 1 s
    assert len(queue) == 0
    await clock.advance(1.0)
    assert take_ready(queue) == [("a", 0)]
    queue.done("a")
    queue.add("a", rate_limited=True)  # 2 s
    await clock.advance(1.5)
    assert len(queue) == 0
    await clock.advance(0.5)
    assert take_ready(queue) == [("a", 0)]
    queue.done("a")
    assert queue.num_requeues("a") == 2
    queue.add("a", rate_limited=True, after=0.5)  # limiter says 4 s, after is shorter
    assert queue.num_requeues("a") == 3
    await clock.advance(0.5)
    assert take_ready(queue) == [("a", 0)]
    queue.done("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add("a", rate_limited=True)
    await clock.advance(1.0)
    assert take_ready(queue) == [("a", 0)]


async def test_default_limiter_is_controller_runtime_exponential() -> None:
    clock = FakeClock()
    queue = make(clock)
    for _ in range(3):
        queue.add("a", rate_limited=True)
    assert queue.num_requeues("a") == 3
    # 5 ms → merged with the earliest: the first add's delay wins.
    await clock.advance(0.005)
    assert take_ready(queue) == [("a", 0)]


async def test_shutdown_drops_adds_and_delayed_items_but_hands_out_ready_ones() -> None:
    clock = FakeClock()
    queue = make(clock)
    queue.add("a")
    queue.add("b")
    queue.add("later", after=1.0)
    await queue.shutdown()
    assert queue.shutting_down
    queue.add("c")
    assert await queue.get() == ("a", 0)
    assert await queue.get() == ("b", 0)
    await clock.advance(2.0)
    with pytest.raises(ShutDown):
        await queue.get()
    with pytest.raises(ShutDown):
        queue.get_nowait()


async def test_shutdown_wakes_parked_getters() -> None:
    queue = make(FakeClock())
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await settle()
    await queue.shutdown()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)


async def test_readd_during_processing_is_handed_out_after_shutdown() -> None:
    queue = make(FakeClock())
    queue.add("a")
    key, _ = await queue.get()
    queue.add("a")
    await queue.shutdown()
    queue.done(key)
    assert await queue.get() == ("a", 0)
    queue.done("a")
    with pytest.raises(ShutDown):
        await queue.get()


async def test_drain_waits_for_in_flight_work() -> None:
    queue = make(FakeClock())
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shutdown(drain=True))
    await settle()
    assert not drain.done()
    queue.done("a")
    await asyncio.wait_for(drain, 1)


async def test_plain_shutdown_ends_a_drain_wait() -> None:
    queue = make(FakeClock())
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shutdown(drain=True))
    await settle()
    await queue.shutdown()
    await asyncio.wait_for(drain, 1)
    assert queue.in_flight == 1


async def test_bad_lane_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="LOW-priority lane: token bucket rate"):
        PriorityQueue[str]("q", options=low_lane(qps=-1.0))
    with pytest.raises(ValueError, match="LOW-priority lane: token bucket burst"):
        PriorityQueue[str]("q", options=low_lane(qps=1.0, burst=0))
    with pytest.raises(ValueError, match="LOW lane: max_wait"):
        PriorityQueue[str]("q", options=low_lane(max_wait=-1.0))
    with pytest.raises(ValueError, match="exponential backoff max_delay"):
        PriorityQueue[str]("q", options=QueueOptions(max_backoff=0.001))


async def test_real_workers_never_share_a_key_and_drain_completes() -> None:
    """Several real workers on the real clock; producers re-add keys while they are in flight."""
    queue: PriorityQueue[str] = PriorityQueue("workers")
    rng = random.Random(7)
    keys = [f"k{i}" for i in range(20)]
    active: set[str] = set()
    processed: list[str] = []
    overlaps: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key, _ = await queue.get()
            except ShutDown:
                return
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(rng.random() * 0.002)
            active.discard(key)
            processed.append(key)
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for _ in range(300):
        queue.add(rng.choice(keys), priority=rng.choice([NORMAL, 5, LOW]))
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    await queue.shutdown(drain=True)
    assert queue.in_flight == 0
    assert len(queue) == 0
    await asyncio.wait_for(asyncio.gather(*workers), 5)
    assert overlaps == []
    assert processed
    assert set(processed) <= set(keys)


async def test_worker_loop_with_rate_limited_retries_on_fake_time() -> None:
    """The controller's usage: failures requeue rate-limited, success forgets the backoff."""
    clock = FakeClock()
    queue = make(clock, QueueOptions(
        rate_limiter=ItemExponentialFailureRateLimiter[str](base=1.0, max_delay=60.0)))
    failures_left = {"flaky": 3, "ok": 0}
    attempts: list[tuple[str, float]] = []
    start = clock.now()

    async def worker() -> None:
        while True:
            try:
                key, priority = await queue.get()
            except ShutDown:
                return
            attempts.append((key, clock.now() - start))
            try:
                if failures_left[key]:
                    failures_left[key] -= 1
                    queue.add(key, priority=priority, rate_limited=True)
                else:
                    queue.forget(key)
            finally:
                queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(2)]
    queue.add("flaky")
    queue.add("ok")
    await settle()
    for _ in range(80):
        await clock.advance(0.1)
    assert attempts == [("flaky", 0.0), ("ok", 0.0)] + [
        ("flaky", pytest.approx(t)) for t in (1.0, 3.0, 7.0)
    ]
    assert queue.num_requeues("flaky") == 0
    await queue.shutdown(drain=True)
    await asyncio.gather(*workers)


async def test_non_numeric_max_wait_is_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="LOW lane: max_wait must be a number"):
        PriorityQueue[str]("q", options=low_lane(max_wait="soon"))


class _LateTimerClock(FakeClock):
    """Time that passes while the loop is busy: `now` moves at once, and sleepers wake only
    when the test lets them (the queue's timer, late on a loaded event loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[asyncio.Future[None]] = []

    async def sleep(self, seconds: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.held.append(fut)
        await fut

    def pass_time(self, seconds: float) -> None:
        self._now += seconds

    def release(self) -> None:
        for fut in self.held:
            if not fut.done():
                fut.set_result(None)
        self.held.clear()


@pytest.mark.parametrize("promoter", ["len", "add", "done"])
async def test_a_delayed_item_made_ready_before_the_timer_runs_still_wakes_a_getter(
        promoter: str) -> None:
    """Reading the depth, adding another key or finishing one makes due entries ready; the
    timer, running late, then has nothing left to promote. The parked getter must still get
    the item (it once waited until the next add: a retry stuck for good)."""
    clock = _LateTimerClock()
    queue: PriorityQueue[str] = PriorityQueue("test", clock=clock)
    queue.add("busy")
    assert await queue.get() == ("busy", NORMAL)
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("retry", after=5.0)
    await asyncio.sleep(0)
    assert not getter.done()
    clock.pass_time(6.0)
    if promoter == "len":
        assert len(queue) == 1
    elif promoter == "add":
        queue.add("busy", after=60.0)  # in flight: deferred, and it promotes what is due
    else:
        queue.done("busy")
    clock.release()
    assert await asyncio.wait_for(getter, timeout=2.0) == ("retry", NORMAL)
