"""Store/Indexer: keys, indexes kept in step with upserts, deletes and replaces."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.store import NAMESPACE_INDEX, DeletedFinalStateUnknown, Store, key_of


def svc(name: str, namespace: str | None = "default", *, rv: str = "1",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv, "labels": labels or {}}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"kind": "Service", "metadata": meta}


def by_app(obj: dict[str, Any]) -> list[str]:
    app = obj["metadata"].get("labels", {}).get("app")
    return [app] if app else []


def test_keys_are_namespace_slash_name_or_name() -> None:
    store = Store()
    store.upsert(svc("a", "ns1"))
    store.upsert(svc("node-1", None))
    assert sorted(store.keys()) == ["node-1", "ns1/a"]
    assert store.get("ns1/a") is not None
    assert store.get_by_name("a", "ns1") is store.get("ns1/a")
    assert store.get_by_name("node-1") is store.get("node-1")
    assert "ns1/a" in store
    assert len(store) == 2


def test_upsert_returns_previous_and_reads_share_the_cached_object() -> None:
    store = Store()
    first = svc("a", rv="1")
    assert store.upsert(first) is None
    second = svc("a", rv="2")
    assert store.upsert(second) is first
    assert store.get("default/a") is second  # no copy on read
    assert store.list() == [second]


def test_namespace_index_is_built_in() -> None:
    store = Store()
    for name, ns in [("a", "x"), ("b", "x"), ("c", "y")]:
        store.upsert(svc(name, ns))
    assert sorted(o["metadata"]["name"] for o in store.by_index(NAMESPACE_INDEX, "x")) == ["a",
                                                                                           "b"]
    assert store.index_keys(NAMESPACE_INDEX, "y") == ["y/c"]
    assert store.list_index_values(NAMESPACE_INDEX) == ["x", "y"]


def test_custom_index_follows_updates_and_deletes() -> None:
    store = Store()
    store.add_indexer("app", by_app)
    store.upsert(svc("a", labels={"app": "web"}))
    store.upsert(svc("b", labels={"app": "web"}))
    assert store.index_keys("app", "web") == ["default/a", "default/b"]

    store.upsert(svc("a", labels={"app": "db"}, rv="2"))
    assert store.index_keys("app", "web") == ["default/b"]
    assert store.index_keys("app", "db") == ["default/a"]

    removed = store.delete("default/b")
    assert removed is not None
    assert removed["metadata"]["name"] == "b"
    assert store.index_keys("app", "web") == []
    assert "web" not in store.list_index_values("app")
    assert store.delete("default/b") is None


def test_indexer_added_late_indexes_existing_objects() -> None:
    store = Store()
    store.upsert(svc("a", labels={"app": "web"}))
    store.add_indexer("app", by_app)
    assert store.index_keys("app", "web") == ["default/a"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexer("app", by_app)
    with pytest.raises(KeyError, match="no index named"):
        store.by_index("nope", "x")


def test_replace_swaps_contents_and_rebuilds_indexes() -> None:
    store = Store()
    store.add_indexer("app", by_app)
    store.upsert(svc("old", labels={"app": "web"}))
    store.replace([svc("new1", labels={"app": "db"}), svc("new2", "other")], "42")
    assert sorted(store.keys()) == ["default/new1", "other/new2"]
    assert store.index_keys("app", "web") == []
    assert store.index_keys("app", "db") == ["default/new1"]
    assert store.index_keys(NAMESPACE_INDEX, "other") == ["other/new2"]
    assert store.resource_version == "42"


def test_key_of_unwraps_tombstones() -> None:
    obj = svc("gone", "ns")
    assert key_of(obj) == "ns/gone"
    assert key_of(DeletedFinalStateUnknown("ns/gone", obj)) == "ns/gone"
