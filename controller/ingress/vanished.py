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

The record lives in memory, on every replica (the watch runs on standbys too), and for a group
named in annotations or class parameters also on its members: after each deploy every member
carries `elbv2.k8s.aws/checkpoint-members` (`record`: the group and its member keys, sorted;
only the keys that fit in MAX_RECORD_LENGTH are recorded, so past a few dozen members the last
ones in key order are known to this process only). A restarted process that never saw the
Ingress go finds it there (`recorded_unknown`): a key recorded on a member the group was
deployed with that no Ingress has any more is unknown, exactly as if it had been seen going.
Why that is safe:
- a member leaving by finalizer: the group deploys without it, every member's record is
  rewritten without it, and only then is its finalizer released (the release drops the
  leaver's own record). After a crash anywhere in that, the leaver still exists (it is
  leaving, not unknown) or is recorded nowhere any more;
- records are read only from members the group was deployed with (`deployed_with`: for a
  named group the hostname in their status, which namespace users cannot write), and the
  keys of all of them are united. A record written by hand can add a key, never remove one
  another member carries: at worst it holds the group, which deletes nothing, as any
  established member can already hold its group with a broken annotation. It lasts while
  that Ingress is a member; deleted, its record is no longer read. Taking the newest record
  instead would let a hand-written timestamp un-hold a group, so none is preferred;
- a stale record (a member whose write failed) can only name a key that still exists: the
  failed write fails the reconcile before any leaver is released. A hold that an operator
  knows to be stale ends by re-creating the Ingress (it joins, the records are rewritten with
  it, deleting it then removes its resources) or by removing the key from the records by
  hand, which is the operator's decision that its resources may go;
- a group whose members all vanished: unchanged, there is no member to read a record from;
  one whose remaining members are all leaving is deleted with them after a restart (leavers'
  records are not read: they are not rewritten once they leave, so they go stale).
An Ingress's own group has one member, the one that would read the record: none is written.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry

from controller.annotations import load_json
from controller.apis import GROUP_MEMBERS_ANNOTATION
from controller.ingress.groups import Group, deployed_with, former_groups, is_explicit
from runtime import metrics
from runtime.handlers import unwrap_tombstone
from runtime.objects import Obj, is_deleting, key_of, meta, uid_of
from runtime.reconcile import Request

UNKNOWN_MEMBERS_METRIC = "aiolbc_ingress_group_unknown_members"
# Small enough to keep every member's metadata light (it is on every member, in every watch
# event); a record longer than this is not read at all.
MAX_RECORD_LENGTH = 4096
# `namespace/name`: a DNS label and a DNS subdomain, as the API server enforces them.
_KEY = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def record(request: Request, keys: Iterable[str]) -> str:
    """The record of group `request` deployed with members `keys`: sorted, as many as fit."""
    chosen: list[str] = []
    size = len(_dump(request.key, []))
    for key in sorted(set(keys)):
        size += len(json.dumps(key)) + (1 if chosen else 0)
        if size > MAX_RECORD_LENGTH:
            break
        chosen.append(key)
    return _dump(request.key, chosen)


def _dump(group: str, keys: list[str]) -> str:
    return json.dumps({"group": group, "members": keys}, separators=(",", ":"))


def recorded_members(ing: Obj, request: Request) -> tuple[str, ...]:
    """The member keys of group `request` recorded on `ing`; () for no record, another group's,
    or anything that is not one (never raises)."""
    annotations = meta(ing).get("annotations")
    raw = annotations.get(GROUP_MEMBERS_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(raw, str) or len(raw) > MAX_RECORD_LENGTH:
        return ()
    parsed = _parse(raw)
    return parsed[1] if parsed is not None and parsed[0] == request.key else ()


@functools.lru_cache(maxsize=1024)  # every member of a group carries the same string
def _parse(raw: str) -> tuple[str, tuple[str, ...]] | None:
    try:
        value = load_json(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    group, members = value.get("group"), value.get("members")
    if not isinstance(group, str) or not isinstance(members, list):
        return None
    return group, tuple(sorted({m for m in members if isinstance(m, str) and _KEY.fullmatch(m)}))


def recorded_unknown(group: Group, exists: Callable[[str], bool]) -> list[Obj]:
    """Keys recorded on the members the group was deployed with that no Ingress has any more
    (`exists` says whether the cache has an Ingress of that key), as minimal Ingresses."""
    if not is_explicit(group.request):
        return []
    keys: set[str] = set()
    for member in group.members:
        if deployed_with(member.ingress, group.request):
            keys.update(recorded_members(member.ingress, group.request))
    return [_placeholder(key) for key in sorted(keys) if not exists(key)]


def _placeholder(key: str) -> Obj:
    namespace, _, name = key.partition("/")
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"namespace": namespace, "name": name}}


class VanishedMembers:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._by_group: dict[str, dict[str, Obj]] = {}
        self._released: set[str] = set()  # uids whose finalizer this process removed
        self._recorded: dict[str, set[str]] = {}  # group → unknown keys read from records
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

    def unknown(self, request: Request, recorded: Iterable[Obj]) -> list[Obj]:
        """The group's unknown members: those seen vanishing, then those only its records
        name (`recorded_unknown`, as just read; the gauge counts both)."""
        seen = self.of(request)
        known = {key_of(o) for o in seen}
        extra = [o for o in recorded if key_of(o) not in known]
        keys = {key_of(o) for o in extra}
        if keys != self._recorded.get(request.key, set()):
            if keys:
                self._recorded[request.key] = keys
            else:
                self._recorded.pop(request.key, None)
            self._export(request.key)
        return [*seen, *extra]

    def _export(self, group: str) -> None:
        count = len(set(self._by_group.get(group) or {}) | self._recorded.get(group, set()))
        if count:
            self._gauge.labels(group=group).set(count)
        else:
            with contextlib.suppress(KeyError):
                self._gauge.remove(group)


__all__ = ["MAX_RECORD_LENGTH", "UNKNOWN_MEMBERS_METRIC", "VanishedMembers", "record",
           "recorded_members", "recorded_unknown"]
