"""What the informer tells handlers when its store changes, driven through the ReflectorSink
calls (on_replace / on_event) without an API server; plus the reflector's backoff."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from runtime.client import KubeClient
from runtime.clock import FakeClock
from runtime.informer import InformerSettings, SharedInformer, SharedInformerFactory
from runtime.kubeconfig import Credentials, ServerEndpoint
from runtime.reflector import Backoff, ReflectorSettings
from runtime.resources import NODES, SERVICES
from runtime.store import DeletedFinalStateUnknown


def svc(name: str, rv: str, namespace: str = "default") -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace,
                                            "resourceVersion": rv}}


class Recorder:
    def __init__(self, informer: SharedInformer | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.informer = informer
        self.store_was_current = True

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        self._check(obj)
        self.events.append(("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"],
                            is_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._check(new)
        self.events.append(("update", new["metadata"]["name"], old["metadata"]["resourceVersion"],
                            new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key, obj.obj["metadata"]["resourceVersion"]))
        else:
            self.events.append(("delete", obj["metadata"]["name"]))

    def _check(self, obj: dict[str, Any]) -> None:
        # The store must already hold at least this version when a handler hears of it.
        if self.informer is not None:
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            cached = self.informer.store.get(key)
            if cached is None or int(cached["metadata"]["resourceVersion"]) < int(
                    obj["metadata"]["resourceVersion"]):
                self.store_was_current = False


async def settle(informer: SharedInformer) -> None:
    """Let the handler tasks drain their buffers."""
    for _ in range(200):
        await asyncio.sleep(0)
        if all(h.pending == 0 for h in informer._handlers):
            await asyncio.sleep(0)
            return
    raise AssertionError("handlers did not drain")


@pytest.fixture
async def informer() -> AsyncIterator[SharedInformer]:
    # Nothing listens on this port and the fake clock never advances for the reflector's
    # backoff, so the reflector parks after its first failure; tests feed the sink directly.
    clock = FakeClock()
    endpoint = ServerEndpoint(host="http://127.0.0.1:9", ssl=None, server_hostname=None,
                              proxy=None)
    client = KubeClient(endpoint, Credentials(Configuration()), clock=clock)
    inf = SharedInformer(client, SERVICES, clock=clock, rng=random.Random(1),
                         settings=InformerSettings(
                             resync_period=60.0,
                             reflector=ReflectorSettings(streaming_list=False)))
    yield inf
    await inf.stop()
    await client.close()


async def test_initial_list_is_delivered_as_initial_adds_then_synced(
        informer: SharedInformer) -> None:
    rec = Recorder(informer)
    informer.add_handler(rec)
    informer.start()
    assert not informer.has_synced
    informer.on_replace([svc("a", "1"), svc("b", "2")], "2")
    assert await informer.wait_for_sync(timeout=2)
    assert rec.events == [("add", "a", "1", True), ("add", "b", "2", True)]
    assert rec.store_was_current


async def test_watch_events_update_store_before_handlers(informer: SharedInformer) -> None:
    rec = Recorder(informer)
    informer.add_handler(rec)
    informer.start()
    informer.on_replace([], "1")
    informer.on_event("ADDED", svc("a", "2"))
    informer.on_event("MODIFIED", svc("a", "3"))
    informer.on_event("MODIFIED", svc("a", "4"))
    informer.on_event("DELETED", svc("a", "5"))
    informer.on_event("DELETED", svc("never-seen", "6"))  # unknown: nobody is told
    await settle(informer)
    assert rec.events == [("add", "a", "2", False), ("update", "a", "2", "3"),
                          ("update", "a", "3", "4"), ("delete", "a")]
    assert informer.store.get("default/a") is None
    assert informer.store.resource_version == "6"


async def test_relist_reports_differences_with_tombstones(informer: SharedInformer) -> None:
    rec = Recorder(informer)
    informer.add_handler(rec)
    informer.start()
    informer.on_replace([svc("same", "1"), svc("changed", "2"), svc("vanished", "3")], "3")
    await settle(informer)
    rec.events.clear()
    informer.on_replace([svc("same", "1"), svc("changed", "7"), svc("new", "8")], "9")
    await settle(informer)
    assert sorted(rec.events) == [("add", "new", "8", False),
                                  ("tombstone", "default/vanished", "3"),
                                  ("update", "changed", "2", "7")]
    assert sorted(informer.store.keys()) == ["default/changed", "default/new", "default/same"]


async def test_late_handler_gets_cache_as_initial_adds(informer: SharedInformer) -> None:
    informer.start()
    informer.on_replace([svc("a", "1")], "1")
    assert await informer.wait_for_sync(timeout=2)
    rec = Recorder(informer)
    registration = informer.add_handler(rec)
    informer.on_event("ADDED", svc("b", "2"))
    assert await informer.wait_for_sync(timeout=2)
    await settle(informer)
    assert registration.has_synced
    assert rec.events == [("add", "a", "1", True), ("add", "b", "2", False)]


async def test_resync_replays_cache_as_updates_without_api_calls(
        informer: SharedInformer) -> None:
    rec = Recorder(informer)
    informer.add_handler(rec)
    informer.start()
    informer.on_replace([svc("a", "1"), svc("b", "2")], "2")
    await settle(informer)
    rec.events.clear()
    clock = informer._clock
    assert isinstance(clock, FakeClock)
    await clock.advance(70.0)  # period 60 s plus at most 10 % jitter
    await settle(informer)
    assert sorted(rec.events) == [("update", "a", "1", "1"), ("update", "b", "2", "2")]


async def test_failing_and_async_handlers(informer: SharedInformer) -> None:
    seen: list[str] = []

    def explode(obj: dict[str, Any], initial: bool) -> None:
        raise RuntimeError("handler bug")

    async def slow_add(obj: dict[str, Any], initial: bool) -> None:
        await asyncio.sleep(0)
        seen.append(obj["metadata"]["name"])

    informer.add_handler(on_add=explode)
    informer.add_handler(on_add=slow_add)
    informer.start()
    informer.on_replace([svc("a", "1")], "1")
    informer.on_event("ADDED", svc("b", "2"))
    informer.on_event("ADDED", svc("c", "3"))
    assert await informer.wait_for_sync(timeout=2)
    await settle(informer)
    assert seen == ["a", "b", "c"]


async def test_removed_handler_hears_nothing_more(informer: SharedInformer) -> None:
    rec = Recorder()
    registration = informer.add_handler(rec)
    informer.start()
    informer.on_replace([svc("a", "1")], "1")
    await settle(informer)
    registration.remove()
    informer.on_event("ADDED", svc("b", "2"))
    await settle(informer)
    assert rec.events == [("add", "a", "1", True)]
    assert informer.has_synced


async def test_factory_shares_one_informer_per_scope() -> None:
    endpoint = ServerEndpoint(host="http://127.0.0.1:9", ssl=None, server_hostname=None,
                              proxy=None)
    client = KubeClient(endpoint, Credentials(Configuration()))
    factory = SharedInformerFactory(client)
    a = factory.informer(SERVICES)
    assert factory.informer(SERVICES) is a
    assert factory.informer(SERVICES, namespace="") is a
    b = factory.informer(SERVICES, namespace="x")
    c = factory.informer(SERVICES, namespace="x", label_selector="app=web")
    d = factory.informer(SERVICES, namespace="x", label_selector="app=web",
                         field_selector="metadata.name=y")
    assert len({id(i) for i in (a, b, c, d)}) == 4
    assert factory.informer(SERVICES, namespace="x", label_selector="app=web") is c
    with pytest.raises(ValueError, match="cluster-scoped"):
        factory.informer(NODES, namespace="x")
    assert factory.informers == [a, b, c, d]
    await client.close()


async def test_backoff_doubles_to_the_cap_and_resets_after_quiet_period() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=0.8, maximum=30.0, factor=2.0, jitter=0.0, reset=120.0,
                      clock=clock, rng=random.Random(0))
    delays = [backoff.next() for _ in range(8)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])
    await clock.advance(200.0)  # two quiet minutes (and then some) after the last delay ended
    assert backoff.next() == pytest.approx(0.8)


def test_backoff_jitter_stretches_by_up_to_the_factor() -> None:
    clock = FakeClock()
    rng = random.Random(7)
    backoff = Backoff(initial=1.0, maximum=1.0, factor=2.0, jitter=1.0, reset=120.0,
                      clock=clock, rng=rng)
    delays = [backoff.next() for _ in range(200)]
    assert all(1.0 <= d <= 2.0 for d in delays)
    assert max(delays) - min(delays) > 0.5  # actually jittered


def test_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="page_size"):
        ReflectorSettings(page_size=0)
    with pytest.raises(ValueError, match="backoff"):
        ReflectorSettings(backoff_initial=5.0, backoff_max=1.0)
    with pytest.raises(ValueError, match="resync_period"):
        InformerSettings(resync_period=0.0)


async def test_exist_ok_cannot_hide_an_index_clash(informer: SharedInformer) -> None:
    def by_name(obj: dict[str, Any]) -> list[str]:
        return [obj["metadata"]["name"]]

    def by_rv(obj: dict[str, Any]) -> list[str]:
        return [obj["metadata"]["resourceVersion"]]

    informer.add_indexer("thing", by_name)
    informer.add_indexer("thing", by_name, exist_ok=True)  # the same function: a no-op
    with pytest.raises(ValueError, match="index 'thing' already exists with another function"):
        informer.add_indexer("thing", by_rv, exist_ok=True)
    informer.on_replace([svc("a", "1")], "1")
    assert informer.store.index_keys("thing", "a") == ["default/a"]


async def test_a_watch_event_reaches_an_idle_handler_at_once_and_order_holds(
        informer: SharedInformer) -> None:
    """An idle handler with nothing queued hears of a watch event before `on_event` returns;
    an async handler's unfinished part, and everything after it, wait for its task, in
    order; a handler that raises loses nothing for the others."""
    seen: list[str] = []
    release = asyncio.Event()

    class Slow:
        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> Any:
            seen.append(f"slow:{obj['metadata']['name']}")
            if obj["metadata"]["name"] == "first":
                return release.wait()  # finishes later, on the handler's task
            return None

        def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
            seen.append(f"slow-update:{new['metadata']['name']}")

        def on_delete(self, obj: Any) -> None:
            pass

    class Failing(Recorder):
        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
            raise RuntimeError("hostile")

    rec = Recorder(informer)
    informer.add_handler(rec)
    informer.add_handler(Failing())
    informer.add_handler(Slow())
    informer.start()
    informer.on_replace([], "1")
    assert await informer.wait_for_sync(timeout=2)
    await settle(informer)

    informer.on_event("ADDED", svc("first", "2"))
    # Delivered inside on_event: no task had to run.
    assert rec.events == [("add", "first", "2", False)]
    assert seen == ["slow:first"]
    informer.on_event("ADDED", svc("second", "3"))
    informer.on_event("MODIFIED", svc("first", "4"))
    assert rec.events[-1] == ("update", "first", "2", "4")  # idle, so at once too
    assert seen == ["slow:first"]  # behind the unfinished first: queued
    await asyncio.sleep(0.05)
    assert seen == ["slow:first"]
    release.set()
    await settle(informer)
    assert seen == ["slow:first", "slow:second", "slow-update:first"]
    assert rec.store_was_current
