"""What admission sees of one request (the real server's `admission.Attributes`), and the
warnings webhooks attach to its answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.envtest.registry import ResourceType

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"
# Longer warnings are cut, as the real server's recorder cuts them.
_MAX_WARNING = 4096


class Warnings:
    """`Warning: 299 - "text"` response headers, deduplicated, in the order given."""

    def __init__(self) -> None:
        self._texts: list[str] = []

    def add(self, text: str) -> None:
        # Header values cannot carry line breaks; net/http turns them into spaces too.
        text = " ".join(text.splitlines()).strip()[:_MAX_WARNING]
        if text and text not in self._texts:
            self._texts.append(text)

    @property
    def texts(self) -> list[str]:
        return list(self._texts)

    def header_values(self) -> list[str]:
        return ['299 - "' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'
                for t in self._texts]


@dataclass(frozen=True, slots=True)
class Attributes:
    rt: ResourceType                  # the resource and kind at the version requested
    operation: str                    # CREATE, UPDATE or DELETE
    namespace: str                    # a Namespace's own requests carry its name here
    name: str                         # "" for a create that generates its name
    subresource: str
    user: dict[str, Any]              # authentication.k8s.io/v1 UserInfo
    dry_run: bool
    options: dict[str, Any]           # CreateOptions, UpdateOptions or DeleteOptions
    warnings: Warnings = field(default_factory=Warnings, compare=False)

    @property
    def is_namespace(self) -> bool:
        return not self.rt.group and self.rt.plural == "namespaces"
