"""EventRecorder on fake time against an in-memory Event store speaking the client's
create/patch contract."""

from __future__ import annotations

import asyncio
import copy
import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.clock import FakeClock
from runtime.errors import AlreadyExists, ApiError, Forbidden, NotFound, ServerError
from runtime.events import EventRecorder
from runtime.resources import EVENTS, INGRESSES, Resource

INGRESS = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web", "namespace": "shop", "uid": "u-1",
                        "resourceVersion": "42"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "u-2"}}


class EventStore:
    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[str] = []
        self.fail: list[ApiError] = []  # raised by the next calls, in order
        self.gate: asyncio.Event | None = None  # when set to an unset Event, calls wait on it

    async def _enter(self, verb: str) -> None:
        self.calls.append(verb)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise self.fail.pop(0)

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None, *,
                     timeout: float | None = None) -> dict[str, Any]:
        assert res == EVENTS
        await self._enter("create")
        key = (namespace or "", obj["metadata"]["name"])
        if key in self.events:
            raise AlreadyExists("exists")
        self.events[key] = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None,
                    timeout: float | None = None) -> dict[str, Any]:
        assert patch_type == "merge"
        await self._enter("patch")
        key = (namespace or "", name)
        if key not in self.events:
            raise NotFound(f'events "{name}" not found')
        self.events[key].update(patch)
        return copy.deepcopy(self.events[key])


async def settle(rounds: int = 30) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def dropped(registry: CollectorRegistry, cause: str) -> float | None:
    return registry.get_sample_value("event_recorder_dropped_total",
                                     {"component": "aiolbc", "cause": cause})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> EventStore:
    return EventStore()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def recorder(store: EventStore, clock: FakeClock, registry: CollectorRegistry) -> EventRecorder:
    return EventRecorder(store, component="aiolbc", host="node-a", clock=clock,
                         registry=registry, retry_delay=1.0)


async def test_same_event_twice_is_one_event_with_count_two(
        recorder: EventRecorder, store: EventStore, clock: FakeClock) -> None:
    recorder.start()
    recorder.event(INGRESS, "Normal", "SuccessfullyReconciled", "Successfully reconciled")
    await settle()
    await clock.advance(7.0)
    recorder.event(INGRESS, "Normal", "SuccessfullyReconciled", "Successfully reconciled")
    await recorder.stop()
    assert store.calls == ["create", "patch"]
    assert len(store.events) == 1
    (namespace, name), event = next(iter(store.events.items()))
    assert namespace == "shop"
    assert re.fullmatch(r"web\.[0-9a-f]+", name)
    assert event["count"] == 2
    assert event["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["lastTimestamp"] == "2023-11-14T22:13:27Z"
    assert event["involvedObject"] == {"kind": "Ingress", "apiVersion": "networking.k8s.io/v1",
                                       "name": "web", "namespace": "shop", "uid": "u-1",
                                       "resourceVersion": "42"}
    assert event["source"] == {"component": "aiolbc", "host": "node-a"}
    assert event["type"] == "Normal"
    assert event["metadata"]["namespace"] == "shop"


async def test_different_reasons_and_types_make_separate_events(
        recorder: EventRecorder, store: EventStore) -> None:
    async with recorder:
        recorder.event(INGRESS, "Normal", "SuccessfullyReconciled", "ok")
        recorder.event(INGRESS, "Warning", "FailedBuildModel", "bad annotation")
        recorder.event(INGRESS, "Warning", "FailedBuildModel", "another message")
    assert store.calls == ["create", "create", "create"]
    by_reason = sorted((e["reason"], e["type"], e["message"]) for e in store.events.values())
    assert by_reason == [("FailedBuildModel", "Warning", "another message"),
                         ("FailedBuildModel", "Warning", "bad annotation"),
                         ("SuccessfullyReconciled", "Normal", "ok")]
    assert all(e["count"] == 1 for e in store.events.values())


async def test_repeat_after_the_window_creates_a_new_event(
        store: EventStore, clock: FakeClock, registry: CollectorRegistry) -> None:
    recorder = EventRecorder(store, component="aiolbc", host="h", clock=clock,
                             registry=registry, aggregation_window=60.0)
    recorder.start()
    recorder.event(INGRESS, "Normal", "Synced", "ok")
    await settle()
    await clock.advance(61.0)
    recorder.event(INGRESS, "Normal", "Synced", "ok")
    await recorder.stop()
    assert store.calls == ["create", "create"]
    assert len(store.events) == 2


async def test_cluster_scoped_objects_record_into_default(
        recorder: EventRecorder, store: EventStore) -> None:
    async with recorder:
        recorder.event(NODE, "Warning", "NodeNotReady", "not ready")
    (namespace, _), event = next(iter(store.events.items()))
    assert namespace == "default"
    assert "namespace" not in event["involvedObject"]


async def test_list_items_without_kind_take_it_from_the_resource(
        recorder: EventRecorder, store: EventStore, registry: CollectorRegistry) -> None:
    bare = {"metadata": {"name": "web", "namespace": "shop"}}
    async with recorder:
        recorder.event(bare, "Normal", "Synced", "ok")
        recorder.event(bare, "Normal", "Synced", "ok", resource=INGRESSES)
        recorder.event(INGRESS, "Info", "Synced", "ok")  # not a valid type
    assert len(store.events) == 1
    assert next(iter(store.events.values()))["involvedObject"]["kind"] == "Ingress"
    assert dropped(registry, "invalid") == 2


async def test_recording_never_blocks_and_a_full_buffer_drops(
        store: EventStore, clock: FakeClock, registry: CollectorRegistry) -> None:
    store.gate = asyncio.Event()  # the API server does not answer
    recorder = EventRecorder(store, component="aiolbc", host="h", clock=clock,
                             registry=registry, buffer_size=2)
    recorder.start()
    recorder.event(INGRESS, "Normal", "Reason0", "m")
    await settle()  # the writer picks it up and hangs on the API server
    for i in range(1, 5):
        recorder.event(INGRESS, "Normal", f"Reason{i}", "m")  # returns at once, no await
    await settle()
    # One in flight, two buffered, two dropped.
    assert store.calls == ["create"]
    assert dropped(registry, "buffer_full") == 2
    store.gate.set()
    await recorder.stop()
    assert sorted(e["reason"] for e in store.events.values()) == ["Reason0", "Reason1",
                                                                  "Reason2"]


async def test_spam_filter_allows_a_burst_then_one_per_refill(
        recorder: EventRecorder, store: EventStore, clock: FakeClock,
        registry: CollectorRegistry) -> None:
    recorder.start()
    for i in range(30):
        recorder.event(INGRESS, "Normal", f"R{i}", "m")
    await settle(200)
    assert len(store.events) == 25
    assert dropped(registry, "spam") == 5
    await clock.advance(300.0)
    recorder.event(INGRESS, "Normal", "Later", "m")
    recorder.event(INGRESS, "Normal", "Later2", "m")
    # Another object has its own bucket.
    recorder.event(NODE, "Normal", "Other", "m")
    await recorder.stop()
    reasons = {e["reason"] for e in store.events.values()}
    assert "Later" in reasons
    assert "Later2" not in reasons
    assert "Other" in reasons


async def test_transient_errors_are_retried_and_others_logged_not_raised(
        recorder: EventRecorder, store: EventStore, clock: FakeClock,
        registry: CollectorRegistry) -> None:
    recorder.start()
    store.fail = [ServerError("etcdserver: request timed out", code=500)]
    recorder.event(INGRESS, "Normal", "First", "m")
    await settle()
    await clock.advance(1.0)
    await settle()
    assert store.calls == ["create", "create"]
    store.fail = [Forbidden('events is forbidden: User "x" cannot create')]
    recorder.event(INGRESS, "Normal", "Second", "m")
    await settle()
    await recorder.stop()
    assert [e["reason"] for e in store.events.values()] == ["First"]
    errors = registry.get_sample_value("event_recorder_write_errors_total",
                                       {"component": "aiolbc"})
    assert errors == 1


async def test_patch_of_an_expired_event_recreates_it(
        recorder: EventRecorder, store: EventStore) -> None:
    recorder.start()
    recorder.event(INGRESS, "Normal", "Synced", "ok")
    await settle()
    store.events.clear()  # the API server's event TTL removed it
    recorder.event(INGRESS, "Normal", "Synced", "ok")
    await recorder.stop()
    assert store.calls == ["create", "patch", "create"]
    assert next(iter(store.events.values()))["count"] == 2


async def test_stop_flushes_buffered_events_and_later_events_are_ignored(
        recorder: EventRecorder, store: EventStore) -> None:
    for i in range(3):
        recorder.event(INGRESS, "Normal", f"R{i}", "m")  # before start: buffered
    recorder.start()
    await recorder.stop()
    assert len(store.events) == 3
    recorder.event(INGRESS, "Normal", "AfterStop", "m")
    await settle()
    assert len(store.events) == 3


def test_settings_are_validated(store: EventStore) -> None:
    with pytest.raises(ValueError, match="component"):
        EventRecorder(store, component="", registry=CollectorRegistry())
    with pytest.raises(ValueError, match="buffer_size"):
        EventRecorder(store, component="x", buffer_size=0, registry=CollectorRegistry())
