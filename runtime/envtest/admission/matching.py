"""Which webhooks a request calls, decided as the real server's `ShouldCallHook` decides:
namespaceSelector, objectSelector, then the rules (operations, groups, versions, resources with
`*` and `resource/subresource` forms, scope), then — with matchPolicy Equivalent — the rules
against the other versions of the same resource."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from runtime.envtest.admission.attributes import CREATE, UPDATE, Attributes
from runtime.envtest.admission.webhook import Rule, Webhook
from runtime.envtest.registry import ADMISSION_GROUP, ResourceType
from runtime.envtest.selectors import labels_of
from runtime.envtest.status import StatusError

# Namespace labels by name; None when the namespace does not exist.
NamespaceLabels = Callable[[str], Mapping[str, str] | None]
_EXEMPT_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def exempt(attrs: Attributes) -> bool:
    """Webhook configurations are never admitted by webhooks: a broken webhook could otherwise
    lock everyone out of fixing it."""
    return attrs.rt.group == ADMISSION_GROUP and attrs.rt.kind in _EXEMPT_KINDS


def _labels(obj: Any) -> Mapping[str, str] | None:
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _scope_matches(rule: Rule, attrs: Attributes, rt: ResourceType) -> bool:
    is_namespace = not rt.group and rt.plural == "namespaces"
    if rule.scope == "Namespaced":
        return not is_namespace and bool(attrs.namespace)
    if rule.scope == "Cluster":
        return is_namespace or not attrs.namespace
    return True


def rule_matches(rule: Rule, attrs: Attributes, rt: ResourceType) -> bool:
    if not _scope_matches(rule, attrs, rt):
        return False
    if "*" not in rule.operations and attrs.operation not in rule.operations:
        return False
    if "*" not in rule.groups and rt.group not in rule.groups:
        return False
    if "*" not in rule.versions and rt.version not in rule.versions:
        return False
    for item in rule.resources:
        # `services` names the resource alone; `*` every resource without a subresource.
        resource, _, sub = item.partition("/")
        if resource in ("*", rt.plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _namespace_matches(hook: Webhook, attrs: Attributes, obj: Any,
                       namespace_labels: NamespaceLabels) -> bool | StatusError:
    """Whether the namespace's labels are selected; a 404 when it does not exist."""
    if not attrs.namespace and not attrs.is_namespace:
        return True  # cluster-scoped objects other than Namespaces are never exempted
    if not hook.namespace_selector:
        return True
    if attrs.is_namespace and not attrs.subresource and attrs.operation in (CREATE, UPDATE):
        # The request itself writes the Namespace: its labels are the new ones.
        labels = _labels(obj) or {}
    else:
        found = namespace_labels(attrs.namespace)
        if found is None:
            return StatusError(404, f'namespaces "{attrs.namespace}" not found',
                               details={"name": attrs.namespace, "kind": "namespaces"})
        labels = found
    return labels_of(hook.namespace_selector, labels)


def _object_matches(hook: Webhook, obj: Any, old: Any) -> bool:
    if not hook.object_selector:
        return True
    return any(labels is not None and labels_of(hook.object_selector, labels)
               for labels in (_labels(obj), _labels(old)))


def invocation(hook: Webhook, attrs: Attributes, obj: Any, old: Any, *,
               namespace_labels: NamespaceLabels,
               equivalents: Callable[[], Iterable[ResourceType]]) -> ResourceType | None:
    """The resource (and version) `hook` is called for, or None when it does not apply.
    Raises the namespace lookup's 404 only for a webhook whose rules match."""
    in_namespace = _namespace_matches(hook, attrs, obj, namespace_labels)
    if in_namespace is False or not _object_matches(hook, obj, old):
        return None
    matched: ResourceType | None = None
    if any(rule_matches(rule, attrs, attrs.rt) for rule in hook.rules):
        matched = attrs.rt
    elif hook.match_policy == "Equivalent":
        others = [rt for rt in equivalents() if rt != attrs.rt]
        matched = next((rt for rule in hook.rules for rt in others
                        if rule_matches(rule, attrs, rt)), None)
    if matched is not None and isinstance(in_namespace, StatusError):
        raise in_namespace
    return matched
