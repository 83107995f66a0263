"""The record of Ingresses that vanished while carrying a group's finalizer."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.ingress.vanished import UNKNOWN_MEMBERS_METRIC, VanishedMembers
from runtime.objects import Obj
from runtime.reconcile import Request
from runtime.store import DeletedFinalStateUnknown

GROUP = Request("", "storefront")


def ing(name: str, *finalizers: str, deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                 "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta}


def gauge(registry: CollectorRegistry, group: str) -> float | None:
    return registry.get_sample_value(UNKNOWN_MEMBERS_METRIC, {"group": group})


def test_a_tombstone_still_carrying_the_finalizer_is_recorded_and_counted() -> None:
    registry = CollectorRegistry()
    vanished = VanishedMembers(registry)
    gone = ing("front", "group.ingress.k8s.aws/storefront")
    vanished.on_delete(DeletedFinalStateUnknown("shop/front", gone))
    assert [o["metadata"]["name"] for o in vanished.of(GROUP)] == ["front"]
    assert gauge(registry, "storefront") == 1.0
    # An Ingress of that name exists again: no longer unknown.
    vanished.on_add(ing("front"), False)
    assert vanished.of(GROUP) == []
    assert gauge(registry, "storefront") is None


def test_an_implicit_group_is_keyed_by_the_ingress() -> None:
    vanished = VanishedMembers(CollectorRegistry())
    vanished.on_delete(ing("solo", "ingress.k8s.aws/resources"))
    assert [o["metadata"]["name"] for o in vanished.of(Request("shop", "solo"))] == ["solo"]


def test_a_released_or_finalizer_free_deletion_is_no_vanishing() -> None:
    vanished = VanishedMembers(CollectorRegistry())
    vanished.on_delete(ing("plain"))  # the normal end: our finalizer went first
    deleting = ing("front", "group.ingress.k8s.aws/storefront", deleting=True)
    vanished.released(deleting)  # this process released it, then a watch outage
    vanished.on_delete(DeletedFinalStateUnknown("shop/front", deleting))
    assert vanished.of(GROUP) == []
    # Released while not being deleted (it moved groups): no free pass later.
    moved = ing("moved", "group.ingress.k8s.aws/storefront")
    vanished.released(moved)
    vanished.on_delete(DeletedFinalStateUnknown("shop/moved", moved))
    assert [o["metadata"]["name"] for o in vanished.of(GROUP)] == ["moved"]
