"""Event mapping: updates that change nothing the model reads are dropped, moves wake both
groups, and priorities are decided per group."""

from __future__ import annotations

import copy

from controller.ingress.groups import GroupLoader
from controller.ingress.watches import ingress_view
from runtime.handlers import EnqueueFromMap
from runtime.predicates import Event, EventKind, ViewChanged
from runtime.prioritydecisions import Deferred
from runtime.reconcile import LOW, NORMAL, Request
from tests.support.objects import ingress, ingress_class
from tests.unit.controller.ingress.caches import caches, loader

A = "alb.ingress.kubernetes.io/"


class Recorder:
    def __init__(self) -> None:
        self.added: list[tuple[str, int]] = []

    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        self.added.append((request.key, priority))

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        self.enqueue(request, priority=decision())  # decided at once


def _handler(groups: GroupLoader, recorder: Recorder) -> EnqueueFromMap:
    """The Ingress controller's watch of Ingresses, as its wiring declares it."""
    def priority(request: Request, event: Event, default: int) -> int:
        return LOW if request.key == "g" and event.kind is EventKind.INITIAL_ADD else default

    return EnqueueFromMap(recorder, groups.groups_of, priority=priority,
                          predicates=[ViewChanged(ingress_view)])


def test_irrelevant_updates_are_dropped_and_moves_wake_both() -> None:
    old = ingress("a", annotations={A + "group.name": "g"})
    groups = loader(caches(ingress_class("alb"), old))
    rec = Recorder()
    handler = _handler(groups, rec)

    handler.on_add(old, True)
    assert rec.added == [("g", LOW)]

    rec.added.clear()
    status_only = copy.deepcopy(old)
    status_only["metadata"]["resourceVersion"] = "2"
    status_only["status"] = {"loadBalancer": {"ingress": [{"hostname": "x"}]}}
    status_only["metadata"]["annotations"]["elbv2.k8s.aws/checkpoint"] = "v1:abc"
    handler.on_update(old, status_only)
    assert rec.added == []

    moved = copy.deepcopy(status_only)
    moved["metadata"]["resourceVersion"] = "3"
    moved["metadata"]["annotations"][A + "group.name"] = "h"
    handler.on_update(status_only, moved)
    assert sorted(rec.added) == [("g", NORMAL), ("h", NORMAL)]

    rec.added.clear()
    handler.on_update(moved, moved)  # resync: always passes
    assert rec.added == [("h", LOW)]  # the default for a resync, kept by this priority


def test_not_ours_maps_to_nothing_unless_it_has_our_finalizer() -> None:
    theirs = ingress("a", class_name="nginx")
    groups = loader(caches(ingress_class("alb"), theirs))
    assert groups.groups_of(theirs) == []
    leaving = ingress("a", class_name="nginx", finalizers=["ingress.k8s.aws/resources"])
    assert groups.groups_of(leaving) == [Request("default", "a")]
