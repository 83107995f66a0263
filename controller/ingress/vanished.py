"""Ingresses that vanished while still carrying a group's finalizer.

A finalizer-gated deletion always leaves a trace: the API server sets `deletionTimestamp`, the
group deploys without the Ingress, and only then is the finalizer released. An Ingress that
disappears from the cache while its last known state shows the group was deployed with it
(`groups.deployed_with`: our finalizer, and for a named group our hostname in its status) —
the relist after an API server restore, a finalizer stripped behind our back during a watch
outage — did not go that way. Its group cannot tell whether its rules and target groups are
still wanted, so they must not be deleted: the group is held, a Warning names the Ingress and
`aiolbc_ingress_group_unknown_members{group}` counts it, until an Ingress of that namespace and
name exists again (re-created, it joins as before; deleted from there, its resources go with
the finalizer, as always).

The record lives in memory, on every replica (the watch runs on standbys too). A group whose
members all vanished is never deleted either way: with no member and no Ingress leaving it
(a finalizer written by hand on another Ingress does not make one), the reconciler has no
finalizer-gated deletion to act on; the gauge keeps saying so while the
process lives. A restart forgets the record; what then protects a group that still has other
members is only what the relist shows.
"""

from __future__ import annotations

import contextlib
from typing import Any

from prometheus_client import CollectorRegistry

from controller.ingress.groups import deployed_with, former_groups
from runtime import metrics
from runtime.handlers import unwrap_tombstone
from runtime.objects import Obj, is_deleting, key_of, uid_of
from runtime.reconcile import Request

UNKNOWN_MEMBERS_METRIC = "aiolbc_ingress_group_unknown_members"


class VanishedMembers:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._by_group: dict[str, dict[str, Obj]] = {}
        self._released: set[str] = set()  # uids whose finalizer this process removed
        reg = registry if registry is not None else metrics.default_registry()
        self._gauge = metrics.gauge(
            reg, UNKNOWN_MEMBERS_METRIC,
            "Ingresses that vanished while carrying the group's finalizer; the group's AWS "
            "resources are kept until they are back", ("group",))

    # ---- the Ingress informer's view ------------------------------------------------------

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        del is_initial_list
        self.returned(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        del old
        self.returned(new)

    def on_delete(self, obj: Any) -> None:
        gone = unwrap_tombstone(obj)
        uid = uid_of(gone)
        if uid and uid in self._released:
            self._released.discard(uid)
            return
        for request in former_groups(gone):
            if not deployed_with(gone, request):
                continue  # a finalizer written by hand holds nothing
            self._by_group.setdefault(request.key, {})[key_of(gone)] = gone
            self._export(request.key)

    # ---- the reconciler's ------------------------------------------------------------------

    def released(self, ing: Obj) -> None:
        """This process removed a group finalizer from `ing`, which is being deleted: its
        disappearance is that deletion, even if a watch outage only shows it as a tombstone."""
        uid = uid_of(ing)
        if uid and is_deleting(ing):
            self._released.add(uid)

    def returned(self, ing: Obj) -> None:
        key = key_of(ing)
        for group in [g for g, members in self._by_group.items() if key in members]:
            del self._by_group[group][key]
            if not self._by_group[group]:
                del self._by_group[group]
            self._export(group)

    def of(self, request: Request) -> list[Obj]:
        members = self._by_group.get(request.key) or {}
        return [members[k] for k in sorted(members)]

    def _export(self, group: str) -> None:
        count = len(self._by_group.get(group) or {})
        if count:
            self._gauge.labels(group=group).set(count)
        else:
            with contextlib.suppress(KeyError):
                self._gauge.remove(group)


__all__ = ["UNKNOWN_MEMBERS_METRIC", "VanishedMembers"]
