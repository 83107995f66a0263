"""Priority decisions made off the event path (runtime/prioritydecisions.py), through a real
Controller and PriorityQueue: what is deferred, what settles a pending decision, how decisions
give way to real changes, and the LOW lane's gate on real changes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from runtime import prioritydecisions
from runtime.clock import FakeClock
from runtime.controller import Controller
from runtime.handlers import EnqueueForObject, PriorityFn
from runtime.predicates import Event, EventKind
from runtime.prioritydecisions import Deferred, Foreground
from runtime.reconcile import LOW, NORMAL, Request
from runtime.workqueue import AllGates, PriorityQueue
from tests.support.queues import settle
from tests.support.reconcilers import Recording


def _obj(name: str, checkpoint: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1",
                         "annotations": {"c": checkpoint} if checkpoint else {}}}


def _controller(reconciler: Recording, *, workers: int = 2,
                foreground: Foreground | None = None) -> Controller:
    registry = CollectorRegistry()
    return Controller("things", reconciler, max_concurrent_reconciles=workers,
                      queue=PriorityQueue("things", registry=registry), registry=registry,
                      foreground=foreground)


def _priority(decide: Callable[[dict[str, Any]], int]) -> PriorityFn:
    """Like a checkpoint priority: nothing stored is NORMAL at once, the rest deferred."""
    def priority(request: Request, event: Event, default: int) -> int | Deferred:
        obj = event.obj
        if event.kind not in (EventKind.INITIAL_ADD, EventKind.RESYNC):
            return default
        if not obj["metadata"]["annotations"]:
            return NORMAL
        return Deferred(lambda: decide(obj))
    return priority


async def test_a_deferred_request_is_queued_with_its_decision_and_a_cheap_one_at_once() -> None:
    decided: list[str] = []

    def decide(obj: dict[str, Any]) -> int:
        decided.append(obj["metadata"]["name"])
        return LOW if obj["metadata"]["annotations"]["c"] == "same" else NORMAL

    controller = _controller(Recording(), workers=1)
    handler = EnqueueForObject(controller, priority=_priority(decide))
    controller.decisions.start()
    try:
        handler.on_add(_obj("new"), True)
        handler.on_add(_obj("same", "same"), True)
        handler.on_add(_obj("changed", "other"), True)
        # In the handler: only the cheap decision; the other two wait for the task.
        assert decided == []
        assert len(controller.queue) == 1
        assert len(controller.decisions) == 2
        await settle()
        assert decided == ["same", "changed"]
        assert len(controller.decisions) == 0
        taken = [controller.queue.get_nowait() for _ in range(3)]
        assert sorted(taken) == sorted([(Request("ns", "new"), NORMAL),
                                        (Request("ns", "changed"), NORMAL),
                                        (Request("ns", "same"), LOW)])
    finally:
        await controller.decisions.stop()


async def test_a_real_event_settles_a_pending_decision_which_is_never_made() -> None:
    decided: list[str] = []

    def decide(obj: dict[str, Any]) -> int:
        decided.append(obj["metadata"]["name"])
        return LOW

    controller = _controller(Recording(), workers=1)
    handler = EnqueueForObject(controller, priority=_priority(decide))
    handler.on_add(_obj("web", "same"), True)
    assert len(controller.decisions) == 1
    handler.on_update(_obj("web", "same"), {**_obj("web", "same"), "metadata": {
        **_obj("web", "same")["metadata"], "resourceVersion": "2"}})
    assert len(controller.decisions) == 0
    controller.decisions.start()
    try:
        await settle()
        assert decided == []
        assert controller.queue.get_nowait() == (Request("ns", "web"), NORMAL)
    finally:
        await controller.decisions.stop()


async def test_one_request_deferred_twice_takes_the_higher_decision() -> None:
    controller = _controller(Recording(), workers=1)
    request = Request("ns", "g")
    calls: list[int] = []

    def deciding(value: int) -> Deferred:
        def decide() -> int:
            calls.append(value)
            return value
        return Deferred(decide)

    controller.defer(request, deciding(LOW))
    controller.defer(request, deciding(NORMAL))
    controller.enqueue(Request("ns", "other"), priority=LOW)  # a LOW enqueue settles nothing
    controller.decisions.start()
    try:
        await settle()
        assert sorted(calls) == [LOW, NORMAL]
        taken = {controller.queue.get_nowait() for _ in range(2)}
        assert taken == {(request, NORMAL), (Request("ns", "other"), LOW)}
    finally:
        await controller.decisions.stop()


async def test_a_failing_decision_is_a_real_change_and_the_others_go_on() -> None:
    controller = _controller(Recording(), workers=1)

    def broken() -> int:
        raise KeyError("spec")

    controller.defer(Request("ns", "broken"), Deferred(broken))
    controller.defer(Request("ns", "fine"), Deferred(lambda: LOW))
    controller.decisions.start()
    try:
        await settle()
        taken = {controller.queue.get_nowait() for _ in range(2)}
        assert taken == {(Request("ns", "broken"), NORMAL), (Request("ns", "fine"), LOW)}
    finally:
        await controller.decisions.stop()


async def test_decisions_take_short_turns_while_a_real_change_is_reconciled() -> None:
    """While a NORMAL reconcile is in flight, the loop comes back to it after at most a busy
    slice of decisions; the decisions are all made in the end."""
    reconciler = Recording(hold={"real"})
    controller = _controller(reconciler, workers=1)

    def slow() -> int:  # a model build: about a millisecond of CPU
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass
        return LOW

    made: list[int] = []
    turns: list[int] = []

    def deciding() -> int:
        made.append(1)
        return slow()

    controller.start()
    try:
        controller.enqueue(Request("ns", "real"), priority=NORMAL)
        await settle()
        assert reconciler.seen == [("real", NORMAL)]
        assert controller.foreground.busy
        for i in range(40):
            controller.defer(Request("ns", f"unchanged{i}"), Deferred(deciding))
        for _ in range(200):
            before = len(made)
            await asyncio.sleep(0)
            turns.append(len(made) - before)
            if not len(controller.decisions):
                break
        # Each decision takes at least 1 ms and a busy slice is 2 ms: at most two a turn.
        assert max(turns) <= round(prioritydecisions.BUSY_SLICE / 0.001)
        assert len(made) == 40
        reconciler.release.set()
        await settle()
        assert not controller.foreground.busy
    finally:
        reconciler.release.set()
        await controller.stop()


async def test_stop_drops_pending_decisions() -> None:
    controller = _controller(Recording(), workers=1)
    controller.start()
    controller.decisions.defer(Request("ns", "a"), Deferred(lambda: LOW))
    await controller.stop()
    assert len(controller.decisions) == 0


async def test_the_foreground_gate_holds_a_paced_lane_for_a_bounded_while() -> None:
    clock = FakeClock()
    foreground = Foreground(clock=clock, max_hold=2.0)
    assert foreground.time_to_open() == 0.0
    with foreground.reconciling(LOW):  # a verification is not a real change
        assert foreground.time_to_open() == 0.0
    with foreground.reconciling(NORMAL):
        assert 0.0 < foreground.time_to_open() <= 2.0
        await clock.advance(1.0)
        with foreground.reconciling(NORMAL):  # overlapping: the same stretch
            assert 0.0 < foreground.time_to_open() <= 1.0
            await clock.advance(1.0)
            assert foreground.time_to_open() == 0.0  # held long enough: open anyway
    assert foreground.time_to_open() == 0.0
    with foreground.reconciling(NORMAL):  # a new stretch holds again
        assert foreground.time_to_open() > 0.0


def test_all_gates_open_when_every_one_does() -> None:
    class Fixed:
        def __init__(self, wait: float) -> None:
            self.wait = wait

        def time_to_open(self) -> float:
            return self.wait

    assert AllGates(Fixed(0.0), Fixed(0.0)).time_to_open() == 0.0
    assert AllGates(Fixed(0.5), Fixed(1.5)).time_to_open() == 1.5
    assert AllGates().time_to_open() == 0.0
