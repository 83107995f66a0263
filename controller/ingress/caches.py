"""The informer caches the pure stage reads. Plain `Store`s, so unit tests fill them directly."""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.store import Store


@dataclass(frozen=True, slots=True)
class Caches:
    ingresses: Store = field(default_factory=Store)
    services: Store = field(default_factory=Store)
    secrets: Store = field(default_factory=Store)
    classes: Store = field(default_factory=Store)
    params: Store = field(default_factory=Store)
    namespaces: Store = field(default_factory=Store)
