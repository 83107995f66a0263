"""The verbs on stored objects (get, list, create, update, patch, delete) with the real server's
metadata rules, finalizers, status subresource, namespace termination and CRD serving.

No HTTP here: `server.py` decodes requests and calls these; every refusal is a `StatusError`.
"""

from __future__ import annotations

import copy
import random
import uuid
from typing import Any

from runtime.clock import Clock, RealClock
from runtime.envtest import conversion, objectmeta, patch, pruning
from runtime.envtest.admission import configuration
from runtime.envtest.crds import CRDServing
from runtime.envtest.garbage import GarbageCollector
from runtime.envtest.registry import CRD_GROUP, CRD_PLURAL, Registry, ResourceType
from runtime.envtest.status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    forbidden_terminating,
    invalid,
    namespace_not_found,
    not_found,
)
from runtime.envtest.store import Entry, Obj, Store, dumps

NAMESPACES_KEY = "/namespaces"
_SERVER_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation")
_GENERATE_NAME_TRIES = 8


def encode_for(entry: Entry, rt: ResourceType) -> bytes:
    """The object as served at `rt`'s version (conversion.py)."""
    if entry.obj.get("apiVersion") == rt.api_version:
        return entry.raw
    return dumps(conversion.served(entry.obj, rt))


class ObjectAPI:
    """Verb implementations over one `Store` and `Registry`."""

    def __init__(self, store: Store, registry: Registry, *, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self.store = store
        self.registry = registry
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._services_created = 0
        self.crds = CRDServing(store, registry, clock=self._clock)
        self.gc = GarbageCollector(self, store)

    @property
    def clock(self) -> Clock:
        return self._clock

    # -- reading -------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self.store.get(rt.store_key, namespace, name)
        if entry is None:
            raise not_found(rt, name)
        return entry

    def entries(self, rt: ResourceType, namespace: str | None) -> list[Entry]:
        return self.store.entries(rt.store_key, namespace if rt.namespaced else None)

    # -- create ----------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str, body: Any, *, dry_run: bool = False
               ) -> Entry:
        obj = self.decode_new(rt, namespace, body)
        return self.commit_create(rt, self.prepare_create(rt, namespace, obj), dry_run=dry_run)

    def decode_new(self, rt: ResourceType, namespace: str, body: Any) -> Obj:
        """The object a create sends, decoded (and defaulted) as admission first sees it: in the
        request's namespace."""
        obj = self.decode(rt, body)
        meta = obj["metadata"]
        self._check_namespace_field(rt, meta, namespace)
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        return obj

    def prepare_create(self, rt: ResourceType, namespace: str, obj: Obj) -> Obj:
        """`obj` as it would be stored (name, uid, timestamps, defaults), validated; nothing is
        written."""
        if self.crd_terminating(rt):
            raise StatusError(405, "create not allowed while custom resource definition is "
                              "terminating", reason="MethodNotAllowed")
        meta = obj["metadata"]
        self._check_namespace_field(rt, meta, namespace)
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        name = meta.get("name") or ""
        generate = meta.get("generateName") or ""
        if not name and not generate:
            raise invalid(rt, "", [("metadata.name", "FieldValueRequired",
                                    "Required value: name or generateName is required")])
        if meta.get("resourceVersion"):
            raise StatusError(500, "resourceVersion should not be set on objects to be created")
        for fld in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                    "selfLink"):
            meta.pop(fld, None)
        if rt.namespaced:
            self.check_namespace_usable(rt, namespace, name or generate)
        if not name:
            name = self._free_name(rt, namespace, generate)
            meta["name"] = name
        problems = objectmeta.name_problems(rt, name) + self._kind_problems(rt, obj)
        if problems:
            raise invalid(rt, name, problems)
        if self.store.get(rt.store_key, namespace if rt.namespaced else "", name) is not None:
            raise already_exists(rt, name)
        meta["uid"] = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = objectmeta.timestamp(self._clock.wall())
        meta["generation"] = 1
        if rt.has_status:
            obj.pop("status", None)
        if rt.plural == "services" and not rt.group:
            self._services_created += 1
        objectmeta.apply_create_defaults(rt, obj, ip_counter=self._services_created)
        self._prune(rt, obj)
        return conversion.stored(obj, rt)

    def _prune(self, rt: ResourceType, obj: Obj) -> None:
        """A custom resource loses what its version's schema does not specify (pruning.py)."""
        if not rt.custom:
            return
        crd = self.store.get(f"{CRD_GROUP}/{CRD_PLURAL}", "", f"{rt.plural}.{rt.group}")
        if crd is None:
            return
        for version in (crd.obj.get("spec") or {}).get("versions") or []:
            if isinstance(version, dict) and version.get("name") == rt.version:
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                pruning.prune(obj, schema if isinstance(schema, dict) else None)
                return

    def commit_create(self, rt: ResourceType, obj: Obj, *, dry_run: bool = False) -> Entry:
        """Store a prepared object (a name taken meanwhile is 409 AlreadyExists)."""
        meta = obj["metadata"]
        if self.store.get(rt.store_key, meta.get("namespace") or "", meta["name"]) is not None:
            raise already_exists(rt, meta["name"])
        if dry_run:
            return Entry(obj)
        event = self.store.commit(rt.store_key, "ADDED", obj, None)
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            return self.crds.establish(event.entry)
        return event.entry

    def _kind_problems(self, rt: ResourceType, obj: Obj) -> list[objectmeta.Cause]:
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            return self.crds.problems(obj)
        if configuration.is_configuration(rt):
            return configuration.problems(rt, obj)
        return []

    def _free_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        # The real server retries a generated name that is taken before giving up.
        for _ in range(_GENERATE_NAME_TRIES):
            name = objectmeta.generate_name(prefix, self._rng)
            if self.store.get(rt.store_key, namespace, name) is None:
                return name
        raise already_exists(rt, name)

    # -- update ----------------------------------------------------------------------------

    def update(self, rt: ResourceType, namespace: str, name: str, body: Any, *,
               subresource: str | None = None, dry_run: bool = False) -> Entry:
        obj, current = self.decode_update(rt, namespace, name, body)
        if current is None:
            if rt.create_on_update and subresource is None:
                obj["metadata"].pop("resourceVersion", None)
                return self.create(rt, namespace, obj, dry_run=dry_run)
            raise not_found(rt, name)
        new = self.prepare_replace(rt, current, obj, subresource=subresource)
        return self.commit_replace(rt, current, new, subresource=subresource, dry_run=dry_run)

    def decode_update(self, rt: ResourceType, namespace: str, name: str, body: Any
                      ) -> tuple[Obj, Entry | None]:
        """The object a PUT sends and the stored one it replaces (None: there is none)."""
        obj = self.decode(rt, body)
        meta = obj["metadata"]
        self._check_namespace_field(rt, meta, namespace)
        body_name = meta.get("name") or ""
        if body_name and body_name != name:
            raise bad_request(f"the name of the object ({body_name}) does not match the name on "
                              f"the URL ({name})")
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        return obj, self.store.get(rt.store_key, namespace if rt.namespaced else "", name)

    def prepare_replace(self, rt: ResourceType, current: Entry, obj: Obj, *,
                        subresource: str | None) -> Obj:
        """The object that would replace `current`, validated; nothing is written."""
        name = current.name
        meta = obj["metadata"]
        old = conversion.served(current.obj, rt)  # what the write at rt's version replaces
        old_meta = old["metadata"]
        sent_rv = meta.get("resourceVersion") or ""
        if sent_rv:
            if sent_rv != old_meta["resourceVersion"]:
                raise conflict(rt, name)
        elif not rt.unconditional_update:
            raise invalid(rt, name, [("metadata.resourceVersion", "FieldValueInvalid",
                                      "Invalid value: 0x0: must be specified for an update")])
        sent_uid = meta.get("uid")
        if sent_uid and sent_uid != old_meta["uid"]:
            raise conflict(rt, name, f"Precondition failed: UID in precondition: {sent_uid}, "
                           f"UID in object meta: {old_meta['uid']}")
        if subresource == "status":
            new = copy.copy(old)
            new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            for fld in _SERVER_FIELDS:
                if fld in old_meta:
                    meta[fld] = old_meta[fld]
                else:
                    meta.pop(fld, None)
            for fld in ("managedFields", "selfLink"):
                meta.pop(fld, None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if rt.plural == "namespaces" and not rt.group:
                new["spec"] = old.get("spec", {})
            if objectmeta.spec_part(new) != objectmeta.spec_part(old):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
            problems = self._kind_problems(rt, new)
            if problems:
                raise invalid(rt, name, problems)
        new_meta = new["metadata"]
        if old_meta.get("deletionTimestamp"):
            added = [f for f in new_meta.get("finalizers") or []
                     if f not in (old_meta.get("finalizers") or [])]
            if added:
                listed = ", ".join(f'"{f}"' for f in added)
                raise invalid(rt, name, [(
                    "metadata.finalizers", "FieldValueForbidden",
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers []string{{{listed}}}")])
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        self._prune(rt, new)
        return conversion.stored(new, rt)

    def commit_replace(self, rt: ResourceType, current: Entry, new: Obj, *,
                       subresource: str | None, dry_run: bool = False) -> Entry:
        if new == current.obj:
            return current  # a no-op write neither bumps the revision nor emits an event
        if dry_run:
            return Entry(new)
        event = self.store.commit(rt.store_key, "MODIFIED", new, current)
        self.gc.references_dropped(current, event.entry)
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL and subresource is None:
            self.crds.serve(event.entry)
        new_meta = new["metadata"]
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            self.remove(rt, event.entry)
        return event.entry

    # -- patch -----------------------------------------------------------------------------

    def patch(self, rt: ResourceType, namespace: str, name: str, content_type: str, body: Any,
              *, subresource: str | None = None, dry_run: bool = False) -> Entry:
        current = self.get(rt, namespace if rt.namespaced else "", name)
        obj = self.apply_patch(rt, current, content_type, body)
        new = self.prepare_replace(rt, current, obj, subresource=subresource)
        return self.commit_replace(rt, current, new, subresource=subresource, dry_run=dry_run)

    def apply_patch(self, rt: ResourceType, current: Entry, content_type: str, body: Any
                    ) -> Obj:
        """`current` with the patch applied, decoded; a resourceVersion inside the patch
        survives into the result and acts as a precondition."""
        name = current.name
        target = copy.deepcopy(conversion.served(current.obj, rt))
        if content_type == patch.MERGE_PATCH:
            if not isinstance(body, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type "
                                  "map[string]interface {}")
            result = patch.merge_patch(target, body)
        elif content_type == patch.JSON_PATCH:
            result = patch.json_patch(target, body)
        elif content_type == patch.STRATEGIC_MERGE_PATCH and rt.strategic_merge:
            if not isinstance(body, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type "
                                  "map[string]interface {}")
            result = patch.strategic_merge(target, body)
        else:
            accepted = [patch.JSON_PATCH, patch.MERGE_PATCH, patch.APPLY_PATCH]
            if rt.strategic_merge:
                accepted.insert(2, patch.STRATEGIC_MERGE_PATCH)
            raise StatusError(415, "the body of the request was in an unknown format - accepted "
                              f"media types include: {', '.join(accepted)}")
        if not isinstance(result, dict):
            raise bad_request("the patch did not produce an object")
        meta = result.get("metadata")
        if isinstance(meta, dict) and meta.get("name", name) != name:
            raise bad_request(f"the name of the object ({meta.get('name')}) does not match the "
                              f"name on the URL ({name})")
        return self.decode(rt, result)

    # -- delete ----------------------------------------------------------------------------

    def delete(self, rt: ResourceType, namespace: str, name: str,
               options: dict[str, Any] | None = None, *, dry_run: bool = False
               ) -> tuple[Entry, bool]:
        """Returns the object and whether it is gone (False: waiting on finalizers)."""
        current = self.get(rt, namespace if rt.namespaced else "", name)
        self.check_delete_preconditions(rt, current, options)
        meta = current.obj["metadata"]
        if dry_run:
            return current, not meta.get("finalizers")
        if rt.plural == "namespaces" and not rt.group:
            return self._terminate_namespace(rt, current)
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            return self._terminate_crd(rt, current)
        if _foreground(options) and not meta.get("deletionTimestamp"):
            return self.gc.delete_foreground(rt, current), False
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return current, False
            new = copy.copy(current.obj)
            new["metadata"] = {**meta, "deletionTimestamp":
                               objectmeta.timestamp(self._clock.wall()),
                               "deletionGracePeriodSeconds": 0}
            return self.store.commit(rt.store_key, "MODIFIED", new, current).entry, False
        return self.remove(rt, current, orphan=_orphans(options)), True

    def check_delete_preconditions(self, rt: ResourceType, current: Entry,
                                   options: dict[str, Any] | None) -> None:
        pre = (options or {}).get("preconditions") or {}
        meta = current.obj["metadata"]
        name = current.name
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise conflict(rt, name, f"Precondition failed: UID in precondition: {pre['uid']}, "
                           f"UID in object meta: {meta['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise conflict(rt, name, f"Precondition failed: ResourceVersion in precondition: "
                           f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                           f"{meta['resourceVersion']}")

    def remove(self, rt: ResourceType, current: Entry, *, orphan: bool = False) -> Entry:
        gone = copy.copy(current.obj)
        gone["metadata"] = dict(current.obj["metadata"])
        event = self.store.commit(rt.store_key, "DELETED", gone, current)
        uid = gone["metadata"].get("uid")
        if uid:
            self.gc.collect(str(uid), orphan=orphan)
        self.gc.removed(event.entry)
        if rt.namespaced:
            self._maybe_finalize_namespace(current.namespace)
        if rt.custom:
            self._maybe_finalize_crd(f"{rt.plural}.{rt.group}")
        return event.entry

    # -- CRD termination -------------------------------------------------------------------

    def _terminate_crd(self, rt: ResourceType, current: Entry) -> tuple[Entry, bool]:
        """What the real server's `customresourcecleanup.apiextensions.k8s.io` finalizer does:
        mark the CRD Terminating (deletionTimestamp, a Terminating condition), delete each of
        its objects (one with finalizers waits for them, as any deletion), and remove the CRD
        once none is left. Meanwhile its objects can be read, updated and deleted, but not
        created."""
        name = current.name
        if not current.obj["metadata"].get("deletionTimestamp"):
            new = copy.copy(current.obj)
            new["metadata"] = {**current.obj["metadata"], "deletionTimestamp":
                               objectmeta.timestamp(self._clock.wall()),
                               "deletionGracePeriodSeconds": 0}
            status = dict(current.obj.get("status") or {})
            status["conditions"] = [
                *(c for c in status.get("conditions") or [] if c.get("type") != "Terminating"),
                {"type": "Terminating", "status": "True",
                 "lastTransitionTime": objectmeta.timestamp(self._clock.wall()),
                 "reason": "InstanceDeletionInProgress",
                 "message": "CustomResource deletion is in progress"}]
            new["status"] = status
            current = self.store.commit(rt.store_key, "MODIFIED", new, current).entry
            types = self.registry.crd_types(name)
            if types:
                for entry in list(self.store.entries(types[0].store_key, None)):
                    self.delete(types[0], entry.namespace, entry.name)
        gone = self._maybe_finalize_crd(name)
        if gone is not None:
            return gone, True
        latest = self.store.get(rt.store_key, "", name)
        return (latest or current), latest is None

    def crd_terminating(self, rt: ResourceType) -> bool:
        """Whether `rt` is a custom resource whose CRD is being deleted."""
        if not rt.custom:
            return False
        crd = self.store.get(f"{CRD_GROUP}/{CRD_PLURAL}", "", f"{rt.plural}.{rt.group}")
        return crd is not None and bool(crd.obj["metadata"].get("deletionTimestamp"))

    def _maybe_finalize_crd(self, name: str) -> Entry | None:
        store_key = f"{CRD_GROUP}/{CRD_PLURAL}"
        crd = self.store.get(store_key, "", name)
        if crd is None or not crd.obj["metadata"].get("deletionTimestamp"):
            return None
        types = self.registry.crd_types(name)
        if types and any(True for _ in self.store.entries(types[0].store_key, None)):
            return None
        self.crds.withdraw(name)
        crd_type = self.registry.lookup(CRD_GROUP, "v1", CRD_PLURAL)
        assert crd_type is not None
        return self.remove(crd_type, crd)

    # -- namespaces ------------------------------------------------------------------------

    def _check_namespace_field(self, rt: ResourceType, meta: dict[str, Any],
                               namespace: str) -> None:
        sent = meta.get("namespace")
        if rt.namespaced and sent and sent != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace "
                              "sent on the request")

    def check_namespace_usable(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns = self.store.get(NAMESPACES_KEY, "", namespace)
        if ns is None:
            raise namespace_not_found(namespace)
        if ns.obj["metadata"].get("deletionTimestamp"):
            raise forbidden_terminating(rt, name, namespace)

    def _terminate_namespace(self, rt: ResourceType, current: Entry) -> tuple[Entry, bool]:
        """Mark Terminating, delete everything inside, remove once nothing is left."""
        name = current.name
        if not current.obj["metadata"].get("deletionTimestamp"):
            new = copy.copy(current.obj)
            new["metadata"] = {**current.obj["metadata"], "deletionTimestamp":
                               objectmeta.timestamp(self._clock.wall())}
            new["status"] = {**(current.obj.get("status") or {}), "phase": "Terminating"}
            current = self.store.commit(rt.store_key, "MODIFIED", new, current).entry
            for store_key, entries in list(self.store.namespaced_store_keys(name)):
                if store_key == NAMESPACES_KEY:
                    continue
                kind = self.type_for(store_key)
                if kind is None:
                    continue
                for entry in entries:
                    self.delete(kind, name, entry.name)
        gone = self._maybe_finalize_namespace(name)
        if gone is not None:
            return gone, True
        latest = self.store.get(NAMESPACES_KEY, "", name)
        return (latest or current), latest is None

    def type_for(self, store_key: str) -> ResourceType | None:
        for rt in self.registry:
            if rt.store_key == store_key:
                return rt
        return None

    def _maybe_finalize_namespace(self, namespace: str) -> Entry | None:
        ns = self.store.get(NAMESPACES_KEY, "", namespace)
        if ns is None or not ns.obj["metadata"].get("deletionTimestamp"):
            return None
        for store_key, _ in self.store.namespaced_store_keys(namespace):
            if store_key != NAMESPACES_KEY:
                return None
        gone = copy.copy(ns.obj)
        gone["spec"] = {"finalizers": []}
        return self.store.commit(NAMESPACES_KEY, "DELETED", gone, ns).entry

    # -- decoding --------------------------------------------------------------------------

    def decode(self, rt: ResourceType, body: Any) -> Obj:
        """A request body as an object of `rt`, with the defaults decoding fills in."""
        if not isinstance(body, dict):
            raise bad_request("Object 'Kind' is missing in the request body" if body is None
                              else "the body of the request is not a JSON object")
        api_version = body.get("apiVersion")
        if api_version is not None and api_version != rt.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the "
                              f"expected API version ({rt.api_version})")
        kind = body.get("kind")
        if kind is not None and kind != rt.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                              f"({rt.kind})")
        meta = body.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise bad_request("json: cannot unmarshal into Go struct field .metadata of type "
                              "v1.ObjectMeta")
        for fld in ("labels", "annotations"):
            value = meta.get(fld)
            if value is None:
                continue
            if not isinstance(value, dict) or not all(isinstance(v, str)
                                                      for v in value.values()):
                raise bad_request(f"json: cannot unmarshal into Go struct field "
                                  f"ObjectMeta.metadata.{fld} of type string")
        finalizers = meta.get("finalizers")
        if finalizers is not None and (not isinstance(finalizers, list) or not all(
                isinstance(f, str) for f in finalizers)):
            raise bad_request("json: cannot unmarshal into Go struct field "
                              "ObjectMeta.metadata.finalizers of type string")
        obj = objectmeta.normalized(rt, copy.deepcopy(body))
        obj["metadata"] = {k: v for k, v in obj["metadata"].items()
                           if k != "managedFields" and v is not None}
        if configuration.is_configuration(rt):
            configuration.apply_defaults(rt, obj)
        return obj


def _orphans(options: dict[str, Any] | None) -> bool:
    options = options or {}
    return options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents") is True


def _foreground(options: dict[str, Any] | None) -> bool:
    return (options or {}).get("propagationPolicy") == "Foreground"
