"""What the EndpointSlice cache keeps: the same targets from cut slices as from whole ones, index
entries for Services no binding uses, and the memo serving index entries it has parsed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.informers import LAST_APPLIED
from controller.targetgroupbinding.endpointsets import SliceMemo
from controller.targetgroupbinding.slicecache import (
    SlicesNotCached,
    SliceTrimmer,
    index_entry,
    is_index_entry,
    kept_slice,
)
from controller.targetgroupbinding.sliceendpoints import SliceEndpoint
from controller.targetgroupbinding.targets import Target, ip_endpoints
from controller.targetgroupbinding.watches import (
    SERVICE_INDEX,
    binding_service_index,
    slice_service_index,
    slice_view,
)
from runtime.store import Store
from tests.support.objects import endpoint, endpoint_slice

PORT = {"name": "http", "port": 80}


def _whole_slice(name: str = "web-1", rv: str = "7") -> dict[str, Any]:
    """As the EndpointSlice controller writes it: zones, node names, hints, managed fields."""
    eps = [endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False), endpoint("10.0.0.3"),
           endpoint("10.0.0.4", terminating=True)]
    for i, ep in enumerate(eps):
        ep.update(nodeName=f"ip-10-0-9-{i}.internal", zone="us-west-2a",
                  hints={"forZones": [{"name": "us-west-2a"}]})
        ep["conditions"]["serving"] = True
        ep["targetRef"]["namespace"] = "default"
    obj = endpoint_slice("web", name=name, endpoints=eps)
    obj["metadata"].update(uid=f"uid-{name}", resourceVersion=rv,
                           managedFields=[{"manager": "kube-controller-manager"}],
                           annotations={LAST_APPLIED: "{}", "keep": "me"})
    return obj


def _bindings(*services: str) -> Store:
    store = Store()
    store.add_indexer(SERVICE_INDEX, binding_service_index)
    for i, service in enumerate(services):
        store.upsert({"metadata": {"name": f"b{i}", "namespace": "default"},
                      "spec": {"serviceRef": {"name": service, "port": 80}}})
    return store


def test_a_kept_slice_gives_the_same_targets_and_keeps_only_what_is_read() -> None:
    whole = _whole_slice()
    kept = kept_slice(copy.deepcopy(whole))
    assert ip_endpoints(PORT, [kept]) == ip_endpoints(PORT, [whole])
    assert slice_service_index(kept) == slice_service_index(whole)
    assert kept["endpoints"] == (
        SliceEndpoint("10.0.0.1", True, False, "pod-10.0.0.1", "uid-10.0.0.1"),
        SliceEndpoint("10.0.0.2", False, False, "pod-10.0.0.2", "uid-10.0.0.2"),
        SliceEndpoint("10.0.0.3", True, False, "pod-10.0.0.3", "uid-10.0.0.3"),
        SliceEndpoint("10.0.0.4", True, True, "pod-10.0.0.4", "uid-10.0.0.4"))
    assert kept_slice(kept) == kept  # the transform may meet what it made
    assert "managedFields" not in kept["metadata"]
    assert kept["metadata"]["annotations"] == {"keep": "me"}
    # What only moved a pod's node or zone is no change to the binding's view.
    moved = copy.deepcopy(whole)
    moved["endpoints"][0]["zone"] = "us-west-2b"
    assert slice_view(kept_slice(moved)) == slice_view(kept)


def test_an_index_entry_keeps_the_index_key_and_the_version_only() -> None:
    entry = index_entry(_whole_slice())
    assert is_index_entry(entry)
    assert slice_service_index(entry) == ["default/web"]
    assert entry["metadata"] == {"name": "web-1", "namespace": "default", "uid": "uid-web-1",
                                 "resourceVersion": "7",
                                 "labels": {"kubernetes.io/service-name": "web"}}
    assert not is_index_entry(kept_slice(_whole_slice()))
    empty = endpoint_slice("web", [])
    del empty["endpoints"]
    assert not is_index_entry(kept_slice(empty))  # a kept slice always has its list


def test_the_trimmer_keeps_slices_of_services_a_binding_uses() -> None:
    trim = SliceTrimmer(_bindings("web"))
    assert not is_index_entry(trim(_whole_slice()))
    other = _whole_slice()
    other["metadata"]["labels"] = {"kubernetes.io/service-name": "other"}
    assert is_index_entry(trim(other))
    unlabelled = _whole_slice()
    unlabelled["metadata"]["labels"] = {}
    assert is_index_entry(trim(unlabelled))
    assert trim == SliceTrimmer(trim._bindings)
    assert trim != SliceTrimmer(Store())


def test_the_memo_serves_index_entries_of_versions_it_parsed_and_no_others() -> None:
    memo = SliceMemo()
    whole = _whole_slice(rv="7")
    with pytest.raises(SlicesNotCached, match="default/web"):
        memo.ip_endpoints("default/web", PORT, [index_entry(copy.deepcopy(whole))])
    fetched = memo.ip_endpoints("default/web", PORT, [kept_slice(copy.deepcopy(whole))])
    assert fetched.targets == {Target("10.0.0.1", 8080), Target("10.0.0.3", 8080)}
    cached = memo.ip_endpoints("default/web", PORT, [index_entry(copy.deepcopy(whole))])
    assert cached.digest == fetched.digest
    # A newer version the cache has only an index entry of: fetched again.
    with pytest.raises(SlicesNotCached):
        memo.ip_endpoints("default/web", PORT, [index_entry(_whole_slice(rv="8"))])
    # A second slice: the parsed one is kept, the new one must be fetched.
    with pytest.raises(SlicesNotCached):
        memo.ip_endpoints("default/web", PORT, [index_entry(copy.deepcopy(whole)),
                                                index_entry(_whole_slice("web-2"))])
