"""A LOW item lifted to NORMAL leaves at once, even while every getter waits on the lane."""

from __future__ import annotations

import asyncio
import math

from runtime.clock import FakeClock
from runtime.reconcile import LOW, NORMAL
from runtime.workqueue import LowLaneOptions, PriorityQueue, QueueOptions
from tests.support.queues import parked_getter, settle


class _Closed:
    """A lane gate that never opens (a spent verification budget)."""

    def time_to_open(self) -> float:
        return 1000.0


async def test_a_low_item_lifted_to_normal_wakes_a_parked_getter() -> None:
    clock = FakeClock()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=clock, options=QueueOptions(
        low_lane=LowLaneOptions(qps=0.001, burst=1, max_wait=math.inf, gate=_Closed())))
    queue.add("binding", priority=LOW)
    task, got = await parked_getter(queue)
    assert got == []  # the gate holds the LOW item back
    queue.add("binding", priority=NORMAL)  # e.g. its deletion started
    await settle()
    assert got == [("binding", NORMAL)]
    await asyncio.wait_for(task, 1)
    await queue.shutdown()
