"""Conversion between the versions of a custom resource, as the real server does for a CRD whose
`spec.conversion.strategy` is `None` (the default, and upstream's TargetGroupBinding CRD's).

Objects are stored at the storage version. An object read, watched, patched, updated or sent to
a webhook at another served version is the stored one with only `apiVersion` changed, then
coerced to that version's structural schema: what the version does not specify is pruned (the
apiextensions server's schema-coercing converter). So a field only a newer version has is not
served at an older one, and a write at the older version (an update, a patch, a status write)
drops it from storage: the round trip the `None` strategy gives. Webhook conversion is not
served.
"""

from __future__ import annotations

import copy
from typing import Any

from runtime.envtest import pruning
from runtime.envtest.registry import ResourceType

Obj = dict[str, Any]


def served(obj: Obj, rt: ResourceType) -> Obj:
    """`obj` (stored at any version of `rt`'s resource) as served at `rt`'s version; `obj`
    itself when it is at that version already."""
    if obj.get("apiVersion") == rt.api_version or not rt.custom:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = rt.api_version
    pruning.prune(out, rt.schema)
    return out


def stored(obj: Obj, rt: ResourceType) -> Obj:
    """`obj`, written at `rt`'s version, converted in place to the storage version."""
    if not rt.custom or not rt.storage_version or rt.storage_version == rt.version:
        return obj
    obj["apiVersion"] = f"{rt.group}/{rt.storage_version}"
    pruning.prune(obj, rt.storage_schema)
    return obj


__all__ = ["served", "stored"]
