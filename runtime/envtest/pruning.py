"""Pruning of custom resources, as the real API server does for every CRD of apiextensions/v1:
a field its version's structural schema does not specify is dropped when the object is written
(unless `x-kubernetes-preserve-unknown-fields` keeps it), so a field a CRD forgot is lost, as on
a real cluster. `apiVersion`, `kind` and `metadata` at the top (and in embedded resources) are
the server's and are never pruned."""

from __future__ import annotations

from typing import Any

_SERVER_FIELDS = ("apiVersion", "kind", "metadata")


def prune(obj: dict[str, Any], schema: dict[str, Any] | None) -> None:
    """Drop from `obj`, in place, what `schema` (a version's openAPIV3Schema) does not keep."""
    if not isinstance(schema, dict):
        return  # no schema: nothing the server could prune by
    _prune_object(obj, schema, keep=_SERVER_FIELDS)


def _prune(value: Any, schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        keep = _SERVER_FIELDS if schema.get("x-kubernetes-embedded-resource") else ()
        _prune_object(value, schema, keep=keep)
    elif isinstance(value, list):
        items = schema.get("items")
        for item in value:
            _prune(item, items)


def _prune_object(value: dict[str, Any], schema: dict[str, Any], *,
                  keep: tuple[str, ...]) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(value):
        if key in keep:
            continue  # the server's own fields, whatever the schema says of them
        if key in properties:
            _prune(value[key], properties[key])
        elif isinstance(additional, dict):
            _prune(value[key], additional)
        elif additional is True or preserve:
            continue
        else:
            del value[key]
