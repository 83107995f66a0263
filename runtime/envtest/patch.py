"""The three patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic
merge patch.

Strategic merge knows list merge keys by field name only (the real server reads them from Go
struct tags); the table below covers the fields aiolbc and kubectl touch. Lists not in it are
replaced whole, as lists without a patch strategy are.
"""

from __future__ import annotations

import copy
from typing import Any

from runtime.envtest.status import StatusError, bad_request

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Field name → merge key; "" marks a list of primitives merged as a set.
_MERGE_KEYS: dict[str, str] = {
    "finalizers": "",
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ports": "port",
    "topologySpreadConstraints": "topologyKey",
    "taints": "key",
    "addresses": "type",
    "webhooks": "name",
}
# Container ports are keyed by containerPort, Service ports by port.
_CONTAINER_FIELDS = {"containers", "initContainers", "ephemeralContainers"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"the server rejected our request due to an error in our request: "
                          f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _json_patch_error(message: str) -> StatusError:
    return StatusError(422, message, reason="Invalid")


def _resolve(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    """The container holding the last part, and that part."""
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, dict):
            if part not in cur:
                raise _json_patch_error(f"jsonpatch: path {path!r}: doc is missing path "
                                        f"{part!r}")
            cur = cur[part]
        elif isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                raise _json_patch_error(f"jsonpatch: path {path!r}: invalid index "
                                        f"{part!r}") from None
        else:
            raise _json_patch_error(f"jsonpatch: path {path!r}: doc is missing path {part!r}")
    return cur, parts[-1]


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _resolve(doc, parts, path)
    try:
        if isinstance(parent, dict):
            return parent[last]
        if isinstance(parent, list):
            return parent[int(last)]
    except (KeyError, ValueError, IndexError):
        pass
    raise _json_patch_error(f"jsonpatch: path {path!r}: doc is missing key {last!r}")


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent, last = _resolve(doc, parts, path)
    try:
        if isinstance(parent, dict):
            return parent.pop(last)
        if isinstance(parent, list):
            return parent.pop(int(last))
    except (KeyError, ValueError, IndexError):
        pass
    raise _json_patch_error(f"jsonpatch remove operation does not apply: doc is missing path: "
                            f"{path!r}")


def _add(doc: Any, path: str, value: Any, *, replace: bool) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _resolve(doc, parts, path)
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _json_patch_error(f"jsonpatch replace operation does not apply: doc is "
                                    f"missing key: {path}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        else:
            try:
                index = int(last)
            except ValueError:
                raise _json_patch_error(f"jsonpatch: invalid index {last!r}") from None
            if replace:
                if not 0 <= index < len(parent):
                    raise _json_patch_error(f"jsonpatch replace operation does not apply: "
                                            f"doc is missing key: {path}")
                parent[index] = value
            else:
                if not 0 <= index <= len(parent):
                    raise _json_patch_error(f"jsonpatch add operation does not apply: index "
                                            f"out of bounds: {path}")
                parent.insert(index, value)
    else:
        raise _json_patch_error(f"jsonpatch: path {path!r}: doc is missing path")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902; the target is copied first, the result returned."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise bad_request("the server rejected our request due to an error in our request")
        kind = op["op"]
        path = op.get("path")
        if not isinstance(path, str):
            raise _json_patch_error(f"jsonpatch {kind} operation: missing path")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _json_patch_error(f"jsonpatch {kind} operation: missing value")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=False)
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=True)
        elif kind == "remove":
            _remove(doc, path)
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise _json_patch_error(f"jsonpatch {kind} operation: missing from")
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value, replace=False)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _json_patch_error(f"testing value {path} failed: test failed")
        else:
            raise _json_patch_error(f"Unexpected kind: {kind}")
    return doc


def _merge_key(field: str, parent_field: str) -> str | None:
    if field == "ports" and parent_field in _CONTAINER_FIELDS:
        return "containerPort"
    return _MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any, parent_field: str = "") -> Any:
    """Strategic merge patch with `$patch` (replace/delete), `$deleteFromPrimitiveList/…`,
    `$setElementOrder/…` (accepted, ordering not enforced) and `$retainKeys` (ignored)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, list):
            result[key] = _merge_list(key, parent_field, current, value)
        elif isinstance(value, dict):
            merged = strategic_merge(current, value, key)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


def _merge_list(field: str, parent_field: str, current: Any, patch: list[Any]) -> list[Any]:
    key = _merge_key(field, parent_field)
    if key is None or not isinstance(current, list):
        if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
            return [copy.deepcopy({k: v for k, v in item.items() if k != "$patch"})
                    for item in patch if not (isinstance(item, dict) and len(item) == 1)]
        return [strategic_merge(None, item, field) if isinstance(item, dict) else item
                for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    if key == "":
        merged = list(current)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(item) for item in patch
                if not (isinstance(item, dict) and item.get("$patch") == "replace")]
    out = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        index = next((i for i, cur in enumerate(out)
                      if isinstance(cur, dict) and cur.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
            continue
        if index is None:
            out.append(strategic_merge(None, item, field))
        else:
            out[index] = strategic_merge(out[index], item, field)
    return out
