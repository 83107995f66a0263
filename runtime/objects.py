"""Kubernetes objects as the API serves them: plain dicts (`Obj`), and the helpers every part of
the runtime and the controllers read them with.

Objects come from users and are hostile: metadata may not be an object, labels may not be
strings, finalizers may not be a list. Nothing here raises on such input; each helper gives the
safe answer (an empty string, an empty mapping, "not deleting", "no finalizer").

Objects from an informer cache are shared and read-only. The finalizer helpers follow
controller-runtime's controllerutil (report whether anything changed, so a write happens only on
change) but never modify a list or metadata mapping they were given: they put fresh ones into the
object passed, so a shallow `dict(cached)` copy is all a caller needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.reconcile import Request
from runtime.resources import Resource

__all__ = [
    "Obj",
    "add_finalizer",
    "annotations_of",
    "finalizers",
    "finalizers_patch",
    "generation_of",
    "has_finalizer",
    "is_deleting",
    "key_of",
    "labels_of",
    "meta",
    "name_of",
    "namespace_of",
    "owner_reference",
    "remove_finalizer",
    "resource_version_of",
    "uid_of",
]

Obj = dict[str, Any]

_EMPTY: Mapping[str, Any] = {}


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`metadata`, or an empty mapping when it is missing or not an object. Read-only."""
    # Exact type checks first: an object decoded from JSON is a dict, and the ABC check costs
    # more than the rest of a helper (they run several times for every watch event).
    if type(obj) is dict:
        value = obj.get("metadata")
        if type(value) is dict:
            return value
    else:
        value = obj.get("metadata") if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else _EMPTY


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def name_of(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj).get("name"))


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The namespace; "" for cluster-scoped objects."""
    return _text(meta(obj).get("namespace"))


def key_of(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object: the informer cache's key, always
    equal to `Request.for_object(obj).key`."""
    m = meta(obj)
    namespace, name = m.get("namespace"), m.get("name")
    if type(namespace) is str and type(name) is str:  # the usual case, without a Request
        return f"{namespace}/{name}" if namespace else name
    return Request.for_object(obj).key


def uid_of(obj: Mapping[str, Any]) -> str:
    return _text(meta(obj).get("uid"))


def resource_version_of(obj: Mapping[str, Any]) -> str:
    """The resourceVersion; "" when missing (a number is taken as its decimal text)."""
    value = meta(obj).get("resourceVersion")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value)


def generation_of(obj: Mapping[str, Any]) -> int:
    value = meta(obj).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _string_map(value: object) -> dict[str, str]:
    if type(value) is not dict and not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """The labels that are string → string (a copy)."""
    return _string_map(meta(obj).get("labels"))


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """The annotations that are string → string (a copy)."""
    return _string_map(meta(obj).get("annotations"))


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """The API server set `metadata.deletionTimestamp`: finalizers are all that keep it."""
    return bool(meta(obj).get("deletionTimestamp"))


# ---- finalizers ------------------------------------------------------------------------------

def finalizers(obj: Mapping[str, Any]) -> list[str]:
    """The finalizers that are strings, in order (a new list)."""
    value = meta(obj).get("finalizers")
    if not isinstance(value, list | tuple):
        return []
    return [f for f in value if isinstance(f, str)]


def has_finalizer(obj: Mapping[str, Any], name: str) -> bool:
    return name in finalizers(obj)


def _set_finalizers(obj: Obj, values: list[str]) -> None:
    # A fresh metadata mapping: the one the object held may be the informer cache's.
    obj["metadata"] = {**meta(obj), "finalizers": values}


def add_finalizer(obj: Obj, name: str) -> bool:
    """Append `name` to `obj`'s finalizers unless it is there; True if `obj` changed. Call it on
    your own shallow copy of a cached object, then write `finalizers_patch(obj)`."""
    current = finalizers(obj)
    if name in current:
        return False
    _set_finalizers(obj, [*current, name])
    return True


def remove_finalizer(obj: Obj, name: str) -> bool:
    """Drop every `name` from `obj`'s finalizers; True if `obj` changed."""
    current = finalizers(obj)
    if name not in current:
        return False
    _set_finalizers(obj, [f for f in current if f != name])
    return True


def finalizers_patch(obj: Mapping[str, Any]) -> Obj:
    """The merge patch that writes `obj`'s finalizers, guarded by its resourceVersion: the API
    server refuses it (409) if the object changed since it was read, so a finalizer added or
    removed by someone else is never overwritten. Without a resourceVersion it is unguarded."""
    body: dict[str, Any] = {"finalizers": finalizers(obj)}
    rv = resource_version_of(obj)
    if rv:
        body["resourceVersion"] = rv
    return {"metadata": body}


# ---- owner references ------------------------------------------------------------------------

def owner_reference(obj: Mapping[str, Any], resource: Resource, *,
                    controller: bool = False) -> Obj:
    """An ownerReferences entry pointing at `obj` (of kind `resource`). `controller=True` is
    controllerutil's SetControllerReference (the one managing owner, blocking the owner's
    foreground deletion until this object is gone); otherwise a plain owner."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": name_of(obj),
        "uid": uid_of(obj),
        "controller": controller,
        "blockOwnerDeletion": controller,
    }


# ---- reading hostile JSON --------------------------------------------------------------------
# What a client stored is checked by the API server only as far as its schema goes (for our own
# CRDs, as far as the schema in manifests/crds goes; for a built-in kind in a server that skips
# validation, not at all). Code that reads a field goes through these, so a wrong type reads as
# absent instead of raising in an informer's index function or an event handler.

def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def dig(value: object, *path: str) -> Any:
    """`value[path[0]][path[1]]...`, None as soon as a step is not an object or lacks the key."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop `metadata.managedFields` in place: large, and nothing in aiolbc reads it."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj
