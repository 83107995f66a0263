"""The LOW lane: paced by a token bucket, never delaying normal items, never starved."""

from __future__ import annotations

import asyncio
import math

import pytest

from runtime.clock import FakeClock
from runtime.reconcile import LOW, NORMAL
from runtime.workqueue import PriorityQueue, ShutDown
from tests.support.queues import low_lane, parked_getter, settle, take_ready


async def test_lane_boundary_is_below_normal() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(
        "q", clock=clock, options=low_lane(qps=1.0, burst=1, max_wait=math.inf)
    )
    queue.add("zero", priority=NORMAL)
    queue.add("minus-one", priority=-1)
    queue.add("low", priority=LOW)
    # NORMAL is unpaced; -1 is in the lane and takes the only token; LOW waits for the next.
    assert take_ready(queue) == [("zero", 0), ("minus-one", -1)]
    await clock.advance(1.0)
    assert take_ready(queue) == [("low", LOW)]


async def test_low_handouts_never_exceed_burst_plus_rate() -> None:
    clock = FakeClock()
    qps, burst = 4.0, 3
    queue: PriorityQueue[str] = PriorityQueue(
        "q", clock=clock, options=low_lane(qps=qps, burst=burst)
    )
    start = clock.now()
    for i in range(25):
        queue.add(f"low{i}", priority=LOW)
    handed: list[float] = []

    async def worker() -> None:
        while True:
            try:
                key, _ = await queue.get()
            except ShutDown:
                return
            handed.append(clock.now() - start)
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(3)]
    await settle()
    for _ in range(160):
        await clock.advance(0.05)
        elapsed = clock.now() - start
        assert len(handed) <= burst + qps * elapsed + 1e-6
    assert len(handed) == 25
    # Paced, but not slower than the bucket allows: item i leaves as soon as its token is due.
    for i, t in enumerate(handed):
        due = max(0.0, (i - burst + 1) / qps)
        assert due - 1e-6 <= t <= due + 0.05 + 1e-6
    await queue.shutdown()
    await asyncio.gather(*workers)


async def test_parked_getter_wakes_when_the_next_token_is_due_without_spinning() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(
        "q", clock=clock, options=low_lane(qps=0.5, burst=1)
    )
    queue.add("a", priority=LOW)
    queue.add("b", priority=LOW)
    assert take_ready(queue) == [("a", LOW)]
    getter = asyncio.create_task(queue.get())
    await settle()
    # One timer sleeping until the token, nothing polling.
    assert clock.sleepers == 1
    await clock.advance(1.9)
    assert not getter.done()
    await clock.advance(0.1)
    await settle()
    assert getter.result() == ("b", LOW)


async def test_normal_items_reach_a_getter_parked_on_the_bucket() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(
        "q", clock=clock, options=low_lane(qps=0.01, burst=1)
    )
    queue.add("l1", priority=LOW)
    queue.add("l2", priority=LOW)
    take_ready(queue)
    getter = asyncio.create_task(queue.get())
    await settle()
    assert not getter.done()
    queue.add("n", priority=NORMAL)
    await settle()
    assert getter.result() == ("n", NORMAL)
    await queue.shutdown()


async def test_normal_items_are_never_delayed_by_the_low_bucket() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue(
        "q", clock=clock, options=low_lane(qps=0.1, burst=1, max_wait=5.0)
    )
    for i in range(10):
        queue.add(f"low{i}", priority=LOW)
    for i in range(200):
        queue.add(f"n{i}", priority=NORMAL if i % 2 else 10)
    got = take_ready(queue)
    # All normal items at once (no time passed); the LOW lane got exactly its one token.
    assert len([k for k, p in got if p >= NORMAL]) == 200
    assert len([k for k, p in got if p == LOW]) == 1
    # Even with aged LOW items waiting, an empty bucket never holds normal items back.
    await clock.advance(10.0)
    for i in range(50):
        queue.add(f"m{i}")
    got = take_ready(queue)
    assert [k for k, _ in got if k.startswith("m")] == [f"m{i}" for i in range(50)]
    assert len([k for k, p in got if p == LOW]) == 1  # the one token refilled in 10 s
    await queue.shutdown()


async def saturate(
    queue: PriorityQueue[str], clock: FakeClock, *, seconds: float, dt: float
) -> dict[str, float]:
    """Normal traffic always ready, workers taking everything: when did each LOW item leave?"""
    start = clock.now()
    low_out: dict[str, float] = {}
    n = 0
    for _ in range(round(seconds / dt)):
        for _ in range(4):
            queue.add(f"n{n}")
            n += 1
        for _ in range(3):  # fewer gets than adds: normal items are always waiting
            key, priority = queue.get_nowait()
            if priority < NORMAL:
                low_out[key] = clock.now() - start
            queue.done(key)
        assert len(queue) >= 1
        await clock.advance(dt)
    return low_out


async def test_low_items_are_not_starved_by_saturating_normal_traffic() -> None:
    clock = FakeClock()
    qps, burst, max_wait, dt = 5.0, 5, 2.0, 0.01
    queue: PriorityQueue[str] = PriorityQueue(
        "q",
        clock=clock,
        options=low_lane(qps=qps, burst=burst, max_wait=max_wait),
    )
    lows = [f"low{i}" for i in range(15)]
    for key in lows:
        queue.add(key, priority=LOW)
    out = await saturate(queue, clock, seconds=6.0, dt=dt)
    assert sorted(out) == sorted(lows)
    for i, key in enumerate(lows):
        # The bucket is full when the items age: the first `burst` leave at max_wait, the rest
        # one token period apart after that.
        due = max_wait + max(0, i - burst + 1) / qps
        # Held back while normal traffic runs, then out within about max_wait (+ one period).
        assert max_wait - dt <= out[key] <= due + 1 / qps + dt
    assert max(out.values()) >= max_wait + (len(lows) - burst) / qps - dt  # still paced


async def test_without_promotion_low_items_starve() -> None:
    """The controller-runtime behaviour the promotion fixes (#3496)."""
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock,
                                              options=low_lane(max_wait=math.inf))
    for i in range(5):
        queue.add(f"low{i}", priority=LOW)
    out = await saturate(queue, clock, seconds=3.0, dt=0.01)
    assert out == {}


async def test_promoted_items_keep_their_priority_and_go_oldest_first() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock,
                                              options=low_lane(max_wait=1.0))
    queue.add("older", priority=-200)
    await clock.advance(0.5)
    queue.add("newer", priority=LOW)
    queue.add("high", priority=50)
    await clock.advance(0.6)
    # older is aged (1.1 s), newer not yet (0.6 s): older jumps even the priority-50 item.
    assert take_ready(queue) == [("older", -200), ("high", 50), ("newer", LOW)]


@pytest.mark.parametrize("max_wait", [0.5, math.inf])
async def test_unpaced_lane_only_orders(max_wait: float) -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock,
                                              options=low_lane(max_wait=max_wait))
    for i in range(100):
        queue.add(f"l{i}", priority=LOW)
    queue.add("n")
    got = take_ready(queue)
    assert got[0] == ("n", NORMAL)
    assert len(got) == 101


class SharedBudget:
    """A gate several queues share, spent by whoever does the work (here: the test)."""

    def __init__(self, clock: FakeClock, rate: float) -> None:
        self.clock, self.rate, self.tokens, self.at = clock, rate, 1.0, clock.now()

    def _refill(self) -> None:
        self.tokens = min(1.0, self.tokens + (self.clock.now() - self.at) * self.rate)
        self.at = self.clock.now()

    def spend(self, n: float) -> None:
        self._refill()
        self.tokens -= n

    def time_to_open(self) -> float:
        self._refill()
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate


async def test_a_closed_gate_holds_low_items_but_never_normal_ones() -> None:
    clock = FakeClock()
    gate = SharedBudget(clock, rate=1.0)
    gate.spend(5)  # 5 calls of debt: closed for 5 s
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock,
                                              options=low_lane(qps=100.0, gate=gate))
    queue.add("low", priority=LOW)
    queue.add("normal")
    assert take_ready(queue) == [("normal", NORMAL)]
    task, got = await parked_getter(queue)
    await clock.advance(4.9)
    assert got == []
    await clock.advance(0.2)  # the gate's own timer wakes the parked getter
    await task
    assert got == [("low", LOW)]


async def test_one_gate_paces_the_low_lanes_of_several_queues() -> None:
    clock = FakeClock()
    gate = SharedBudget(clock, rate=2.0)
    queues = [PriorityQueue[str](f"q{i}", clock=clock, options=low_lane(gate=gate))
              for i in range(3)]
    for i, queue in enumerate(queues):
        for j in range(10):
            queue.add(f"{i}-{j}", priority=LOW)
    handed: list[float] = []

    async def worker(queue: PriorityQueue[str]) -> None:
        while True:
            key, _ = await queue.get()
            gate.spend(4)  # each verification costs four calls
            handed.append(clock.now())
            queue.done(key)

    tasks = [asyncio.create_task(worker(q)) for q in queues]
    start = clock.now()
    for _ in range(300):
        await clock.advance(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    # 2 calls/s shared at 4 calls each: one verification per 2 s, whichever queue holds it; the
    # three queues may all pass the open gate at the same instant once.
    elapsed = clock.now() - start
    assert len(handed) <= 3 + elapsed / 2.0
    assert len(handed) >= elapsed / 2.0 - 3


async def test_low_items_in_flight_are_capped_so_a_worker_stays_free() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock,
                                              options=low_lane(max_in_flight=2, max_wait=0.0))
    for i in range(4):
        queue.add(f"low{i}", priority=LOW)
    await clock.advance(1.0)  # all of them old enough to be promoted: the cap still holds
    first = take_ready(queue)
    assert [p for _, p in first] == [LOW, LOW]
    queue.add("normal")
    assert take_ready(queue) == [("normal", NORMAL)]
    task, got = await parked_getter(queue)
    assert got == []
    queue.done(first[0][0])  # a LOW slot frees up: the parked getter takes the next LOW item
    await task
    assert [p for _, p in got] == [LOW]
    with pytest.raises(ValueError, match="LOW lane: max_in_flight must be an integer >= 1"):
        PriorityQueue[str]("bad", options=low_lane(max_in_flight=0))
