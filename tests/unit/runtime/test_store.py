"""Store/Indexer: keys, indexes kept in step with upserts, deletes and replaces."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from runtime.clock import FakeClock
from runtime.failures import FailureLog
from runtime.reconcile import Request
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
    assert store.indexed("app", "web")
    assert store.indexed("app", "db")

    removed = store.delete("default/b")
    assert removed is not None
    assert removed["metadata"]["name"] == "b"
    assert store.index_keys("app", "web") == []
    assert not store.indexed("app", "web")
    assert not store.indexed("app", "cache")
    assert "web" not in store.list_index_values("app")
    assert store.delete("default/b") is None


def test_indexer_added_late_indexes_existing_objects() -> None:
    store = Store()
    store.upsert(svc("a", labels={"app": "web"}))
    store.add_indexer("app", by_app)
    assert store.index_keys("app", "web") == ["default/a"]
    with pytest.raises(KeyError, match="no index named"):
        store.by_index("nope", "x")


def test_an_index_name_takes_one_function() -> None:
    """client-go's AddIndexers: the same function again is a no-op, another one is an error."""
    store = Store()
    store.upsert(svc("a", labels={"app": "web"}))
    store.add_indexer("app", by_app)
    store.add_indexer("app", by_app)  # a second controller asking for the same index
    assert store.index_keys("app", "web") == ["default/a"]

    def by_tier(obj: dict[str, Any]) -> list[str]:
        return [obj["metadata"]["labels"].get("tier", "")]

    with pytest.raises(ValueError, match="index 'app' already exists with another function"):
        store.add_indexer("app", by_tier)
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexer(NAMESPACE_INDEX, by_app)
    assert store.index_keys("app", "web") == ["default/a"]  # the first function still rules


def test_same_bound_method_is_the_same_function() -> None:
    class Indexer:
        def values(self, obj: dict[str, Any]) -> list[str]:
            return by_app(obj)

    store = Store()
    one = Indexer()
    store.add_indexer("app", one.values)
    store.add_indexer("app", one.values)  # a new bound-method object, equal to the first
    with pytest.raises(ValueError, match="another function"):
        store.add_indexer("app", Indexer().values)


def test_a_failing_index_function_skips_that_object_only() -> None:
    failures = FailureLog(clock=FakeClock(), interval=60.0)
    store = Store(failures=failures)
    calls: list[str] = []

    def picky(obj: dict[str, Any]) -> list[str]:
        calls.append(obj["metadata"]["name"])
        labels = obj["metadata"]["labels"]
        if labels.get("app") == "evil":
            raise KeyError("spec")
        if labels.get("app") == "wrong-type":
            return [42]  # type: ignore[list-item]
        return by_app(obj)

    store.add_indexer("app", picky)
    with capture_logs() as logs:
        store.upsert(svc("good", labels={"app": "web"}))
        store.upsert(svc("evil", labels={"app": "evil"}))
        store.upsert(svc("typed", labels={"app": "wrong-type"}))
        store.upsert(svc("evil", labels={"app": "evil"}, rv="2"))  # fails again: not logged
        store.upsert(svc("other", labels={"app": "web"}))
    # Every object is cached; the hostile ones are indexed under nothing for this index only.
    assert sorted(store.keys()) == ["default/evil", "default/good", "default/other",
                                    "default/typed"]
    assert store.index_keys("app", "web") == ["default/good", "default/other"]
    assert store.list_index_values("app") == ["web"]
    assert store.index_keys(NAMESPACE_INDEX, "default") == sorted(store.keys())
    failed = [(e["object"], e["error"]) for e in logs if e["log_level"] == "warning"]
    assert failed == [("default/evil", "KeyError: 'spec'"),
                      ("default/typed", "TypeError: index value 42 is not a string")]
    assert "Traceback" not in repr(logs)

    # The object mends: it is indexed; removing it leaves no trace.
    store.upsert(svc("evil", labels={"app": "web"}, rv="3"))
    assert store.index_keys("app", "web") == ["default/evil", "default/good", "default/other"]
    store.delete("default/evil")
    store.delete("default/typed")
    assert store.index_keys("app", "web") == ["default/good", "default/other"]
    # A late index over existing objects survives them too.
    store.upsert(svc("evil2", labels={"app": "evil"}))
    store.add_indexer("app2", picky)
    assert store.index_keys("app2", "web") == ["default/good", "default/other"]


def test_updates_unindex_what_was_indexed_without_asking_the_function_again() -> None:
    store = Store()
    seen: list[str] = []

    def recording(obj: dict[str, Any]) -> list[str]:
        seen.append(obj["metadata"]["resourceVersion"])
        return by_app(obj)

    store.add_indexer("app", recording)
    store.upsert(svc("a", labels={"app": "web"}, rv="1"))
    store.upsert(svc("a", labels={"app": "db"}, rv="2"))
    assert seen == ["1", "2"]  # the old object is not indexed twice
    assert store.index_keys("app", "web") == []
    assert store.index_keys("app", "db") == ["default/a"]


def test_hostile_metadata_is_cached_under_the_one_key_rule() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "n", "namespace": 7}})  # not a string: cluster-scoped
    store.upsert({"metadata": "nope"})
    store.upsert({"kind": "Thing"})
    assert sorted(store.keys()) == ["", "n"]
    assert store.index_keys(NAMESPACE_INDEX, "") == ["", "n"]


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


@pytest.mark.parametrize("obj", [
    svc("a", "ns"), svc("node-1", None), svc("x", ""),
    {"metadata": {"name": "n", "namespace": None}}, {"metadata": {"name": 5}}, {},
])
def test_store_keys_and_request_keys_agree(obj: dict[str, Any]) -> None:
    store = Store()
    store.upsert(obj)
    assert store.keys() == [Request.for_object(obj).key]
