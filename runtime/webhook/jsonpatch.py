"""Build an RFC 6902 JSON patch that turns one JSON document into another.

A mutating handler edits a copy of the object and answers with the difference, so it never
writes patch paths by hand. Objects are compared key by key; a list that only grew or shrank at
its end gets `add`/`remove` operations for those items (appending a readiness gate or a
container does not rewrite the whole list), a list of the same length is compared item by item,
and any other list change replaces the list. JSON types are compared strictly: `1`, `1.0` and
`true` are different values here, as they are in the patched document.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["create_patch", "escape"]

Op = dict[str, Any]


def escape(token: str) -> str:
    """A JSON pointer reference token (RFC 6901): `~` and `/` are escaped."""
    return token.replace("~", "~0").replace("/", "~1")


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _diff(old: Any, new: Any, path: str, ops: list[Op]) -> None:
    if _same(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        for key, value in new.items():
            where = f"{path}/{escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": where, "value": copy.deepcopy(value)})
            else:
                _diff(old[key], value, where, ops)
        return
    if isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        prefix_kept = all(_same(old[i], new[i]) for i in range(common))
        if len(old) == len(new):
            for i in range(common):
                _diff(old[i], new[i], f"{path}/{i}", ops)
            return
        if prefix_kept and len(new) > len(old):
            for i in range(len(old), len(new)):
                ops.append({"op": "add", "path": f"{path}/{i}", "value": copy.deepcopy(new[i])})
            return
        if prefix_kept:
            # From the end, so each index still names the item it meant.
            for i in range(len(old) - 1, len(new) - 1, -1):
                ops.append({"op": "remove", "path": f"{path}/{i}"})
            return
    ops.append({"op": "replace", "path": path, "value": copy.deepcopy(new)})


def create_patch(old: Any, new: Any) -> list[Op]:
    """The operations that turn `old` into `new`; empty when they are equal."""
    ops: list[Op] = []
    _diff(old, new, "", ops)
    return ops
