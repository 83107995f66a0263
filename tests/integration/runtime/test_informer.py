"""Informers against the local API server: sync paths, scopes, relists, resync."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.clock import FakeClock
from runtime.envtest import EnvTestServer
from runtime.informer import InformerSettings, SharedInformer, SharedInformerFactory
from runtime.reflector import ReflectorSettings
from runtime.resources import CONFIGMAPS, NAMESPACES
from runtime.store import DeletedFinalStateUnknown, key_of

FAST_CLIENT = ClientSettings(retry_initial_delay=0.005, retry_max_delay=0.02,
                             max_retry_after=0.02)
FAST_REFLECTOR = ReflectorSettings(min_watch_timeout=1, backoff_initial=0.02, backoff_max=0.2,
                                   initial_events_timeout=2.0)


class View:
    """A handler that mirrors the cache from events alone and records every inconsistency."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}  # key -> resourceVersion
        self.violations: list[str] = []
        self.initial_adds = 0
        self.tombstones = 0
        self.deletes = 0
        self.updates = 0

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        key = key_of(obj)
        if key in self.objects:
            self.violations.append(f"add of present {key}")
        self.objects[key] = obj["metadata"]["resourceVersion"]
        self.initial_adds += is_initial_list

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = key_of(new)
        if self.objects.get(key) != old["metadata"]["resourceVersion"]:
            self.violations.append(f"update of {key} from unseen version")
        self.objects[key] = new["metadata"]["resourceVersion"]
        self.updates += 1

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = key_of(obj)
        if key not in self.objects:
            self.violations.append(f"delete of absent {key}")
        self.objects.pop(key, None)
        if isinstance(obj, DeletedFinalStateUnknown):
            self.tombstones += 1
        else:
            self.deletes += 1


def configmap(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "data": {"v": "0"}}


def versions(informer: SharedInformer) -> dict[str, str]:
    return {key_of(o): o["metadata"]["resourceVersion"] for o in informer.store.list()}


async def listed_versions(client: KubeClient, informer: SharedInformer) -> dict[str, str]:
    body = await client.list(informer.resource, informer.namespace,
                             label_selector=informer.label_selector,
                             field_selector=informer.field_selector)
    return {key_of(o): o["metadata"]["resourceVersion"] for o in body["items"]}


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def converged(client: KubeClient, informer: SharedInformer, view: View | None = None,
                    timeout: float = 10.0) -> None:
    """Wait until the cache equals a fresh list (and the handler's view equals the cache)."""
    deadline = time.monotonic() + timeout
    while True:
        fresh = await listed_versions(client, informer)
        handlers_idle = all(h.pending == 0 for h in informer._handlers)
        if versions(informer) == fresh and (view is None or (handlers_idle
                                                              and view.objects == fresh)):
            return
        if time.monotonic() > deadline:
            assert versions(informer) == fresh
            assert view is None or view.objects == fresh
            raise AssertionError("handlers did not drain")
        await asyncio.sleep(0.05)


@pytest.fixture
async def client(envtest_kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                                registry=CollectorRegistry()) as c:
        yield c


@pytest.fixture
async def writer(envtest_kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                                registry=CollectorRegistry()) as c:
        yield c


@pytest.fixture
async def factory(client: KubeClient) -> AsyncIterator[SharedInformerFactory]:
    f = SharedInformerFactory(client, settings=InformerSettings(reflector=FAST_REFLECTOR))
    yield f
    await f.stop()


async def test_streaming_list_syncs_and_keeps_the_watch(
        factory: SharedInformerFactory, writer: KubeClient, envtest: EnvTestServer) -> None:
    for i in range(3):
        await writer.create(CONFIGMAPS, configmap(f"s{i}"))
    informer = factory.informer(CONFIGMAPS, namespace="default")
    view = View()
    informer.add_handler(view)
    envtest.clear_request_log()
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert informer.reflector.streamed_lists == 1
    assert informer.reflector.lists == 0
    assert informer.reflector.streaming_supported is True
    assert view.initial_adds == 3
    assert not any(r.verb == "list" for r in envtest.request_log)
    watch = next(r for r in envtest.request_log if r.verb == "watch")
    assert watch.query.get("sendInitialEvents") == "true"
    assert watch.query.get("resourceVersionMatch") == "NotOlderThan"
    assert watch.query.get("allowWatchBookmarks") == "true"

    await writer.create(CONFIGMAPS, configmap("s9"))
    await writer.delete(CONFIGMAPS, "s0", "default")
    await converged(writer, informer, view)
    assert view.violations == []
    assert view.deletes == 1


async def test_rejected_streaming_list_falls_back_to_list_and_watch(
        factory: SharedInformerFactory, writer: KubeClient, envtest: EnvTestServer) -> None:
    await writer.create(CONFIGMAPS, configmap("f1"))
    envtest.faults.fail_next(1, verb="watch", status=400)
    informer = factory.informer(CONFIGMAPS)
    view = View()
    informer.add_handler(view)
    envtest.clear_request_log()
    factory.start()
    assert await informer.wait_for_sync(timeout=5)
    assert informer.reflector.streaming_supported is False
    assert informer.reflector.lists == 1
    first_list = next(r for r in envtest.request_log if r.verb == "list")
    assert first_list.query.get("resourceVersion") == "0"
    assert first_list.query.get("limit") == "500"
    await writer.create(CONFIGMAPS, configmap("f2"))
    await converged(writer, informer, view)
    assert view.violations == []


async def test_streaming_list_without_end_bookmark_in_time_falls_back(
        client: KubeClient, writer: KubeClient, envtest: EnvTestServer) -> None:
    await writer.create(CONFIGMAPS, configmap("slow"))
    settings = InformerSettings(reflector=ReflectorSettings(
        min_watch_timeout=1, backoff_initial=0.02, backoff_max=0.2,
        initial_events_timeout=0.1))
    informer = SharedInformer(client, CONFIGMAPS, settings=settings)
    envtest.faults.set_latency(0.3)  # the stream stays silent past initial_events_timeout
    informer.start()
    try:
        assert await informer.wait_for_sync(timeout=5)
        assert informer.reflector.streaming_supported is False
        assert informer.reflector.lists >= 1
        envtest.faults.set_latency(0.0)
        await converged(writer, informer)
    finally:
        envtest.faults.set_latency(0.0)
        await informer.stop()


async def test_paginated_list_and_expired_continue_token(
        envtest: EnvTestServer, envtest_kubeconfig: Path, writer: KubeClient) -> None:
    for i in range(5):
        await writer.create(CONFIGMAPS, configmap(f"p{i}"))

    class CompactingClient(KubeClient):
        """Compacts the server's history right after the first page, so the continue token
        the reflector holds has expired when it asks for the next page."""

        pages = 0

        async def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            result = await super().list(*args, **kwargs)
            self.pages += 1
            if self.pages == 1:
                await writer.create(CONFIGMAPS, configmap("p-late"))
                envtest.compact()
            return result

    plain = await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                             registry=CollectorRegistry())
    compacting = CompactingClient(plain.endpoint, plain._credentials, settings=FAST_CLIENT,
                                  registry=CollectorRegistry())
    settings = InformerSettings(reflector=ReflectorSettings(
        page_size=2, streaming_list=False, min_watch_timeout=1, backoff_initial=0.02))
    informer = SharedInformer(compacting, CONFIGMAPS, namespace="default", settings=settings)
    envtest.clear_request_log()
    informer.start()
    try:
        assert await informer.wait_for_sync(timeout=5)
        lists = [r for r in envtest.request_log if r.verb == "list"]
        assert lists[0].query.get("limit") == "2"
        assert lists[1].query.get("continue")
        assert lists[1].status == 410
        assert "limit" not in lists[2].query
        assert "continue" not in lists[2].query
        assert "default/p-late" in informer.store
        assert len(informer.store) == 6
    finally:
        await informer.stop()
        await compacting.close()
        await plain.close()


async def test_scopes_namespace_label_and_field_selectors(
        factory: SharedInformerFactory, writer: KubeClient) -> None:
    await writer.create(NAMESPACES, {"metadata": {"name": "scope-a"}})
    await writer.create(CONFIGMAPS, configmap("web", "scope-a", tier="gold"))
    await writer.create(CONFIGMAPS, configmap("db", "scope-a", tier="silver"))
    await writer.create(CONFIGMAPS, configmap("web", "default", tier="gold"))

    by_ns = factory.informer(CONFIGMAPS, namespace="scope-a")
    by_label = factory.informer(CONFIGMAPS, label_selector="tier=gold")
    by_field = factory.informer(CONFIGMAPS, field_selector="metadata.name=db")
    label_view = View()
    by_label.add_handler(label_view)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert sorted(by_ns.store.keys()) == ["scope-a/db", "scope-a/web"]
    assert sorted(by_label.store.keys()) == ["default/web", "scope-a/web"]
    assert by_field.store.keys() == ["scope-a/db"]
    assert by_ns.store.index_keys("namespace", "scope-a") == ["scope-a/db", "scope-a/web"]

    # Leaving the selection arrives as a delete, entering it as an add.
    await writer.patch(CONFIGMAPS, "web", {"metadata": {"labels": {"tier": "bronze"}}},
                       "scope-a")
    await writer.patch(CONFIGMAPS, "db", {"metadata": {"labels": {"tier": "gold"}}},
                       "scope-a")
    await converged(writer, by_label, label_view)
    assert sorted(by_label.store.keys()) == ["default/web", "scope-a/db"]
    assert label_view.deletes == 1
    assert label_view.violations == []


async def test_a_scope_can_keep_only_the_fields_it_needs(
        factory: SharedInformerFactory, writer: KubeClient) -> None:
    def slim(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion")},
                "data": {"v": obj.get("data", {}).get("v")}}

    big = configmap("big")
    big["data"]["padding"] = "x" * 10_000
    await writer.create(CONFIGMAPS, big)
    slimmed = factory.informer(CONFIGMAPS, namespace="default", transform=slim)
    full = factory.informer(CONFIGMAPS)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    cached = full.store.get("default/big")
    assert cached is not None
    assert "padding" in cached["data"]
    assert slimmed.store.get("default/big") == {
        "metadata": {"name": "big", "namespace": "default",
                     "resourceVersion": cached["metadata"]["resourceVersion"]},
        "data": {"v": "0"}}
    # The same scope with the same function is the same informer; another function would
    # give a cache that is not what its readers expect.
    assert factory.informer(CONFIGMAPS, namespace="default", transform=slim) is slimmed
    with pytest.raises(ValueError, match="another transform"):
        factory.informer(CONFIGMAPS, namespace="default", transform=lambda obj: obj)


async def test_relist_after_compaction_delivers_tombstones(
        factory: SharedInformerFactory, writer: KubeClient, envtest: EnvTestServer) -> None:
    for name in ("keep", "drop", "change"):
        await writer.create(CONFIGMAPS, configmap(name))
    informer = factory.informer(CONFIGMAPS, namespace="default")
    view = View()
    informer.add_handler(view)
    factory.start()
    assert await informer.wait_for_sync(timeout=5)
    lists_before = informer.reflector.lists + informer.reflector.streamed_lists

    # Keep the informer from watching while objects change, then forget the history.
    envtest.faults.fail_next(10_000, verb="watch", status=429)
    await envtest.close_watches()
    await writer.delete(CONFIGMAPS, "drop", "default")
    await writer.patch(CONFIGMAPS, "change", {"data": {"v": "1"}}, "default")
    await writer.create(CONFIGMAPS, configmap("new"))
    envtest.compact()
    envtest.faults.clear()

    await converged(writer, informer, view)
    assert view.tombstones == 1
    assert view.violations == []
    assert informer.reflector.lists + informer.reflector.streamed_lists > lists_before


async def test_watch_429_rewatches_without_relist(
        factory: SharedInformerFactory, writer: KubeClient, envtest: EnvTestServer) -> None:
    informer = factory.informer(CONFIGMAPS, namespace="default")
    view = View()
    informer.add_handler(view)
    factory.start()
    assert await informer.wait_for_sync(timeout=5)
    syncs = informer.reflector.lists + informer.reflector.streamed_lists
    envtest.faults.fail_next(6, verb="watch", status=429)
    await envtest.close_watches()
    await writer.create(CONFIGMAPS, configmap("after-429"))
    await converged(writer, informer, view)
    assert envtest.faults.pending == 0
    assert informer.reflector.lists + informer.reflector.streamed_lists == syncs
    assert view.violations == []


async def test_resync_replays_cache_without_api_calls(
        client: KubeClient, writer: KubeClient, envtest: EnvTestServer) -> None:
    await writer.create(CONFIGMAPS, configmap("r1"))
    await writer.create(CONFIGMAPS, configmap("r2"))
    clock = FakeClock()
    updates: list[tuple[str, str]] = []
    informer = SharedInformer(
        client, CONFIGMAPS, namespace="default", clock=clock,
        settings=InformerSettings(resync_period=600.0, reflector=FAST_REFLECTOR))
    informer.add_handler(on_update=lambda old, new: updates.append(
        (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])))
    informer.start()
    try:
        assert await informer.wait_for_sync(timeout=5)
        requests_before = len(envtest.request_log)
        await clock.advance(700.0)
        await until(lambda: len(updates) == 2)
        assert all(old == new for old, new in updates)
        writes = [r for r in list(envtest.request_log)[requests_before:] if r.verb != "watch"]
        assert writes == []
    finally:
        await informer.stop()


async def test_wait_for_sync_times_out_when_server_is_unreachable(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    async with await KubeClient.from_kubeconfig(kubeconfig, settings=FAST_CLIENT,
                                                registry=CollectorRegistry()) as c:
        informer = SharedInformer(c, CONFIGMAPS, settings=InformerSettings(
            reflector=FAST_REFLECTOR))
        informer.start()
        assert not await informer.wait_for_sync(timeout=0.3)
        assert not informer.has_synced
        await informer.stop()


async def test_a_long_replay_lets_other_tasks_run_while_it_proceeds(
        client: KubeClient, writer: KubeClient) -> None:
    for start in range(0, 300, 50):
        await asyncio.gather(*(writer.create(CONFIGMAPS, configmap(f"c{i}"))
                               for i in range(start, start + 50)))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default",
                              settings=InformerSettings(reflector=FAST_REFLECTOR))
    informer.start()
    try:
        assert await informer.wait_for_sync(timeout=5)
        seen: list[str] = []
        # A handler added late gets the 300 cached objects replayed. A task scheduled at the
        # same time (a worker) must not wait for the whole replay.
        informer.add_handler(on_add=lambda obj, initial: seen.append(key_of(obj)))
        marker = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(lambda: marker.set_result(len(seen)))
        replayed_before_marker = await marker
        await until(lambda: len(seen) == 300)
        assert replayed_before_marker < 300
    finally:
        await informer.stop()


async def test_a_replay_gives_the_loop_back_sooner_while_a_real_change_is_reconciled(
        client: KubeClient, writer: KubeClient) -> None:
    """Each replayed add takes a millisecond (a handler comparing checkpoints); while `busy()`
    (the manager's Foreground: a real change in flight), a turn of the replay holds the loop
    for about 2 ms instead of 10, so each await of that reconcile waits less."""
    await asyncio.gather(*(writer.create(CONFIGMAPS, configmap(f"c{i}")) for i in range(60)))
    busy = False
    informer = SharedInformer(client, CONFIGMAPS, namespace="default",
                              settings=InformerSettings(reflector=FAST_REFLECTOR),
                              busy=lambda: busy)
    informer.start()

    def slow(obj: dict[str, Any], initial: bool) -> None:
        seen.append(key_of(obj))
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass

    async def turns() -> list[int]:
        """Replayed adds between two turns of another task, until the replay ends."""
        counts: list[int] = []
        informer.add_handler(on_add=slow)
        while len(seen) < 60:
            before = len(seen)
            await asyncio.sleep(0)
            counts.append(len(seen) - before)
        return counts

    try:
        assert await informer.wait_for_sync(timeout=5)
        seen: list[str] = []
        idle = await turns()
        busy, seen = True, []
        busy_turns = await turns()
        assert max(busy_turns) <= 3  # 2 ms of 1 ms deliveries (one may straddle the edge)
        assert max(idle) > 3  # 10 ms when nothing real is in flight
    finally:
        await informer.stop()


def _keep_data_only(obj: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {k: obj["metadata"][k] for k in ("name", "namespace",
                                                          "resourceVersion")},
            "data": obj.get("data")}


async def test_a_transform_shapes_what_the_cache_keeps_and_one_informer_keeps_one_shape(
        factory: SharedInformerFactory, writer: KubeClient) -> None:
    await writer.create(CONFIGMAPS, {**configmap("t1"), "binaryData": {"b": "AA=="}})
    informer = factory.informer(CONFIGMAPS, namespace="default", transform=_keep_data_only)
    assert factory.informer(CONFIGMAPS, namespace="default") is informer  # no opinion: fine
    assert factory.informer(CONFIGMAPS, namespace="default",
                            transform=_keep_data_only) is informer
    with pytest.raises(ValueError, match="already keeps objects through _keep_data_only"):
        factory.informer(CONFIGMAPS, namespace="default", transform=lambda obj: obj)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    await writer.create(CONFIGMAPS, {**configmap("t2"), "binaryData": {"b": "AA=="}})
    await converged(writer, informer)
    assert all(set(obj) == {"metadata", "data"} for obj in informer.store.list())
    late = factory.informer(CONFIGMAPS, namespace="kube-system")
    with pytest.raises(ValueError, match="has started"):
        late.use_transform(_keep_data_only)


async def test_a_transform_that_raises_keeps_the_object_as_it_came(
        factory: SharedInformerFactory, writer: KubeClient) -> None:
    def picky(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"] == "bad":
            raise KeyError("surprise")
        return _keep_data_only(obj)

    await writer.create(CONFIGMAPS, configmap("bad"))
    await writer.create(CONFIGMAPS, configmap("good"))
    informer = factory.informer(CONFIGMAPS, namespace="default", transform=picky)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert "kind" in informer.store.get("default/bad")  # type: ignore[operator]
    assert "kind" not in informer.store.get("default/good")  # type: ignore[operator]
    await writer.create(CONFIGMAPS, configmap("later"))
    await converged(writer, informer)  # the watch goes on


async def test_start_after_lists_once_the_other_cache_holds_its_initial_list(
        factory: SharedInformerFactory, client: KubeClient, writer: KubeClient) -> None:
    """The transform of the second informer reads the first one's cache: which names it
    holds when the second lists decide what the second keeps."""
    await writer.create(CONFIGMAPS, configmap("wanted", "kube-system"))
    await writer.create(CONFIGMAPS, configmap("wanted"))
    await writer.create(CONFIGMAPS, configmap("other"))
    index = SharedInformer(client, CONFIGMAPS, namespace="kube-system",
                           settings=InformerSettings(reflector=FAST_REFLECTOR))

    def only_indexed(obj: dict[str, Any]) -> dict[str, Any]:
        if index.store.get(f"kube-system/{obj['metadata']['name']}") is None:
            return {"metadata": {k: obj["metadata"][k] for k in ("name", "namespace",
                                                                  "resourceVersion")}}
        return obj

    kept = factory.informer(CONFIGMAPS, namespace="default", transform=only_indexed,
                            start_after=[index])
    factory.start()
    # Not populated where, ungated, it would be within milliseconds: a window, not an outcome
    # to poll for.
    await asyncio.sleep(0.2)
    assert not kept.populated  # waiting: the other one has not even started
    index.start()
    try:
        assert await factory.wait_for_sync(timeout=5)
        assert "data" in kept.store.get("default/wanted")  # type: ignore[operator]
        assert "data" not in kept.store.get("default/other")  # type: ignore[operator]
        with pytest.raises(ValueError, match="would wait for itself"):
            index.add_start_after(kept)
    finally:
        await index.stop()


async def test_retransform_takes_a_fresh_read_of_the_cached_version_only(
        factory: SharedInformerFactory, writer: KubeClient) -> None:
    """A transform whose decision changed (it keeps more now) gets the same version again."""
    keep_whole: set[str] = set()

    def decide(obj: dict[str, Any]) -> dict[str, Any]:
        return obj if obj["metadata"]["name"] in keep_whole else _keep_data_only(
            {**obj, "data": None})

    await writer.create(CONFIGMAPS, configmap("r1"))
    informer = factory.informer(CONFIGMAPS, namespace="default", transform=decide)
    updates: list[tuple[str, str]] = []
    informer.add_handler(on_update=lambda old, new: updates.append(
        (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])))
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert informer.store.get("default/r1")["data"] is None  # type: ignore[index]
    fresh = await writer.get(CONFIGMAPS, "r1", "default")
    keep_whole.add("r1")
    assert informer.retransform(copy.deepcopy(fresh))
    assert informer.store.get("default/r1")["data"] == {"v": "0"}  # type: ignore[index]
    await until(lambda: len(updates) == 1)
    assert updates[0][0] == updates[0][1]  # an update with an unchanged resourceVersion
    # Another version than the cached one (or an object it does not hold): left to the watch.
    stale = {**fresh, "metadata": {**fresh["metadata"], "resourceVersion": "1"}}
    assert not informer.retransform(stale)
    assert not informer.retransform(configmap("absent"))
