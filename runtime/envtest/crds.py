"""What the apiextensions controllers do: accept a CRD's names, mark it Established, serve
its resource at every served version, and withdraw it (with its objects) when it goes."""

from __future__ import annotations

import copy
from collections.abc import Callable

from runtime.clock import Clock
from runtime.envtest import objectmeta
from runtime.envtest.registry import (
    CRD_GROUP,
    CRD_PLURAL,
    CRDError,
    Registry,
    ResourceType,
    types_from_crd,
)
from runtime.envtest.store import Entry, Obj, Store


class CRDServing:
    def __init__(self, store: Store, registry: Registry, *, clock: Clock) -> None:
        self.store = store
        self.registry = registry
        self._clock = clock
        # Called with the types a deleted or changed CRD stopped serving.
        self.on_withdraw: Callable[[list[ResourceType]], None] = lambda types: None
        self.on_registry_change: Callable[[], None] = lambda: None

    def problems(self, obj: Obj) -> list[objectmeta.Cause]:
        try:
            types = types_from_crd(obj)
        except CRDError as exc:
            fld, _, msg = str(exc).partition(": ")
            return [(fld, "FieldValueInvalid", msg)]
        spec = obj["spec"]
        expected = f"{spec['names']['plural']}.{spec['group']}"
        name = obj["metadata"].get("name")
        if name != expected:
            return [("metadata.name", "FieldValueInvalid",
                     f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')]
        # A version objects were once stored at must stay in spec.versions (they may still be
        # in etcd at it): the real server's rule, which an update of an older CRD meets.
        versions = {v.get("name") for v in spec.get("versions") or []}
        stored = (obj.get("status") or {}).get("storedVersions") or []
        for index, version in enumerate(stored):
            if version not in versions:
                return [(f"status.storedVersions[{index}]", "FieldValueInvalid",
                         f'Invalid value: "{version}": must appear in spec.versions')]
        for rt in types:
            existing = self.registry.lookup(rt.group, rt.version, rt.plural)
            if existing is not None and not existing.custom:
                return [("spec.group", "FieldValueInvalid",
                         f'Invalid value: "{rt.group}": resource {rt.plural} is already served')]
        return []

    def establish(self, entry: Entry) -> Entry:
        """What the apiextensions controllers do right after a CRD is created: accept its
        names, mark it Established and start serving it."""
        crd = copy.deepcopy(entry.obj)
        spec = crd["spec"]
        names = spec["names"]
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
        spec.setdefault("conversion", {"strategy": "None"})
        storage = next((v["name"] for v in spec["versions"] if v.get("storage")),
                       spec["versions"][0]["name"])
        now = objectmeta.timestamp(self._clock.wall())
        crd["status"] = {
            "acceptedNames": dict(names),
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
                 "reason": "NoConflicts", "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now,
                 "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted"},
            ],
            "storedVersions": [storage],
        }
        event = self.store.commit(f"{CRD_GROUP}/{CRD_PLURAL}", "MODIFIED", crd, entry)
        self.serve(event.entry)
        return event.entry

    def serve(self, entry: Entry) -> None:
        name = entry.name
        before = {(rt.group, rt.version, rt.plural) for rt in self.registry.crd_types(name)}
        types = types_from_crd(entry.obj)
        self.registry.serve_crd(name, types)
        after = {(rt.group, rt.version, rt.plural) for rt in types}
        withdrawn = [ResourceType(g, v, p, "", "") for g, v, p in before - after]
        if withdrawn:
            self.on_withdraw(withdrawn)
        self.on_registry_change()

    def withdraw(self, name: str) -> None:
        """Stop serving a CRD's resource and delete its objects (finalizers are not waited
        for, unlike the real server)."""
        types = self.registry.withdraw_crd(name)
        if not types:
            return
        store_key = types[0].store_key
        for entry in list(self.store.entries(store_key, None)):
            gone = copy.copy(entry.obj)
            gone["metadata"] = dict(entry.obj["metadata"])
            self.store.commit(store_key, "DELETED", gone, entry)
        self.store.drop_table(store_key)
        self.on_withdraw(types)
        self.on_registry_change()
