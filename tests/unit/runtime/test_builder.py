"""ControllerBuilder: one way to wire a controller. Driven through real informers fed by their
ReflectorSink calls (no API server: nothing listens on the client's port) and a real queue on a
fake clock."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from runtime.builder import ControllerBuilder
from runtime.client import KubeClient
from runtime.clock import FakeClock
from runtime.controller import ControllerOptions, controller_options
from runtime.kubeconfig import Credentials, ServerEndpoint
from runtime.manager import Manager
from runtime.predicates import Event, EventKind, LabelChanged
from runtime.reconcile import LOW, NORMAL, Request, Result, reconcile_priority
from runtime.resources import CONFIGMAPS, NAMESPACES
from runtime.workqueue import ItemExponentialFailureRateLimiter, LowLaneOptions, QueueOptions
from tests.support.queues import settle
from tests.support.reconcilers import Recording


class Nothing:
    async def reconcile(self, request: Request) -> Result:
        return Result()


class Gate:
    def __init__(self) -> None:
        self.closed = True

    def time_to_open(self) -> float:
        return 5.0 if self.closed else 0.0


@pytest.fixture
async def manager() -> AsyncIterator[Manager]:
    endpoint = ServerEndpoint(host="http://127.0.0.1:9", ssl=None, server_hostname=None,
                              proxy=None)
    clock = FakeClock()
    client = KubeClient(endpoint, Credentials(Configuration()), clock=clock)
    yield Manager(client, registry=CollectorRegistry(), clock=clock)
    await client.close()


def cm(name: str, rv: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                         "labels": labels}}


class Recorder:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[tuple[str, int, float]] = []

    async def reconcile(self, request: Request) -> Result:
        self.calls.append((request.key, reconcile_priority(), self.clock.now()))
        return Result()


async def test_wiring_options_and_filters(manager: Manager) -> None:
    clock = manager.clock
    assert isinstance(clock, FakeClock)
    configmaps = manager.informer(CONFIGMAPS)
    namespaces = manager.informer(NAMESPACES)
    gate = Gate()
    events: list[EventKind] = []

    def seen(event: Event) -> bool:
        events.append(event.kind)
        return True

    def configmaps_of(ns: dict[str, Any]) -> list[Request]:
        return [Request(ns["metadata"]["name"], "settings")]

    options = ControllerOptions(max_concurrent_reconciles=3, queue=QueueOptions(
        max_backoff=2.0,
        low_lane=LowLaneOptions(qps=1.0, burst=1, max_wait=math.inf, gate=gate,
                                max_in_flight=2)))
    recorder = Recorder(clock)
    controller = (ControllerBuilder(manager, "mirror")
                  .for_(configmaps, predicates=[LabelChanged()])
                  .watches(namespaces, configmaps_of)
                  .with_event_filter(seen)
                  .with_options(options)
                  .complete(recorder))
    assert manager.controllers == [controller]
    assert controller.name == controller.queue.name == "mirror"

    start = clock.now()
    controller.start()  # as a leading manager does: handlers registered, workers running
    for informer in (configmaps, namespaces):
        informer.start()
    configmaps.on_replace([cm("a", "1", team="red")], "1")
    namespaces.on_replace([{"metadata": {"name": "ns2", "resourceVersion": "1"}}], "1")
    configmaps.on_event("MODIFIED", cm("a", "2", team="red"))  # no label change: filtered
    configmaps.on_event("MODIFIED", cm("b", "3", team="blue"))  # an add
    await settle()
    assert sorted(events, key=str) == sorted([EventKind.INITIAL_ADD, EventKind.INITIAL_ADD,
                                              EventKind.UPDATE, EventKind.ADD], key=str)
    # The queue is the one the options describe: the real change goes at once, the initial
    # adds (LOW) wait for the shared gate, then leave one bucket token apart.
    assert recorder.calls == [("ns/b", NORMAL, start)]
    gate.closed = False
    await clock.advance(5.0)
    await clock.advance(1.0)
    assert recorder.calls[1:] == [("ns/a", LOW, start + 5.0), ("ns2/settings", LOW, start + 6.0)]
    await controller.stop(timeout=1)
    for informer in (configmaps, namespaces):
        await informer.stop()


async def test_the_worker_count_reaches_the_controller(manager: Manager) -> None:
    controller = (ControllerBuilder(manager, "c")
                  .for_(manager.informer(CONFIGMAPS))
                  .with_options(ControllerOptions(max_concurrent_reconciles=4))
                  .complete(Nothing()))
    assert manager.registry.get_sample_value(
        "controller_runtime_max_concurrent_reconciles", {"controller": "c"}) == 4
    assert controller.queue.options.low_lane.max_wait == 60.0


async def test_mistakes_are_refused(manager: Manager) -> None:
    informer = manager.informer(CONFIGMAPS)
    with pytest.raises(ValueError, match="needs a name"):
        ControllerBuilder(manager, " ")
    with pytest.raises(ValueError, match="for_\\(\\) was already called"):
        ControllerBuilder(manager, "c").for_(informer).for_(informer)
    with pytest.raises(ValueError, match="watches nothing"):
        ControllerBuilder(manager, "c").complete(Nothing())
    builder = ControllerBuilder(manager, "c").for_(informer)
    builder.complete(Nothing())
    with pytest.raises(ValueError, match="already complete"):
        builder.complete(Nothing())
    with pytest.raises(ValueError, match="already has a controller named 'c'"):
        ControllerBuilder(manager, "c").for_(informer).complete(Nothing())
    with pytest.raises(ValueError, match="max_concurrent_reconciles must be an integer >= 1"):
        (ControllerBuilder(manager, "d").for_(informer)
         .with_options(ControllerOptions(max_concurrent_reconciles=0)).complete(Nothing()))
    assert [c.name for c in manager.controllers] == ["c"]


def test_defaults_live_in_one_function() -> None:
    options = controller_options()
    assert options.max_concurrent_reconciles == 1
    lane = options.queue.low_lane
    assert (lane.qps, lane.burst, lane.max_wait, lane.gate, lane.max_in_flight) == (
        None, 10, 60.0, None, None)
    assert options.queue.max_backoff == 1000.0
    limiter = options.queue.rate_limiter
    assert isinstance(limiter, ItemExponentialFailureRateLimiter)
    assert [limiter.when("k") for _ in range(2)] == [0.005, 0.01]
    # Each defaulting gives a fresh limiter: two controllers never share failure counts.
    assert controller_options().queue.rate_limiter is not limiter
    short = controller_options(ControllerOptions(queue=QueueOptions(max_backoff=0.02)))
    assert short.queue.rate_limiter is not None
    assert [short.queue.rate_limiter.when("k") for _ in range(4)] == [0.005, 0.01, 0.02, 0.02]


async def test_a_paced_lane_waits_a_bounded_while_for_real_changes_of_any_controller(
        manager: Manager) -> None:
    clock = manager.clock
    assert isinstance(clock, FakeClock)
    paced = ControllerOptions(max_concurrent_reconciles=2, queue=QueueOptions(
        low_lane=LowLaneOptions(qps=100.0, burst=10, max_wait=math.inf)))
    verifier, changer = Recording(keyed=True), Recording(hold={"real"}, keyed=True)
    verifying = (ControllerBuilder(manager, "verifying").for_(manager.informer(CONFIGMAPS))
                 .with_options(paced).complete(verifier))
    changing = (ControllerBuilder(manager, "changing").for_(manager.informer(NAMESPACES))
                .complete(changer))
    manager.foreground.max_hold = 2.0
    verifying.start()
    changing.start()
    informers = (manager.informer(CONFIGMAPS), manager.informer(NAMESPACES))
    for informer in informers:  # synced, and the (empty) replays delivered: settled
        informer.start()
        informer.on_replace([], "1")
    await settle()
    try:
        changing.enqueue(Request("", "real"), priority=NORMAL)
        await settle()
        assert changer.seen == [("real", NORMAL)]
        verifying.enqueue(Request("ns", "a"), priority=LOW)
        await settle()
        await clock.advance(1.0)
        assert verifier.seen == []  # held: a real change is being reconciled
        changer.release.set()
        await settle()
        await clock.advance(0.1)
        assert verifier.seen == [("ns/a", LOW)]  # let go once it is done
        # A real change that goes on and on holds the lane only `max_hold` at a stretch.
        changer.release.clear()
        changing.enqueue(Request("", "real"), priority=NORMAL)
        await settle()
        verifying.enqueue(Request("ns", "b"), priority=LOW)
        await settle()
        await clock.advance(1.0)
        assert verifier.seen == [("ns/a", LOW)]
        await clock.advance(1.5)
        assert verifier.seen == [("ns/a", LOW), ("ns/b", LOW)]
    finally:
        changer.release.set()
        await verifying.stop(timeout=1)
        await changing.stop(timeout=1)
        for informer in informers:
            await informer.stop()


async def test_a_paced_lane_waits_while_a_controller_is_still_settling(
        manager: Manager) -> None:
    """Until the caches are replayed to the handlers, nobody knows which requests are real
    changes: a verification waits for that too (a bounded while)."""
    clock = manager.clock
    assert isinstance(clock, FakeClock)
    paced = ControllerOptions(max_concurrent_reconciles=2, queue=QueueOptions(
        low_lane=LowLaneOptions(qps=100.0, burst=10, max_wait=math.inf)))
    verifier = Recording(keyed=True)
    configmaps = manager.informer(CONFIGMAPS)
    verifying = (ControllerBuilder(manager, "verifying").for_(configmaps)
                 .with_options(paced).complete(verifier))
    verifying.start()
    configmaps.start()
    try:
        verifying.enqueue(Request("ns", "a"), priority=LOW)
        await settle()
        await clock.advance(1.0)
        assert verifying.settling()  # the informer has not listed: nothing replayed yet
        assert verifier.seen == []
        configmaps.on_replace([], "1")
        await settle()
        await clock.advance(0.1)
        assert not verifying.settling()
        assert verifier.seen == [("ns/a", LOW)]
    finally:
        await verifying.stop(timeout=1)
        await configmaps.stop()


def test_the_manager_s_informers_know_when_a_real_change_is_reconciled(manager: Manager) -> None:
    """Their handler tasks replay the caches in shorter turns then (runtime/informer.py)."""
    informer = manager.informer(CONFIGMAPS)
    assert informer.busy is not None
    assert not informer.busy()
    with manager.foreground.reconciling(NORMAL):
        assert informer.busy()
    with manager.foreground.reconciling(LOW):
        assert not informer.busy()
