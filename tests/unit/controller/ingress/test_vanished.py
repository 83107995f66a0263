"""The record of Ingresses that vanished while carrying a group's finalizer."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry

from controller.apis import GROUP_MEMBERS_ANNOTATION
from controller.ingress.groups import Group, Member
from controller.ingress.vanished import (
    MAX_RECORD_LENGTH,
    UNKNOWN_MEMBERS_METRIC,
    VanishedMembers,
    record,
    recorded_members,
    recorded_unknown,
)
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


# ---- the record of a group's members on each of them ------------------------------------------

FINALIZER = "group.ingress.k8s.aws/storefront"


def recording(name: str, value: object, *, deployed: bool = True) -> Obj:
    obj = ing(name, FINALIZER, deployed=deployed)
    obj["metadata"]["annotations"] = {GROUP_MEMBERS_ANNOTATION: value}
    return obj


def test_a_record_round_trips_sorted_and_names_its_group() -> None:
    value = record(GROUP, ["shop/front", "shop/cart", "shop/front"])
    assert json.loads(value) == {"group": "storefront", "members": ["shop/cart", "shop/front"]}
    assert recorded_members(recording("front", value), GROUP) == ("shop/cart", "shop/front")
    assert recorded_members(recording("front", value), Request("", "other")) == ()


def test_only_the_keys_that_fit_are_recorded() -> None:
    keys = [f"shop/member-{i:04d}" for i in range(1000)]
    value = record(GROUP, keys)
    assert len(value) <= MAX_RECORD_LENGTH
    kept = recorded_members(recording("front", value), GROUP)
    assert 0 < len(kept) < len(keys)
    assert list(kept) == sorted(keys)[:len(kept)]  # the first ones in key order


@pytest.mark.parametrize("value", [
    None, 7, ["shop/a"], {"group": "storefront"}, "", "garbage", "{", "[" * 3000 + "]" * 3000,
    json.dumps({"group": "storefront", "members": "shop/a"}),
    json.dumps({"group": 1, "members": ["shop/a"]}),
    json.dumps({"group": "storefront", "members": ["shop/a"] * 2000}),  # longer than the cap
    json.dumps({"group": "storefront", "members": [["shop/a"]]}),
])
def test_anything_but_a_record_records_nothing(value: object) -> None:
    assert recorded_members(recording("front", value), GROUP) == ()


def test_entries_that_are_not_ingress_keys_are_dropped() -> None:
    value = json.dumps({"group": "storefront",
                        "members": ["shop/a", 3, None, "no-slash", "Shop/UPPER", "a/b/c", ""]})
    assert recorded_members(recording("front", value), GROUP) == ("shop/a",)


def group_of(*members: Obj) -> Group:
    return Group(GROUP, members=tuple(Member(m, None, 0) for m in members))


def test_recorded_keys_no_ingress_has_are_unknown() -> None:
    value = record(GROUP, ["shop/front", "shop/cart", "shop/moved"])
    existing = {"shop/front", "shop/moved"}
    unknown = recorded_unknown(group_of(recording("front", value)), existing.__contains__)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in unknown] == [
        ("shop", "cart")]


def test_records_on_members_never_deployed_with_the_group_are_not_read() -> None:
    value = record(GROUP, ["shop/front", "shop/ghost"])
    group = group_of(recording("front", value, deployed=False))  # no hostname of ours
    assert recorded_unknown(group, lambda key: False) == []


def test_records_of_all_deployed_members_are_united() -> None:
    """A record that omits a key another member carries does not un-hold the group."""
    full = record(GROUP, ["shop/front", "shop/cart", "shop/gone"])
    partial = record(GROUP, ["shop/front", "shop/cart"])
    group = group_of(recording("cart", partial), recording("front", full))
    unknown = recorded_unknown(group, {"shop/front", "shop/cart"}.__contains__)
    assert [o["metadata"]["name"] for o in unknown] == ["gone"]


def test_an_ingress_own_group_reads_no_record() -> None:
    own = Request("shop", "front")
    obj = ing("front", "ingress.k8s.aws/resources")
    obj["metadata"]["annotations"] = {GROUP_MEMBERS_ANNOTATION: record(own, ["shop/x"])}
    group = Group(own, members=(Member(obj, None, 0),))
    assert recorded_unknown(group, lambda key: False) == []


def test_recorded_unknown_members_are_counted_with_the_ones_seen_and_cleared() -> None:
    registry = CollectorRegistry()
    vanished = VanishedMembers(registry)
    vanished.on_delete(ing("seen", FINALIZER))
    recorded = [{"metadata": {"namespace": "shop", "name": n}} for n in ("seen", "cart")]
    names = [o["metadata"]["name"] for o in vanished.unknown(GROUP, recorded)]
    assert names == ["seen", "cart"]
    assert gauge(registry, "storefront") == 2.0
    assert [o["metadata"]["name"] for o in vanished.unknown(GROUP, [])] == ["seen"]
    assert gauge(registry, "storefront") == 1.0
    vanished.returned(ing("seen", FINALIZER))
    assert vanished.unknown(GROUP, []) == []
    assert gauge(registry, "storefront") is None
