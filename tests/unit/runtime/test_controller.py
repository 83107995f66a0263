"""Controller retry rules, priorities and metrics, driven through a real PriorityQueue on a fake
clock; the reconciler is a small scripted one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import structlog
from prometheus_client import CollectorRegistry

from runtime.clock import FakeClock
from runtime.controller import Controller
from runtime.handlers import Deferred, EnqueueForObject, EnqueueFromMap
from runtime.reconcile import (
    LOW,
    NORMAL,
    ReconcileError,
    ReconcilePriority,
    Request,
    Result,
    TerminalError,
    current_reconcile,
    reconcile_id,
    reconcile_priority,
)
from runtime.workqueue import PriorityQueue
from tests.support.queues import low_lane


class Scripted:
    """Runs `script[key]` (a list of outcomes consumed in order) for each reconcile."""

    def __init__(self, script: dict[str, list[Callable[[], Result]]]) -> None:
        self.script = script
        self.calls: list[tuple[str, float]] = []
        self.clock: FakeClock | None = None

    async def reconcile(self, request: Request) -> Result:
        assert self.clock is not None
        self.calls.append((request.key, self.clock.now()))
        outcomes = self.script.get(request.key, [])
        return outcomes.pop(0)() if outcomes else Result()


def _raise(exc: Exception) -> Callable[[], Result]:
    def fail() -> Result:
        raise exc
    return fail


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def _settle(clock: FakeClock, seconds: float = 0.0) -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    if seconds:
        await clock.advance(seconds)
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_success_error_requeue_after_and_terminal(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    rec = Scripted({
        "ns/ok": [],
        "ns/flaky": [_raise(ReconcileError("aws said no")), _raise(ReconcileError("again"))],
        "ns/later": [lambda: Result(requeue_after=30.0)],
        "ns/bad": [_raise(TerminalError("invalid annotation"))],
    })
    rec.clock = clock
    ctrl = Controller("svc", rec, clock=clock, registry=registry, max_concurrent_reconciles=2)
    ctrl.start()
    for key in ("ns/ok", "ns/flaky", "ns/later", "ns/bad"):
        ctrl.enqueue(Request(*key.split("/")))
    await _settle(clock)
    # flaky retried after 5 ms, then 10 ms (per-key exponential backoff)
    await _settle(clock, 0.005)
    await _settle(clock, 0.010)
    flaky = [t for k, t in rec.calls if k == "ns/flaky"]
    assert len(flaky) == 3
    assert flaky[1] - flaky[0] == pytest.approx(0.005)
    assert flaky[2] - flaky[1] == pytest.approx(0.010)
    await _settle(clock, 30.0)
    assert [k for k, _ in rec.calls].count("ns/later") == 2
    assert [k for k, _ in rec.calls].count("ns/bad") == 1  # terminal: never retried
    await _settle(clock, 1000.0)
    assert [k for k, _ in rec.calls].count("ns/bad") == 1
    await ctrl.stop(timeout=1)
    assert _sample(registry, "controller_runtime_reconcile_total",
                   controller="svc", result="error") == 3
    assert _sample(registry, "controller_runtime_reconcile_total",
                   controller="svc", result="requeue_after") == 1
    assert _sample(registry, "controller_runtime_terminal_reconcile_errors_total",
                   controller="svc") == 1
    assert _sample(registry, "controller_runtime_reconcile_errors_total", controller="svc") == 3
    assert _sample(registry, "controller_runtime_max_concurrent_reconciles",
                   controller="svc") == 2
    assert _sample(registry, "controller_runtime_reconcile_time_seconds_count",
                   controller="svc") == len(rec.calls)


async def test_unexpected_exception_is_a_counted_panic_and_retried(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    rec = Scripted({"a": [_raise(KeyError("bug"))]})
    rec.clock = clock
    ctrl = Controller("c", rec, clock=clock, registry=registry)
    ctrl.start()
    ctrl.enqueue(Request("", "a"))
    await _settle(clock)
    await _settle(clock, 0.005)
    assert [k for k, _ in rec.calls] == ["a", "a"]
    assert _sample(registry, "controller_runtime_reconcile_panics_total", controller="c") == 1
    await ctrl.stop(timeout=1)


async def test_requeue_keeps_the_priority_it_was_taken_with(clock: FakeClock) -> None:
    seen: list[tuple[str, int]] = []

    class Recorder:
        async def reconcile(self, request: Request) -> Result:
            return Result(requeue_after=1.0) if request.name == "low" and not seen else Result()

    ctrl = Controller("c", Recorder(), clock=clock, registry=CollectorRegistry())
    ctrl.enqueue(Request("", "low"), priority=LOW)
    key, prio = await ctrl.queue.get()
    seen.append((key.name, prio))
    ctrl.queue.done(key)
    ctrl.enqueue(Request("", "low"), priority=LOW)
    ctrl.start()
    await _settle(clock)
    await _settle(clock, 1.0)
    assert len(ctrl.queue) == 0
    assert seen == [("low", LOW)]
    await ctrl.stop(timeout=1)


async def test_stop_lets_in_flight_work_finish_and_starts_nothing_new(clock: FakeClock) -> None:
    release = asyncio.Event()
    finished: list[str] = []

    class Slow:
        async def reconcile(self, request: Request) -> Result:
            await release.wait()
            finished.append(request.name)
            return Result()

    ctrl = Controller("c", Slow(), clock=clock, registry=CollectorRegistry())
    ctrl.start()
    ctrl.enqueue(Request("", "first"))
    await _settle(clock)
    ctrl.enqueue(Request("", "second"))
    stopping = asyncio.create_task(ctrl.stop(timeout=5))
    await _settle(clock)
    release.set()
    await stopping
    assert finished == ["first"]


async def test_abort_cancels_in_flight_work(clock: FakeClock) -> None:
    cancelled = asyncio.Event()

    class Hangs:
        async def reconcile(self, request: Request) -> Result:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return Result()

    ctrl = Controller("c", Hangs(), clock=clock, registry=CollectorRegistry())
    ctrl.start()
    ctrl.enqueue(Request("", "x"))
    await _settle(clock)
    await ctrl.abort()
    assert cancelled.is_set()


def _obj(name: str, rv: str, ns: str = "default") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}


class Recording:
    def __init__(self) -> None:
        self.added: list[tuple[Request, int]] = []

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        self.added.append((request, priority))

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        self.enqueue(request, priority=decision())  # decided at once


def test_default_handler_priorities() -> None:
    target = Recording()
    handler = EnqueueForObject(target)
    handler.on_add(_obj("a", "1"), True)
    handler.on_add(_obj("b", "2"), False)
    handler.on_update(_obj("a", "1"), _obj("a", "1"))
    handler.on_update(_obj("a", "1"), _obj("a", "3"))
    handler.on_delete(_obj("b", "2"))
    assert [p for _, p in target.added] == [LOW, NORMAL, LOW, NORMAL, NORMAL]
    assert target.added[0][0] == Request("default", "a")


def test_priority_hook_overrides_default() -> None:
    target = Recording()
    handler = EnqueueForObject(target, priority=lambda request, event, default: NORMAL)
    handler.on_add(_obj("a", "1"), True)
    assert target.added == [(Request("default", "a"), NORMAL)]


def test_map_handler_wakes_old_and_new_owners() -> None:
    target = Recording()

    def owners(obj: dict[str, object]) -> list[Request]:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        return [Request("default", str(meta["labels"]["svc"]))]

    handler = EnqueueFromMap(target, owners)
    old = {"metadata": {"name": "s", "namespace": "default", "resourceVersion": "1",
                        "labels": {"svc": "one"}}}
    new = {"metadata": {"name": "s", "namespace": "default", "resourceVersion": "2",
                        "labels": {"svc": "two"}}}
    handler.on_update(old, new)
    assert {r.name for r, _ in target.added} == {"one", "two"}


def test_a_given_queue_is_used_even_when_empty(clock: FakeClock) -> None:
    queue: PriorityQueue[Request] = PriorityQueue("paced", clock=clock, options=low_lane(qps=1.0))
    assert len(queue) == 0
    ctrl = Controller("c", Scripted({}), clock=clock, registry=CollectorRegistry(), queue=queue)
    assert ctrl.queue is queue



async def test_the_running_reconcile_knows_its_priority_and_id(clock: FakeClock) -> None:
    seen: list[tuple[str, int, str, object]] = []

    class Curious:
        async def reconcile(self, request: Request) -> Result:
            bound = structlog.contextvars.get_contextvars().get("reconcile_id")
            seen.append((request.name, reconcile_priority(), reconcile_id(), bound))
            return Result()

    ctrl = Controller("c", Curious(), clock=clock, registry=CollectorRegistry())
    ctrl.enqueue(Request("", "low"), priority=LOW)
    ctrl.enqueue(Request("", "normal"))
    ctrl.start()
    await _settle(clock)
    await ctrl.stop(timeout=1)
    assert [(name, prio) for name, prio, _, _ in seen] == [("normal", NORMAL), ("low", LOW)]
    ids = [rid for _, _, rid, _ in seen]
    assert all(rid and rid == bound for _, _, rid, bound in seen)
    assert len(set(ids)) == 2
    # Outside a reconcile: the neutral answers.
    assert (reconcile_priority(), reconcile_id()) == (NORMAL, "")


def test_current_reconcile_restores_the_outer_values() -> None:
    with current_reconcile(priority=ReconcilePriority(LOW), reconcile_id="outer"):
        with current_reconcile(priority=ReconcilePriority(7), reconcile_id="inner"):
            assert (reconcile_priority(), reconcile_id()) == (7, "inner")
        assert (reconcile_priority(), reconcile_id()) == (LOW, "outer")
    assert (reconcile_priority(), reconcile_id()) == (NORMAL, "")


def test_request_for_hostile_objects() -> None:
    assert Request.for_object({"metadata": {"namespace": 3, "name": "x"}}) == Request("", "x")
    assert Request.for_object({"metadata": []}) == Request("", "")
    assert str(Request("ns", "a")) == "ns/a"
