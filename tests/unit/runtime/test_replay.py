"""The start-up replay through a real Controller and queue: a request the replay already
enqueued is not enqueued again by another object's replay at the same or a lower priority
(which would re-run a reconcile in flight), but a higher priority, any real event, and every
replay of a source that was not whole at start still are."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from runtime.controller import Controller
from runtime.handlers import EnqueueFromMap
from runtime.reconcile import LOW, NORMAL, Request
from runtime.workqueue import PriorityQueue
from tests.support.queues import settle
from tests.support.reconcilers import Recording

GROUP = Request("ns", "group")


class Source:
    """A cache whose objects are replayed to a handler as it is added, as an informer does
    (`delay`: that many seconds later, as an informer's handler task would); `populated` says
    whether it held its initial list when the controller started."""

    def __init__(self, objects: list[dict[str, Any]], *, populated: bool = True,
                 delay: float | None = None) -> None:
        self.objects = objects
        self.populated = populated
        self.delay = delay
        self.handlers: list[Any] = []

    def add_handler(self, handler: Any) -> Any:
        self.handlers.append(handler)
        if self.delay is None:
            self._replay(handler)
        else:
            asyncio.get_running_loop().call_later(self.delay, self._replay, handler)
        return handler

    def _replay(self, handler: Any) -> None:
        for obj in self.objects:
            handler.on_add(obj, True)

    def remove_handler(self, registration: Any) -> None:
        self.handlers.remove(registration)


def _obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"}}


def _controller(reconciler: Recording) -> Controller:
    registry = CollectorRegistry()
    return Controller("groups", reconciler, max_concurrent_reconciles=2,
                      queue=PriorityQueue("groups", registry=registry), registry=registry)


def _handler(controller: Controller, priority: int) -> EnqueueFromMap:
    """Every object maps to the one group, at `priority`."""
    return EnqueueFromMap(controller, lambda obj: [GROUP],
                          priority=lambda request, event, default: priority)


async def test_replays_of_a_request_in_flight_do_not_run_it_again() -> None:
    reconciler = Recording(hold={"group"})
    controller = _controller(reconciler)
    # The group's Ingress replays at once; its Services' replay arrives once the group's
    # reconcile is in flight (the case that re-ran it).
    controller.watch(Source([_obj("ingress")]), _handler(controller, NORMAL))
    controller.watch(Source([_obj("svc-a"), _obj("svc-b")], delay=0.01),
                     _handler(controller, NORMAL))
    controller.start()
    await asyncio.sleep(0.05)
    assert reconciler.seen == [("group", NORMAL)]  # in flight, the replay over
    assert controller.queue.in_flight == 1
    assert len(controller.queue) == 0
    reconciler.release.set()
    await settle(40)
    await controller.stop(timeout=1.0)
    assert reconciler.seen == [("group", NORMAL)]


async def test_a_higher_priority_and_a_real_event_still_run_it_again() -> None:
    reconciler = Recording(hold={"group"})
    controller = _controller(reconciler)
    low = _handler(controller, LOW)
    normal = _handler(controller, NORMAL)
    controller.watch(Source([_obj("ingress")]), low)
    controller.start()
    await settle()
    assert reconciler.seen == [("group", LOW)]
    low.on_add(_obj("again"), True)  # the same priority: nothing new
    normal.on_add(_obj("svc"), True)  # higher: a real change for the group
    normal.on_add(_obj("svc-2"), True)  # and that one once only
    reconciler.release.set()
    await settle(40)
    assert reconciler.seen == [("group", LOW), ("group", NORMAL)]
    normal.on_update(_obj("svc"), {**_obj("svc"), "metadata": {
        **_obj("svc")["metadata"], "resourceVersion": "2"}})  # a real event, not a replay
    await settle(40)
    await controller.stop(timeout=1.0)
    assert reconciler.seen == [("group", LOW), ("group", NORMAL), ("group", NORMAL)]


async def test_a_source_not_whole_at_start_is_never_deduplicated() -> None:
    reconciler = Recording(hold={"group"})
    controller = _controller(reconciler)
    # An informer still listing when the controller starts: its initial list arrives after
    # the group's reconcile began, which could not have read it.
    late = Source([_obj("listed-later")], populated=False, delay=0.01)
    controller.watch(Source([_obj("ingress")]), _handler(controller, NORMAL))
    controller.watch(late, _handler(controller, NORMAL))
    controller.start()
    await asyncio.sleep(0.05)
    reconciler.release.set()
    await settle(40)
    await controller.stop(timeout=1.0)
    assert reconciler.seen == [("group", NORMAL), ("group", NORMAL)]
