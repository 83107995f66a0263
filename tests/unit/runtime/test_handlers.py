"""Event handlers: deletion is never LOW, predicates filter events, and a user function that
raises costs one log line and that object only."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from runtime.clock import FakeClock
from runtime.failures import FailureLog
from runtime.handlers import CHUNK, Deferred, EnqueueForObject, EnqueueFromMap
from runtime.predicates import (
    Event,
    EventKind,
    GenerationChanged,
    LabelChanged,
    ResourceVersionChanged,
)
from runtime.reconcile import LOW, NORMAL, Request
from runtime.store import DeletedFinalStateUnknown


class Recording:
    def __init__(self) -> None:
        self.added: list[tuple[Request, int]] = []

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        self.added.append((request, priority))

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        self.enqueue(request, priority=decision())  # decided at once


def obj(name: str, rv: str = "1", *, deleting: bool = False, generation: int = 1,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv,
                            "generation": generation, "labels": labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def always_low(request: Request, event: Event, default: int) -> int:
    return LOW


def test_a_terminating_object_is_never_low() -> None:
    target = Recording()
    handler = EnqueueForObject(target)
    handler.on_add(obj("a", deleting=True), True)  # initial list
    handler.on_update(obj("a", deleting=True), obj("a", deleting=True))  # resync
    handler.on_add(obj("b"), True)  # not terminating: LOW as ever
    handler.on_update(obj("b"), obj("b"))
    assert [p for _, p in target.added] == [NORMAL, NORMAL, LOW, LOW]


def test_a_priority_function_cannot_make_deletion_low() -> None:
    seen: list[int] = []

    def low_but_record(request: Request, event: Event, default: int) -> int:
        seen.append(default)
        return LOW

    target = Recording()
    for handler in (EnqueueForObject(target, priority=low_but_record),
                    EnqueueFromMap(target, lambda o: [Request("ns", "owner")],
                                   priority=low_but_record)):
        handler.on_add(obj("a", deleting=True), True)
        handler.on_update(obj("a", "1"), obj("a", "2", deleting=True))
        handler.on_delete(obj("a"))
        handler.on_delete(DeletedFinalStateUnknown("ns/a", obj("a")))
        handler.on_add(obj("b"), False)  # a live object: the function decides
    assert [p for _, p in target.added] == [NORMAL] * 4 + [LOW] + [NORMAL] * 4 + [LOW]
    # The function is told the default it would override: NORMAL for deletions.
    assert seen == [NORMAL] * 5 * 2


def test_predicates_must_all_pass_and_see_the_event() -> None:
    target = Recording()
    events: list[Event] = []

    def spy(event: Event) -> bool:
        events.append(event)
        return True

    handler = EnqueueForObject(target, predicates=[spy, GenerationChanged()])
    handler.on_add(obj("a"), True)
    handler.on_update(obj("a", "1"), obj("a", "2"))  # status only: generation unchanged
    handler.on_update(obj("a", "2"), obj("a", "3", generation=2))
    handler.on_update(obj("a", "3", generation=2), obj("a", "3", generation=2))  # resync
    handler.on_delete(obj("a", "3"))
    assert [p for _, p in target.added] == [LOW, NORMAL, LOW, NORMAL]
    assert [e.kind for e in events] == [EventKind.INITIAL_ADD, EventKind.UPDATE,
                                        EventKind.UPDATE, EventKind.RESYNC, EventKind.DELETE]
    assert events[1].old is not None
    assert events[1].old["metadata"]["resourceVersion"] == "1"
    assert events[0].old is None


def test_resource_version_changed_drops_resyncs_only() -> None:
    target = Recording()
    handler = EnqueueFromMap(target, lambda o: [Request("ns", "owner")],
                             predicates=[ResourceVersionChanged()])
    handler.on_add(obj("a"), True)
    handler.on_update(obj("a"), obj("a"))
    handler.on_update(obj("a", "1"), obj("a", "2"))
    handler.on_delete(obj("a", "2"))
    assert [p for _, p in target.added] == [LOW, NORMAL, NORMAL]


def test_map_handler_filters_before_mapping() -> None:
    mapped: list[str] = []

    def owners(o: dict[str, Any]) -> list[Request]:
        mapped.append(o["metadata"]["resourceVersion"])
        return [Request("ns", o["metadata"]["labels"].get("owner", "none"))]

    target = Recording()
    handler = EnqueueFromMap(target, owners, predicates=[LabelChanged()])
    handler.on_update(obj("s", "1", labels={"owner": "x"}), obj("s", "2", labels={"owner": "x"}))
    handler.on_update(obj("s", "2", labels={"owner": "x"}), obj("s", "3", labels={"owner": "y"}))
    assert mapped == ["3", "2"]  # the filtered update was never mapped
    assert {r.name for r, _ in target.added} == {"x", "y"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def warnings(logs: list[MutableMapping[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["event"], e["object"], e["error"]) for e in logs if e["log_level"] == "warning"]


async def test_a_failing_map_function_skips_that_object_for_that_handler(
        clock: FakeClock) -> None:
    def owners(o: dict[str, Any]) -> list[Request]:
        return [Request("ns", o["metadata"]["labels"]["owner"])]  # KeyError without the label

    target = Recording()
    other = Recording()
    failures = FailureLog(clock=clock, interval=60.0)
    handler = EnqueueFromMap(target, owners, failures=failures)
    second = EnqueueForObject(other, failures=failures)
    with capture_logs() as logs:
        for h in (handler, second):
            h.on_add(obj("bad"), False)
            h.on_add(obj("good", labels={"owner": "o"}), False)
        handler.on_update(obj("bad", "1"), obj("bad", "2"))  # fails again: not logged again
        await clock.advance(61.0)
        handler.on_delete(obj("bad", "3"))  # the interval passed: logged once more
    assert target.added == [(Request("ns", "o"), NORMAL)]
    assert [r.name for r, _ in other.added] == ["bad", "good"]
    assert warnings(logs) == [
        ("map function failed on an object", "ns/bad", "KeyError: 'owner'")] * 2
    assert "Traceback" not in repr(logs)


def test_a_failing_priority_function_gives_normal(clock: FakeClock) -> None:
    def explode(request: Request, event: Event, default: int) -> int:
        if event.obj["metadata"]["name"] == "bad":
            raise ValueError("checkpoint\nmultiline detail")
        return LOW

    target = Recording()
    handler = EnqueueForObject(target, priority=explode,
                               failures=FailureLog(clock=clock))
    with capture_logs() as logs:
        handler.on_add(obj("bad"), True)
        handler.on_add(obj("good"), True)
    assert target.added == [(Request("ns", "bad"), NORMAL), (Request("ns", "good"), LOW)]
    assert warnings(logs) == [("priority function failed on an object", "ns/bad",
                               "ValueError: checkpoint")]


def test_a_failing_predicate_lets_the_event_through(clock: FakeClock) -> None:
    def broken(event: Event) -> bool:
        raise RuntimeError("filter bug")

    target = Recording()
    handler = EnqueueForObject(target, predicates=[broken],
                               failures=FailureLog(clock=clock))
    with capture_logs() as logs:
        handler.on_update(obj("a", "1"), obj("a", "2"))
    assert target.added == [(Request("ns", "a"), NORMAL)]
    assert [(e["event"], e["predicate"]) for e in logs] == [
        ("event predicate failed on an object", "broken")]


def test_priority_function_is_not_asked_when_nothing_is_mapped() -> None:
    asked: list[str] = []

    def priority(request: Request, event: Event, default: int) -> int:
        asked.append(event.obj["metadata"]["name"])
        return default

    target = Recording()
    handler = EnqueueFromMap(target, lambda o: [], priority=priority)
    handler.on_add(obj("not-ours"), True)
    assert asked == []
    assert target.added == []


def test_hostile_objects_reach_the_handler_without_raising() -> None:
    target = Recording()
    handler = EnqueueForObject(target, predicates=[GenerationChanged(), LabelChanged()])
    handler.on_add({"metadata": "nope"}, True)
    handler.on_update({"metadata": {"resourceVersion": 1, "labels": ["x"]}},
                      {"metadata": {"resourceVersion": 2, "deletionTimestamp": "now",
                                    "generation": "many"}})
    handler.on_delete({})
    # The add passes, the update changed no generation (neither is a number), the delete passes.
    assert target.added == [(Request("", ""), LOW), (Request("", ""), NORMAL)]


def test_the_priority_function_prices_each_mapped_request() -> None:
    asked: list[tuple[str, EventKind, int]] = []

    def per_group(request: Request, event: Event, default: int) -> int:
        asked.append((request.name, event.kind, default))
        return LOW if request.name == "quiet" else NORMAL

    target = Recording()
    handler = EnqueueFromMap(target, lambda o: [Request("", "quiet"), Request("", "busy"),
                                                 Request("", "quiet")], priority=per_group)
    handler.on_add(obj("a"), True)
    assert target.added == [(Request("", "quiet"), LOW), (Request("", "busy"), NORMAL)]
    assert asked == [("quiet", EventKind.INITIAL_ADD, LOW), ("busy", EventKind.INITIAL_ADD, LOW)]


async def test_a_large_fan_out_is_enqueued_in_chunks_giving_the_loop_back() -> None:
    many = [Request("", f"g{i:03d}") for i in range(3 * CHUNK + 1)]
    target = Recording()
    handler = EnqueueFromMap(target, lambda o: many)
    rest = handler.on_add(obj("class"), False)
    assert [r for r, _ in target.added] == many[:CHUNK]  # at once; the rest is awaited
    assert rest is not None
    other_ran: list[int] = []

    async def other() -> None:
        other_ran.append(len(target.added))

    task = asyncio.ensure_future(other())
    await rest
    await task
    assert [r for r, _ in target.added] == many
    assert other_ran
    assert other_ran[0] < len(many)
