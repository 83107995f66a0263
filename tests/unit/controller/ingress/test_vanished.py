"""The record of Ingresses that vanished while carrying a group's finalizer."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.ingress.vanished import UNKNOWN_MEMBERS_METRIC, VanishedMembers
from runtime.objects import Obj
from runtime.reconcile import Request
from runtime.store import DeletedFinalStateUnknown
from tests.support.objects import with_hostname

GROUP = Request("", "storefront")


def ing(name: str, *finalizers: str, deleting: bool = False, deployed: bool = True) -> Obj:
    """An Ingress with these finalizers, `deployed` with its load balancer's hostname."""
    meta: Obj = {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                 "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    obj: Obj = {"metadata": meta}
    return with_hostname(obj) if deployed else obj


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


def test_a_finalizer_written_by_hand_on_a_named_group_records_nothing() -> None:
    """Anyone may add a group's finalizer to their own Ingress, then strip it and delete the
    Ingress: without the status only the controller writes, that vanishing holds no group."""
    vanished = VanishedMembers(CollectorRegistry())
    forged = ing("grab", "group.ingress.k8s.aws/storefront", deployed=False)
    vanished.on_delete(DeletedFinalStateUnknown("attacker/grab", forged))
    assert vanished.of(GROUP) == []
    # An Ingress's own group cannot be named from elsewhere: its finalizer is enough.
    vanished.on_delete(ing("solo", "ingress.k8s.aws/resources", deployed=False))
    assert len(vanished.of(Request("shop", "solo"))) == 1
