"""Which EndpointSlice updates wake a binding: changes to what it reads (ports, address type,
Service, the endpoints that serve), and changes among endpoints that do not serve only when the
Service's bindings have pods gated on target health."""

from __future__ import annotations

import copy
from typing import Any

from controller.apis import TARGET_HEALTH_CONDITION_PREFIX
from controller.targetgroupbinding.pods import GATE_INDEX, gate_index, slim_pod
from controller.targetgroupbinding.slicecache import kept_slice
from controller.targetgroupbinding.sliceendpoints import SliceEndpoint, compact, endpoints_of
from controller.targetgroupbinding.watches import (
    SERVICE_INDEX,
    SliceChanged,
    binding_service_index,
)
from runtime.predicates import Event, EventKind
from runtime.store import Store
from tests.support.objects import endpoint, endpoint_slice


def _slice(*ready: str, starting: tuple[str, ...] = (), rv: str = "1") -> dict[str, Any]:
    eps = [endpoint(ip) for ip in ready] + [endpoint(ip, ready=False) for ip in starting]
    obj = endpoint_slice("web", name="web-1", endpoints=eps)
    obj["metadata"].update(uid="uid-web-1", resourceVersion=rv)
    return kept_slice(obj)


def _stores(gated: bool = False) -> tuple[Store, Store]:
    bindings = Store()
    bindings.add_indexer(SERVICE_INDEX, binding_service_index)
    bindings.upsert({"metadata": {"name": "web", "namespace": "default"},
                     "spec": {"serviceRef": {"name": "web", "port": 80}}})
    pods = Store()
    pods.add_indexer(GATE_INDEX, gate_index)
    gates = [{"conditionType": f"{TARGET_HEALTH_CONDITION_PREFIX}web"}] if gated else []
    pods.upsert(slim_pod({"metadata": {"name": "pod-10.0.0.9", "namespace": "default",
                                       "uid": "uid-10.0.0.9", "resourceVersion": "1"},
                          "spec": {"readinessGates": gates}}))
    return bindings, pods


def _update(old: dict[str, Any], new: dict[str, Any]) -> Event:
    return Event(EventKind.UPDATE, new, old)


def test_a_starting_pod_wakes_no_binding_without_gated_pods() -> None:
    changed = SliceChanged(*_stores())
    before = _slice("10.0.0.1", "10.0.0.2")
    assert not changed(_update(before, _slice("10.0.0.1", "10.0.0.2", starting=("10.0.0.9",),
                                              rv="2")))
    # ... nor one that leaves, nor one that is no pod's
    assert not changed(_update(_slice("10.0.0.1", starting=("10.0.0.9",)),
                               _slice("10.0.0.1", rv="2")))
    node_backed = copy.deepcopy(_slice("10.0.0.1"))
    raw = endpoint_slice("web", name="web-1",
                         endpoints=[endpoint("10.0.0.1"), endpoint("10.0.0.5", kind="Node")])
    raw["metadata"].update(uid="uid-web-1", resourceVersion="2")
    assert not changed(_update(node_backed, kept_slice(raw)))


def test_what_a_binding_reads_wakes_it() -> None:
    changed = SliceChanged(*_stores())
    before = _slice("10.0.0.1", "10.0.0.2", starting=("10.0.0.9",))
    # the starting pod becomes ready; a ready one goes; one starts terminating
    assert changed(_update(before, _slice("10.0.0.1", "10.0.0.2", "10.0.0.9", rv="2")))
    assert changed(_update(before, _slice("10.0.0.1", starting=("10.0.0.9",), rv="2")))
    terminating = copy.deepcopy(before)
    eps = list(terminating["endpoints"])
    eps[0] = eps[0]._replace(terminating=True)
    terminating["endpoints"] = tuple(eps)
    assert changed(_update(before, terminating))
    # a new pod behind the same address
    replaced = copy.deepcopy(before)
    replaced["endpoints"] = (before["endpoints"][0]._replace(uid="uid-new"),
                             *before["endpoints"][1:])
    assert changed(_update(before, replaced))
    # ports, address type, Service
    for field, value in (("ports", [{"name": "http", "port": 9090, "protocol": "TCP"}]),
                         ("addressType", "IPv6")):
        other = copy.deepcopy(before)
        other[field] = value
        assert changed(_update(before, other))
    moved = copy.deepcopy(before)
    moved["metadata"]["labels"]["kubernetes.io/service-name"] = "api"
    assert changed(_update(before, moved))
    # adds, deletes and resyncs always pass
    assert changed(Event(EventKind.ADD, before, None))
    assert changed(Event(EventKind.DELETE, before, None))
    assert changed(Event(EventKind.RESYNC, before, before))


def test_a_starting_pod_wakes_a_binding_whose_pods_are_gated() -> None:
    changed = SliceChanged(*_stores(gated=True))
    before = _slice("10.0.0.1")
    assert changed(_update(before, _slice("10.0.0.1", starting=("10.0.0.9",), rv="2")))
    # an update that changed no endpoint at all still wakes nobody
    assert not changed(_update(before, _slice("10.0.0.1", rv="2")))
    # without a pod cache (no readiness gates), nobody
    assert not SliceChanged(_stores(gated=True)[0], None)(
        _update(before, _slice("10.0.0.1", starting=("10.0.0.9",), rv="2")))


def test_endpoints_are_read_once_and_hostile_ones_left_out() -> None:
    good = endpoint("10.0.0.1")
    hostile: list[Any] = [
        "not an endpoint", {"addresses": "10.0.0.2", "targetRef": {"kind": "Pod"}},
        {"addresses": [7], "targetRef": {"kind": "Pod"}}, {"addresses": [], "targetRef": {}},
        {"addresses": ["10.0.0.3"], "targetRef": "Pod"},
        {"addresses": ["10.0.0.4"], "conditions": "ready",
         "targetRef": {"kind": "Pod", "name": 5, "uid": ["x"]}},
    ]
    assert compact([good, *hostile]) == (
        SliceEndpoint("10.0.0.1", True, False, "pod-10.0.0.1", "uid-10.0.0.1"),
        SliceEndpoint("10.0.0.4", False, False, "", ""))
    assert compact("endpoints") == ()
    kept = kept_slice(endpoint_slice("web", endpoints=[good]))
    assert endpoints_of(kept) is kept["endpoints"]
    assert endpoints_of({"endpoints": None}) == ()
