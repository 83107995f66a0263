"""The hot-loop guard: a key that keeps waking itself is slowed down, with a metric; others are
not affected."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from runtime.clock import FakeClock
from runtime.controller import Controller
from runtime.hotloop import HotLoopGuard, HotLoopOptions
from runtime.reconcile import Request, Result


async def test_guard_defers_past_the_limit_and_forgets_as_the_window_moves() -> None:
    clock = FakeClock()
    guard: HotLoopGuard[str] = HotLoopGuard(
        HotLoopOptions(window=10.0, limit=3, base_delay=1.0, max_delay=8.0), clock=clock)
    assert [guard.admit("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert [guard.admit("k") for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert guard.admit("other") == 0.0
    await clock.advance(11.0)
    assert guard.admit("k") == 0.0
    guard.prune()
    off: HotLoopGuard[str] = HotLoopGuard(HotLoopOptions(limit=None), clock=clock)
    assert off.admit("k") == 0.0


class SelfWaking:
    """Each reconcile of "hot" wakes it again at once, as an unfiltered write of its own would."""

    def __init__(self) -> None:
        self.controller: Controller | None = None
        self.runs: dict[str, int] = {}

    async def reconcile(self, request: Request) -> Result:
        self.runs[request.key] = self.runs.get(request.key, 0) + 1
        if request.key == "hot" and self.controller is not None:
            self.controller.enqueue(request)
        return Result()


async def test_a_self_waking_key_is_slowed_and_counted() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    rec = SelfWaking()
    ctrl = Controller("c", rec, clock=clock, registry=registry,
                      hot_loop=HotLoopOptions(window=60.0, limit=5, base_delay=1.0,
                                              max_delay=60.0))
    rec.controller = ctrl
    ctrl.start()
    ctrl.enqueue(Request("", "hot"))
    for _ in range(200):
        await asyncio.sleep(0)
    assert rec.runs["hot"] == 5  # then deferred, not spinning
    ctrl.enqueue(Request("", "calm"))
    for _ in range(50):
        await asyncio.sleep(0)
    assert rec.runs["calm"] == 1  # other keys go at once
    deferred = registry.get_sample_value("aiolbc_controller_hot_loop_deferrals_total",
                                         {"controller": "c"})
    assert deferred == 1
    await clock.advance(1.0)
    for _ in range(50):
        await asyncio.sleep(0)
    assert rec.runs["hot"] == 5  # the deferral itself counts: the next wait is longer
    await ctrl.abort()
