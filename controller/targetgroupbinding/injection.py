"""Which readiness gates a new pod gets (the pod mutating webhook, upstream's rules): one
`target-health.elbv2.k8s.aws/<binding>` gate for every ip TargetGroupBinding of its namespace
whose Service selects it (a Service without a selector selects nothing). Gates already there
are kept; the AWS ALB Ingress controller's (`target-health.alb.ingress.k8s.aws/...`) are
dropped when new ones are added, as upstream does for pods moving from that controller.

Read from the informer caches: a binding created a moment before its pods may be missed, which
is why upstream's advice holds here too (create the Service and Ingress, and label the
namespace, before the Deployment)."""

from __future__ import annotations

import copy

from controller.apis import LEGACY_TARGET_HEALTH_CONDITION_PREFIX, target_health_condition
from controller.targetgroupbinding.pods import readiness_gates
from runtime.objects import Obj, as_dict, dig, is_deleting, labels_of, name_of
from runtime.store import NAMESPACE_INDEX, Store


def _selects(selector: object, labels: dict[str, str]) -> bool:
    wanted = as_dict(selector)
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def gates_for(pod: Obj, namespace: str, *, bindings: Store, services: Store) -> list[str]:
    """The gate condition types the pod should carry, in binding-name order."""
    labels = labels_of(pod)
    found: list[str] = []
    for tgb in sorted(bindings.by_index(NAMESPACE_INDEX, namespace), key=name_of):
        if is_deleting(tgb) or dig(tgb, "spec", "targetType") != "ip":
            continue
        service_name = dig(tgb, "spec", "serviceRef", "name")
        if not isinstance(service_name, str):
            continue
        service = services.get(f"{namespace}/{service_name}")
        if service is not None and _selects(dig(service, "spec", "selector"), labels):
            found.append(target_health_condition(name_of(tgb)))
    return found


def with_gates(pod: Obj, gates: list[str]) -> Obj:
    """The pod with `gates` added (and legacy target-health gates dropped when there are any);
    the pod itself when nothing changes."""
    present = readiness_gates(pod)
    missing = [g for g in gates if g not in present]
    legacy = [g for g in present if g.startswith(LEGACY_TARGET_HEALTH_CONDITION_PREFIX)]
    if not missing and not (gates and legacy):
        return pod
    out = copy.deepcopy(pod)
    spec = out.setdefault("spec", {})
    kept = [g for g in spec.get("readinessGates") or []
            if not (gates and isinstance(g, dict) and isinstance(g.get("conditionType"), str)
                    and g["conditionType"].startswith(LEGACY_TARGET_HEALTH_CONDITION_PREFIX))]
    spec["readinessGates"] = [*kept, *({"conditionType": g} for g in missing)]
    return out


__all__ = ["gates_for", "with_gates"]
