"""One configured webhook, parsed from its stored (validated, defaulted) configuration."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from runtime.envtest.selectors import LabelSelector, label_selector


@dataclass(frozen=True, slots=True)
class Rule:
    operations: frozenset[str]
    groups: frozenset[str]
    versions: frozenset[str]
    resources: tuple[str, ...]
    scope: str


@dataclass(frozen=True, slots=True)
class Service:
    namespace: str
    name: str
    port: int
    path: str


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a stored configuration, defaults applied."""

    configuration: str
    index: int
    name: str
    mutating: bool
    rules: tuple[Rule, ...]
    failure_policy: str
    match_policy: str
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    side_effects: str
    timeout: int
    reinvoke_if_needed: bool
    review_versions: tuple[str, ...]
    url: str | None
    service: Service | None
    ca_bundle: bytes | None  # PEM

    @property
    def uid(self) -> str:
        """What tells two webhooks of the same name apart across configurations."""
        return f"{self.configuration}/{self.name}/{self.index}"


def _rule(raw: dict[str, Any]) -> Rule:
    return Rule(frozenset(raw.get("operations") or ()), frozenset(raw.get("apiGroups") or ()),
                frozenset(raw.get("apiVersions") or ()), tuple(raw.get("resources") or ()),
                str(raw.get("scope") or "*"))


def webhooks(obj: dict[str, Any], *, mutating: bool) -> list[Webhook]:
    """The webhooks of a stored (so validated and defaulted) configuration, in its order."""
    out = []
    for index, hook in enumerate(obj.get("webhooks") or []):
        client = hook.get("clientConfig") or {}
        svc = client.get("service")
        bundle = client.get("caBundle")
        out.append(Webhook(
            configuration=obj["metadata"]["name"], index=index, name=hook["name"],
            mutating=mutating, rules=tuple(_rule(r) for r in hook.get("rules") or ()),
            failure_policy=hook.get("failurePolicy") or "Fail",
            match_policy=hook.get("matchPolicy") or "Equivalent",
            namespace_selector=label_selector(hook.get("namespaceSelector")),
            object_selector=label_selector(hook.get("objectSelector")),
            side_effects=hook.get("sideEffects") or "",
            timeout=int(hook.get("timeoutSeconds") or 10),
            reinvoke_if_needed=hook.get("reinvocationPolicy") == "IfNeeded",
            review_versions=tuple(hook.get("admissionReviewVersions") or ()),
            url=client.get("url"),
            service=Service(svc["namespace"], svc["name"], int(svc.get("port") or 443),
                            svc.get("path") or "") if isinstance(svc, dict) else None,
            ca_bundle=base64.b64decode(bundle) if bundle else None))
    return out
