"""The garbage collector, run synchronously inside the writes that trigger it.

Background and orphan propagation act once an owner is gone. Foreground propagation keeps the
owner, marked with a deletionTimestamp and the `foregroundDeletion` finalizer, deletes its
dependents, and removes the finalizer once no dependent with `blockOwnerDeletion: true` is left
(at once when none is held by finalizers of its own).
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from runtime.clock import Clock
from runtime.envtest import objectmeta
from runtime.envtest.registry import ResourceType
from runtime.envtest.store import Entry, Store

FOREGROUND = "foregroundDeletion"


class Deleter(Protocol):
    """The verbs the collector uses (`ObjectAPI` has them). Named here, rather than importing
    the verb layer, because the verb layer owns the collector: no import cycle."""

    @property
    def clock(self) -> Clock: ...
    def type_for(self, store_key: str) -> ResourceType | None: ...
    def delete(self, rt: ResourceType, namespace: str, name: str,
               options: dict[str, Any] | None = None, *, dry_run: bool = False
               ) -> tuple[Entry, bool]: ...
    def remove(self, rt: ResourceType, current: Entry, *, orphan: bool = False) -> Entry: ...


def _refs(entry: Entry) -> list[dict[str, Any]]:
    refs = entry.obj["metadata"].get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)]


def _waiting(entry: Entry) -> bool:
    meta = entry.obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and FOREGROUND in (meta.get("finalizers") or [])


class GarbageCollector:
    def __init__(self, api: Deleter, store: Store) -> None:
        self._api = api
        self._store = store
        # Owners whose dependents are being processed right now: a dependent's removal inside
        # that processing must not re-enter it.
        self._busy: set[str] = set()

    def _entry(self, uid: str) -> tuple[ResourceType, Entry] | None:
        key = self._store.key_of(uid)
        if key is None:
            return None
        entry = self._store.get(*key)
        kind = self._api.type_for(key[0])
        if entry is None or kind is None:
            return None
        return kind, entry

    def collect(self, uid: str, *, orphan: bool) -> None:
        """`uid` is gone: dependents left with no existing owner are deleted (background), or
        with orphan propagation lose the reference."""
        for store_key, namespace, name in self._store.dependents(uid):
            entry = self._store.get(store_key, namespace, name)
            kind = self._api.type_for(store_key)
            if entry is None or kind is None:
                continue
            if orphan:
                self._drop_reference(store_key, entry, uid)
            elif not any(self._store.exists(str(r.get("uid"))) for r in _refs(entry)):
                self._api.delete(kind, namespace, name)

    def _drop_reference(self, store_key: str, entry: Entry, uid: str) -> None:
        kept = [r for r in _refs(entry) if r.get("uid") != uid]
        new = copy.copy(entry.obj)
        new["metadata"] = {**entry.obj["metadata"], "ownerReferences": kept}
        if not kept:
            del new["metadata"]["ownerReferences"]
        self._store.commit(store_key, "MODIFIED", new, entry)

    def delete_foreground(self, rt: ResourceType, current: Entry) -> Entry:
        """Mark `current` for foreground deletion and process its dependents; returns the
        marked object (the DELETE answer), which may already be gone."""
        meta = current.obj["metadata"]
        new = copy.copy(current.obj)
        new["metadata"] = {**meta, "deletionTimestamp": objectmeta.timestamp(
                               self._api.clock.wall()),
                           "deletionGracePeriodSeconds": 0,
                           "finalizers": [*(meta.get("finalizers") or []), FOREGROUND]}
        marked = self._store.commit(rt.store_key, "MODIFIED", new, current).entry
        self.process(str(meta.get("uid", "")))
        return marked

    def process(self, uid: str) -> None:
        """Advance a foreground deletion: delete dependents, then release the owner once no
        blocking dependent is left. A no-op unless `uid` is waiting for its dependents."""
        found = self._entry(uid)
        if found is None or not _waiting(found[1]) or uid in self._busy:
            return
        self._busy.add(uid)
        try:
            for store_key, namespace, name in self._store.dependents(uid):
                entry = self._store.get(store_key, namespace, name)
                kind = self._api.type_for(store_key)
                if entry is None or kind is None or entry.obj["metadata"].get(
                        "deletionTimestamp"):
                    continue
                if self._has_solid_owner(entry, uid):
                    self._drop_reference(store_key, entry, uid)
                    continue
                dep_uid = str(entry.obj["metadata"].get("uid", ""))
                # A dependent with dependents of its own is deleted in the foreground too.
                policy = "Foreground" if self._store.dependents(dep_uid) else "Background"
                self._api.delete(kind, namespace, name, {"propagationPolicy": policy})
        finally:
            self._busy.discard(uid)
        self._release_if_unblocked(uid)

    def _has_solid_owner(self, entry: Entry, uid: str) -> bool:
        for ref in _refs(entry):
            other = str(ref.get("uid"))
            if other == uid:
                continue
            found = self._entry(other)
            if found is not None and not _waiting(found[1]):
                return True
        return False

    def _release_if_unblocked(self, uid: str) -> None:
        found = self._entry(uid)
        if found is None or not _waiting(found[1]):
            return
        rt, owner = found
        for store_key, namespace, name in self._store.dependents(uid):
            entry = self._store.get(store_key, namespace, name)
            if entry is not None and any(r.get("uid") == uid and r.get("blockOwnerDeletion")
                                         is True for r in _refs(entry)):
                return
        new = copy.copy(owner.obj)
        finalizers = [f for f in owner.obj["metadata"].get("finalizers") or []
                      if f != FOREGROUND]
        new["metadata"] = {**owner.obj["metadata"], "finalizers": finalizers}
        if not finalizers:
            del new["metadata"]["finalizers"]
        event = self._store.commit(rt.store_key, "MODIFIED", new, owner)
        if not finalizers:
            self._api.remove(rt, event.entry)

    def removed(self, entry: Entry) -> None:
        """`entry` is gone: owners waiting in the foreground for it may now be released."""
        for ref in _refs(entry):
            self.process(str(ref.get("uid")))

    def references_dropped(self, old: Entry, new: Entry) -> None:
        """A dependent that no longer names an owner no longer blocks it."""
        kept = {r.get("uid") for r in _refs(new)}
        for ref in _refs(old):
            if ref.get("uid") not in kept:
                self.process(str(ref.get("uid")))
