"""Informers over a set of namespaces (runtime/namespaces.py) against the local API server: one
watch per namespace into one cache, a selected namespace picked up and let go while running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.informer import InformerSettings, SharedInformerFactory
from runtime.labelselector import parse
from runtime.manager import Manager, ManagerOptions
from runtime.namespaces import Namespaces, NamespacesReflector
from runtime.resources import CONFIGMAPS, NAMESPACES
from tests.integration.runtime.test_informer import (
    FAST_CLIENT,
    FAST_REFLECTOR,
    View,
    configmap,
    until,
)


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}}


@pytest.fixture
async def client(envtest_kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                                registry=CollectorRegistry()) as c:
        yield c


@pytest.fixture
async def factory(client: KubeClient) -> AsyncIterator[SharedInformerFactory]:
    f = SharedInformerFactory(client, settings=InformerSettings(reflector=FAST_REFLECTOR))
    yield f
    await f.stop()


async def make(client: KubeClient, *names: str, **labels: str) -> None:
    for name in names:
        await client.create(NAMESPACES, namespace(name, **labels))
        await client.create(CONFIGMAPS, configmap("cm", name))


def keys(view: View) -> set[str]:
    return set(view.objects)


async def test_listed_namespaces_are_watched_one_by_one_into_one_cache(
        factory: SharedInformerFactory, client: KubeClient, envtest: EnvTestServer) -> None:
    await make(client, "a", "b", "c")
    informer = factory.informer(CONFIGMAPS, namespaces=Namespaces(names={"a", "b"}))
    view = View()
    informer.add_handler(view)
    envtest.clear_request_log()
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert set(informer.store.keys()) == {"a/cm", "b/cm"}
    assert informer.serves("a")
    assert not informer.serves("c")
    assert view.initial_adds == 2
    paths = {r.path for r in envtest.request_log if r.verb in ("list", "watch")}
    # Only the two namespaces are read: a Role in each is all the access it needs.
    assert paths == {"/api/v1/namespaces/a/configmaps", "/api/v1/namespaces/b/configmaps"}

    await client.create(CONFIGMAPS, configmap("new", "b"))
    await client.create(CONFIGMAPS, configmap("new", "c"))
    await until(lambda: "b/new" in view.objects)
    await client.delete(CONFIGMAPS, "cm", "a")
    await until(lambda: "a/cm" not in view.objects)
    assert keys(view) == {"b/cm", "b/new"} == set(informer.store.keys())
    assert view.violations == []


async def test_a_selected_namespace_is_picked_up_and_let_go_without_a_restart(
        factory: SharedInformerFactory, client: KubeClient) -> None:
    await make(client, "shop", team="shop")
    await make(client, "other", team="other")
    served = Namespaces(selector=parse("team=shop"), namespaces=factory.informer(NAMESPACES))
    informer = factory.informer(CONFIGMAPS, namespaces=served)
    view = View()
    informer.add_handler(view)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert keys(view) == {"shop/cm"}
    reflector = informer.reflector
    assert isinstance(reflector, NamespacesReflector)

    # Labelled to match: watched from now on, its objects told as initial adds (a checkpoint
    # that still matches sends them to the paced lane).
    await client.patch(NAMESPACES, "other", {"metadata": {"labels": {"team": "shop"}}})
    await until(lambda: "other/cm" in view.objects)
    assert view.initial_adds == 2
    await client.create(CONFIGMAPS, configmap("late", "other"))
    await until(lambda: "other/late" in view.objects)

    # Let go: the watch stops, the cache keeps what it saw, no handler hears a delete.
    await client.patch(NAMESPACES, "other", {"metadata": {"labels": {"team": "gone"}}})
    await until(lambda: not reflector.serves("other"))
    assert not informer.serves("other")
    assert informer.serves("shop")
    await client.create(CONFIGMAPS, configmap("unseen", "other"))
    await client.delete(CONFIGMAPS, "late", "other")
    await client.create(CONFIGMAPS, configmap("seen", "shop"))
    await until(lambda: "shop/seen" in view.objects)
    assert {"other/cm", "other/late"} <= set(informer.store.keys())
    assert "other/unseen" not in informer.store
    assert view.deletes == view.tombstones == 0
    # ... and the resync replays only what is served.
    updates = view.updates
    informer.resync()
    await until(lambda: view.updates == updates + 2)  # shop/cm, shop/seen
    await until(lambda: all(h.pending == 0 for h in informer._handlers))
    assert view.updates == updates + 2

    # Matching again: what changed meanwhile is told as differences.
    await client.patch(NAMESPACES, "other", {"metadata": {"labels": {"team": "shop"}}})
    await until(lambda: "other/unseen" in view.objects and "other/late" not in view.objects)
    assert view.tombstones == 1
    assert keys(view) == set(informer.store.keys())
    assert view.violations == []


async def test_a_namespace_deleted_is_let_go_after_its_objects_are(
        factory: SharedInformerFactory, client: KubeClient) -> None:
    await make(client, "shop", team="shop")
    served = Namespaces(selector=parse("team"), namespaces=factory.informer(NAMESPACES))
    informer = factory.informer(CONFIGMAPS, namespaces=served)
    view = View()
    informer.add_handler(view)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    await client.delete(CONFIGMAPS, "cm", "shop")
    await until(lambda: "shop/cm" not in view.objects)
    assert view.deletes == 1


async def test_no_namespace_matching_yet_is_a_synced_empty_cache(
        factory: SharedInformerFactory, client: KubeClient) -> None:
    await make(client, "shop")
    served = Namespaces(selector=parse("team=shop"), namespaces=factory.informer(NAMESPACES))
    informer = factory.informer(CONFIGMAPS, namespaces=served)
    view = View()
    informer.add_handler(view)
    factory.start()
    assert await factory.wait_for_sync(timeout=5)
    assert informer.store.keys() == []
    await client.patch(NAMESPACES, "shop", {"metadata": {"labels": {"team": "shop"}}})
    await until(lambda: "shop/cm" in view.objects)


async def test_the_manager_scopes_namespaced_informers_and_only_them(
        client: KubeClient) -> None:
    one = Manager(client, options=ManagerOptions(watch_namespaces=frozenset({"a"})),
                  registry=CollectorRegistry())
    assert one.informer(CONFIGMAPS).namespace == "a"  # one namespace: its own scope, as ever
    several = Manager(client, options=ManagerOptions(watch_namespaces=frozenset({"a", "b"})),
                      registry=CollectorRegistry())
    informer = several.informer(CONFIGMAPS)
    assert informer.namespaces is several.served_namespaces()
    assert several.informer(NAMESPACES).namespaces is None
    selected = Manager(client, options=ManagerOptions(namespace_selector=parse("team=shop")),
                       registry=CollectorRegistry())
    served = selected.served_namespaces()
    assert served is not None
    assert served.informer is selected.informer(NAMESPACES)
    everything = Manager(client, options=ManagerOptions(), registry=CollectorRegistry())
    assert everything.informer(CONFIGMAPS).namespace is None
    assert everything.served_namespaces() is None
