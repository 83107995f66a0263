"""JSON annotation values decoded as upstream's Go code decodes them (`encoding/json` into the
structs of `pkg/ingress/config_types.go`), so an Ingress copied from upstream's docs builds the
same rules here.

What Go does, and so this does:
- an object key matches a struct field by its JSON name, exactly or else in any case, with
  Unicode simple case folding (`"Values"`, `"VALUES"` and `"ValueS"` are `values`; so is a key
  spelled with the Kelvin sign for `k` or the long s for `s`);
- a key that matches no field is ignored (here: ignored, and named in the result, so the owner
  is told with a Warning instead of it being dropped silently);
- a field given twice (`"values"` then `"Values"`) takes the last value; for a nested object
  the later object's fields are decoded over the earlier one's, as Go decodes into the struct
  it already allocated; `null` resets it;
- types are strict: `"5"` is not a number and `1` is not a boolean.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from controller.annotations import (
    MAX_JSON_DEPTH,
    MAX_VALUE_LENGTH,
    AnnotationError,
    json_depth,
)

T = TypeVar("T")
# At most this many ignored fields are named per value (the rest are counted).
MAX_NAMED_UNKNOWN = 5

# The only non-ASCII runes whose simple case folding reaches an ASCII letter (Go's
# unicode.SimpleFold orbits): KELVIN SIGN with k, LATIN SMALL LETTER LONG S with s.
_FOLD_EXTRA = str.maketrans({"\u212a": "k", "\u017f": "s"})


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs in document order (duplicates kept)."""


def go_fold(name: str) -> str:
    """The key Go's case-insensitive field match compares (ASCII field names only)."""
    return name.translate(_FOLD_EXTRA).lower()


@cache
def _fields(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """folded JSON name → (JSON name, annotation)."""
    out: dict[str, tuple[str, Any]] = {}
    for name, info in model.model_fields.items():
        json_name = info.alias or name
        out[json_name.lower()] = (json_name, info.annotation)
    return out


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _item_type(annotation: Any) -> Any:
    """The element type of a list or tuple annotation (optional or not), else None."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            item = _item_type(arg)
            if item is not None:
                return item
        return None
    if origin in (list, tuple, Sequence):
        args = typing.get_args(annotation)
        return args[0] if args else None
    return None


def _is_map(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_map(a) for a in typing.get_args(annotation))
    return origin in (dict, Mapping)


def _plain(value: Any) -> Any:
    """Pairs → a dict, last key winning (a map, or a value no field describes)."""
    if isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _fold(value: Any, annotation: Any, path: str, unknown: list[str]) -> Any:
    model = _model_in(annotation)
    if model is not None and isinstance(value, _Pairs):
        return _fold_object(value, model, path, unknown)
    item = _item_type(annotation)
    if item is not None and isinstance(value, list):
        return [_fold(v, item, f"{path}[{i}]", unknown) for i, v in enumerate(value)]
    if _is_map(annotation) and isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    return _plain(value)


def _fold_object(pairs: _Pairs, model: type[BaseModel], path: str,
                 unknown: list[str]) -> dict[str, Any]:
    fields = _fields(model)
    merged: dict[str, Any] = {}
    for key, value in pairs:
        # Go prefers an exact match over a folded one; no two of our fields fold alike, so
        # both find the same field.
        if go_fold(key) in fields:
            json_name, annotation = fields[go_fold(key)]
        else:
            unknown.append(f"{path}.{key}" if path else key)
            continue
        before = merged.get(json_name)
        if (isinstance(value, _Pairs) and isinstance(before, _Pairs)
                and (_model_in(annotation) is not None or _is_map(annotation))):
            # Go decodes the second object into the struct (or map) it already holds.
            value = _Pairs([*before, *value])
        merged[json_name] = value
    out: dict[str, Any] = {}
    for json_name, value in merged.items():
        if value is None:
            continue  # null: Go leaves the field at its zero value (a pointer nil)
        annotation = fields[json_name.lower()][1]
        out[json_name] = _fold(value, annotation, f"{path}.{json_name}" if path else json_name,
                               unknown)
    return out


@cache
def _adapter(schema: Any) -> TypeAdapter[Any]:
    return TypeAdapter(schema)


def decode(key: str, raw: str, schema: type[T]) -> tuple[T, tuple[str, ...]]:
    """`raw` decoded into `schema` (a pydantic model, or a list or tuple of one) as Go would,
    with the fields Go would have ignored (paths like `forwardConfig.targetGroups[0].port`).
    Raises AnnotationError with one line for anything Go or the schema refuses."""
    if len(raw) > MAX_VALUE_LENGTH:
        raise AnnotationError(key, raw, f"is longer than {MAX_VALUE_LENGTH} characters")
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise AnnotationError(key, raw, f"is JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        document = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError) as exc:
        detail = str(exc).split(":")[0] if str(exc) else "invalid"
        raise AnnotationError(key, raw, f"is not valid JSON ({detail})") from None
    unknown: list[str] = []
    folded = _fold(document, schema, "", unknown)
    try:
        # Strict, from JSON text: Go converts nothing (a string is never a number).
        shape: Any = schema
        result: T = _adapter(shape).validate_json(json.dumps(folded), strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        message = " ".join(str(first.get("msg", "invalid")).split())
        message = message.removeprefix("Value error, ")
        where = ".".join(str(p) for p in first.get("loc", ()))
        detail = f"{where}: {message}" if where else message
        raise AnnotationError(key, raw, f"has an unexpected structure ({detail})") from None
    return result, tuple(unknown)


def ignored_fields_message(unknown: Sequence[str]) -> str:
    """One line naming the fields Go ignores (the first few, then a count)."""
    shown = ", ".join(repr(u[:80]) for u in unknown[:MAX_NAMED_UNKNOWN])
    more = len(unknown) - MAX_NAMED_UNKNOWN
    rest = f" and {more} more" if more > 0 else ""
    plural = "s" if len(unknown) > 1 else ""
    return f"has unknown field{plural} {shown}{rest}, ignored as upstream ignores them"
