"""Object helpers: the one key rule, finalizers the controllerutil way, owner references, and
no exception whatever JSON arrives."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import objects
from runtime.objects import (
    add_finalizer,
    finalizers,
    finalizers_patch,
    has_finalizer,
    is_deleting,
    key_of,
    owner_reference,
    remove_finalizer,
)
from runtime.reconcile import Request
from runtime.resources import CONFIGMAPS, NODES, Resource


def test_one_key_rule() -> None:
    assert key_of({"metadata": {"namespace": "ns", "name": "a"}}) == "ns/a"
    assert key_of({"metadata": {"name": "node-1"}}) == "node-1"
    assert key_of({"metadata": {"namespace": "", "name": "node-1"}}) == "node-1"
    assert Request("", "node-1").key == "node-1"
    assert Request("ns", "a").key == "ns/a"


def test_finalizers_are_added_and_removed_once_and_report_change() -> None:
    cached = {"metadata": {"name": "a", "resourceVersion": "7", "finalizers": ["other"]}}
    snapshot = copy.deepcopy(cached)
    mine = dict(cached)  # a shallow copy is enough: the helpers never touch the cache's parts
    assert add_finalizer(mine, "ours")
    assert not add_finalizer(mine, "ours")
    assert finalizers(mine) == ["other", "ours"]
    assert has_finalizer(mine, "ours")
    assert not has_finalizer(cached, "ours")
    assert cached == snapshot
    assert finalizers_patch(mine) == {"metadata": {"finalizers": ["other", "ours"],
                                                   "resourceVersion": "7"}}
    assert remove_finalizer(mine, "ours")
    assert not remove_finalizer(mine, "ours")
    assert finalizers(mine) == ["other"]
    assert cached == snapshot


def test_remove_drops_every_copy_and_keeps_order() -> None:
    o: dict[str, Any] = {"metadata": {"finalizers": ["a", "x", "b", "x"]}}
    assert remove_finalizer(o, "x")
    assert finalizers(o) == ["a", "b"]


def test_finalizer_patch_without_resource_version_is_unguarded() -> None:
    assert finalizers_patch({"metadata": {"finalizers": ["a"]}}) == {
        "metadata": {"finalizers": ["a"]}}
    assert finalizers_patch({"metadata": {"resourceVersion": 12}}) == {
        "metadata": {"finalizers": [], "resourceVersion": "12"}}


def test_hostile_finalizers() -> None:
    o: dict[str, Any] = {"metadata": {"finalizers": ["ok", 3, None, {"x": 1}]}}
    assert finalizers(o) == ["ok"]
    assert finalizers({"metadata": {"finalizers": "ours"}}) == []  # a string is not a list
    broken: dict[str, Any] = {"metadata": "garbage"}
    assert not has_finalizer(broken, "ours")
    assert add_finalizer(broken, "ours")
    assert finalizers(broken) == ["ours"]


def test_deleting() -> None:
    assert is_deleting({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    assert not is_deleting({"metadata": {"deletionTimestamp": None}})
    assert not is_deleting({"metadata": 1})


@pytest.mark.parametrize(("resource", "controller"), [(CONFIGMAPS, False), (NODES, True)])
def test_owner_reference(resource: Resource, controller: bool) -> None:
    owner = {"metadata": {"name": "o", "uid": "u-1", "namespace": "ns"}}
    assert owner_reference(owner, resource, controller=controller) == {
        "apiVersion": "v1", "kind": resource.kind, "name": "o", "uid": "u-1",
        "controller": controller, "blockOwnerDeletion": controller}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=10)
META_KEYS = st.sampled_from(["name", "namespace", "uid", "resourceVersion", "generation",
                             "labels", "annotations", "finalizers", "deletionTimestamp"])
METADATA = JSON | st.dictionaries(META_KEYS, JSON, max_size=6)


@given(metadata=METADATA, drop=st.booleans())
def test_no_helper_raises_on_hostile_json(metadata: Any, drop: bool) -> None:
    obj: dict[str, Any] = {} if drop else {"metadata": metadata}
    before = copy.deepcopy(obj)
    assert isinstance(objects.meta(obj), dict)
    for text in (objects.name_of(obj), objects.namespace_of(obj), objects.key_of(obj),
                 objects.uid_of(obj), objects.resource_version_of(obj)):
        assert isinstance(text, str)
    assert key_of(obj) == Request.for_object(obj).key
    assert isinstance(objects.generation_of(obj), int)
    for mapping in (objects.labels_of(obj), objects.annotations_of(obj)):
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())
    assert isinstance(is_deleting(obj), bool)
    assert all(isinstance(f, str) for f in finalizers(obj))
    assert isinstance(finalizers_patch(obj)["metadata"]["finalizers"], list)
    owner_reference(obj, CONFIGMAPS)
    assert obj == before  # the read-only helpers changed nothing
    mine = dict(obj)
    was = has_finalizer(obj, "ours")
    assert add_finalizer(mine, "ours") is not was
    assert has_finalizer(mine, "ours")
    assert remove_finalizer(mine, "ours")
    assert not has_finalizer(mine, "ours")
