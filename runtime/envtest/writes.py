"""The write verbs in the order kube-apiserver runs them: the request's object, mutating
admission, the object rules (names, defaults, validation), validating admission, storage.

Webhooks are awaited, so other writes can land meanwhile. An update or delete whose object
changed in between starts over on the new state, as the real server's guaranteed update does;
a resourceVersion precondition then makes it a 409, as there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from runtime.envtest.admission import CREATE, DELETE, UPDATE, Admission, Attributes, Warnings
from runtime.envtest.api import ObjectAPI
from runtime.envtest.auth import User
from runtime.envtest.registry import ResourceType
from runtime.envtest.status import conflict, not_found
from runtime.envtest.store import Entry, Obj

_ATTEMPTS = 8
_META = "meta.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a request, and where the warnings for its answer go."""

    user: User | None               # None: nobody authenticated (RBAC off, no token)
    info: dict[str, Any]            # the UserInfo webhooks are shown
    warnings: Warnings


def _options(kind: str, query: dict[str, str], dry_run: bool) -> dict[str, Any]:
    options: dict[str, Any] = {"kind": kind, "apiVersion": _META}
    if dry_run:
        options["dryRun"] = ["All"]
    for key in ("fieldManager", "fieldValidation"):
        if query.get(key):
            options[key] = query[key]
    return options


def _delete_options(options: dict[str, Any] | None, dry_run: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": _META}
    for key in ("gracePeriodSeconds", "preconditions", "orphanDependents",
                "propagationPolicy"):
        if (options or {}).get(key) is not None:
            out[key] = (options or {})[key]
    if dry_run:
        out["dryRun"] = ["All"]
    return out


class WritePath:
    def __init__(self, api: ObjectAPI, admission: Admission) -> None:
        self.api = api
        self.admission = admission

    def _attrs(self, rt: ResourceType, operation: str, namespace: str, name: str, *,
               subresource: str | None, caller: Caller, dry_run: bool,
               options: dict[str, Any]) -> Attributes:
        if not rt.group and rt.plural == "namespaces" and operation != CREATE:
            namespace = name  # a Namespace's own requests are "in" it
        return Attributes(rt=rt, operation=operation, namespace=namespace, name=name,
                          subresource=subresource or "", user=caller.info, dry_run=dry_run,
                          options=options, warnings=caller.warnings)

    def _decoder(self, rt: ResourceType) -> Callable[[Obj], Obj]:
        return lambda obj: self.api.decode(rt, obj)

    def _unchanged(self, rt: ResourceType, current: Entry) -> bool:
        return self.api.store.get(rt.store_key, current.namespace, current.name) is current

    # -- create ------------------------------------------------------------------------------

    async def create(self, rt: ResourceType, namespace: str, body: Any, *, caller: Caller,
                     query: dict[str, str], dry_run: bool) -> Entry:
        obj = self.api.decode_new(rt, namespace, body)
        meta = obj["metadata"]
        if rt.namespaced:
            # The NamespaceLifecycle plugin refuses before any webhook is asked.
            self.api.check_namespace_usable(rt, namespace,
                                            meta.get("name") or meta.get("generateName") or "")
        attrs = self._attrs(rt, CREATE, namespace if rt.namespaced else "",
                            meta.get("name") or "", subresource=None, caller=caller,
                            dry_run=dry_run, options=_options("CreateOptions", query, dry_run))
        admitted = await self.admission.mutate(attrs, obj, None, decode=self._decoder(rt))
        assert admitted is not None
        final = self.api.prepare_create(rt, namespace, admitted)
        name = final["metadata"]["name"]
        # Validating webhooks are told the generated name.
        await self.admission.validate(attrs if attrs.name == name else replace(attrs, name=name),
                                      final, None)
        return self.api.commit_create(rt, final, dry_run=dry_run)

    # -- update and patch --------------------------------------------------------------------

    async def update(self, rt: ResourceType, namespace: str, name: str, body: Any, *,
                     subresource: str | None, caller: Caller, query: dict[str, str],
                     dry_run: bool) -> Entry:
        for _ in range(_ATTEMPTS):
            obj, current = self.api.decode_update(rt, namespace, name, body)
            if current is None:
                if rt.create_on_update and subresource is None:
                    obj["metadata"].pop("resourceVersion", None)
                    return await self.create(rt, namespace, obj, caller=caller, query=query,
                                             dry_run=dry_run)
                raise not_found(rt, name)
            entry = await self._replace(rt, current, obj, subresource=subresource,
                                        caller=caller, query=query, dry_run=dry_run)
            if entry is not None:
                return entry
        raise conflict(rt, name)

    async def patch(self, rt: ResourceType, namespace: str, name: str, content_type: str,
                    body: Any, *, subresource: str | None, caller: Caller,
                    query: dict[str, str], dry_run: bool) -> Entry:
        for _ in range(_ATTEMPTS):
            current = self.api.get(rt, namespace if rt.namespaced else "", name)
            obj = self.api.apply_patch(rt, current, content_type, body)
            entry = await self._replace(rt, current, obj, subresource=subresource,
                                        caller=caller, query=query, dry_run=dry_run)
            if entry is not None:
                return entry
        raise conflict(rt, name)

    async def _replace(self, rt: ResourceType, current: Entry, obj: Obj, *,
                       subresource: str | None, caller: Caller, query: dict[str, str],
                       dry_run: bool) -> Entry | None:
        """The update of `current`, or None when it changed while webhooks ran."""
        attrs = self._attrs(rt, UPDATE, current.namespace, current.name,
                            subresource=subresource, caller=caller, dry_run=dry_run,
                            options=_options("UpdateOptions", query, dry_run))
        admitted = await self.admission.mutate(attrs, obj, current.obj,
                                               decode=self._decoder(rt))
        assert admitted is not None
        new = self.api.prepare_replace(rt, current, admitted, subresource=subresource)
        await self.admission.validate(attrs, new, current.obj)
        if not self._unchanged(rt, current):
            return None
        return self.api.commit_replace(rt, current, new, subresource=subresource,
                                       dry_run=dry_run)

    # -- delete ------------------------------------------------------------------------------

    async def delete(self, rt: ResourceType, namespace: str, name: str,
                     options: dict[str, Any] | None, *, caller: Caller,
                     dry_run: bool) -> tuple[Entry, bool]:
        """The object and whether it is gone (False: waiting on finalizers)."""
        for _ in range(_ATTEMPTS):
            current = self.api.get(rt, namespace if rt.namespaced else "", name)
            self.api.check_delete_preconditions(rt, current, options)
            attrs = self._attrs(rt, DELETE, current.namespace, name, subresource=None,
                                caller=caller, dry_run=dry_run,
                                options=_delete_options(options, dry_run))
            await self.admission.mutate(attrs, None, current.obj, decode=self._decoder(rt))
            await self.admission.validate(attrs, None, current.obj)
            if self._unchanged(rt, current):
                return self.api.delete(rt, namespace, name, options, dry_run=dry_run)
        raise conflict(rt, name)

    # -- create-only kinds -------------------------------------------------------------------

    async def review(self, rt: ResourceType, body: dict[str, Any], *, caller: Caller,
                     query: dict[str, str], decode: Callable[[Obj], Obj]) -> Obj:
        """A review (TokenReview, SubjectAccessReview, ...) as the webhooks leave it: admitted
        like any create, then answered by the caller and never stored."""
        meta = body.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        attrs = self._attrs(rt, CREATE, "", name if isinstance(name, str) else "",
                            subresource=None, caller=caller, dry_run=False,
                            options=_options("CreateOptions", query, False))
        admitted = await self.admission.mutate(attrs, body, None, decode=decode)
        assert admitted is not None
        await self.admission.validate(attrs, admitted, None)
        return admitted
