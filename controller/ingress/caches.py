"""The informer caches the pure stage reads. Plain `Store`s, so unit tests fill them directly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.store import Store

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Caches:
    ingresses: Store = field(default_factory=Store)
    services: Store = field(default_factory=Store)
    secrets: Store = field(default_factory=Store)
    classes: Store = field(default_factory=Store)
    params: Store = field(default_factory=Store)
    namespaces: Store = field(default_factory=Store)


def meta(obj: Obj) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def key_of(obj: Obj) -> str:
    m = meta(obj)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"
