"""What the controller writes into a Service's status: the NLB's DNS name under
`status.loadBalancer.ingress[].hostname`, and one condition of type `aiolbc/LoadBalancerReady`
(Services carry metav1.Conditions in `status.conditions`) saying whether the last reconcile
succeeded and, if not, why, in the same words as the Warning Event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from runtime.objects import Obj
from runtime.statusconditions import find_condition, set_condition

CONDITION_TYPE: Final = "aiolbc/LoadBalancerReady"
REASON_RECONCILED: Final = "Reconciled"


def hostname_of(service: Mapping[str, Any]) -> str | None:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    first = ingress[0] if isinstance(ingress, list) and ingress else {}
    value = first.get("hostname") if isinstance(first, Mapping) else None
    return value if isinstance(value, str) and value else None


def is_ready(service: Obj) -> bool:
    cond = find_condition(service, CONDITION_TYPE)
    return cond is not None and cond.get("status") == "True"


def status_patch(service: Obj, *, ready: bool, reason: str, message: str, now: float,
                 hostname: str | None = None) -> Obj | None:
    """Merge patch for the status subresource, or None when the status already says this.
    `hostname=None` leaves the load balancer ingress as it is (a failed reconcile does not
    take an existing address away)."""
    wanted = "True" if ready else "False"
    current = find_condition(service, CONDITION_TYPE)
    generation = (service.get("metadata") or {}).get("generation")
    body: Obj = {}
    if hostname is not None and hostname_of(service) != hostname:
        body["loadBalancer"] = {"ingress": [{"hostname": hostname}]}
    if (current is None or current.get("status") != wanted or current.get("reason") != reason
            or current.get("message") != message
            or current.get("observedGeneration") != generation):
        body["conditions"] = set_condition(
            (service.get("status") or {}).get("conditions"), type=CONDITION_TYPE, status=wanted,
            reason=reason, message=message, observed_generation=generation, now=now)
    return {"status": body} if body else None


def clear_patch(service: Obj) -> Obj | None:
    """Merge patch removing what we wrote (address and condition), or None if nothing is left."""
    status = service.get("status") or {}
    body: Obj = {}
    if hostname_of(service) is not None:
        body["loadBalancer"] = {"ingress": None}
    conditions = status.get("conditions") or []
    if find_condition(service, CONDITION_TYPE) is not None:
        rest = [c for c in conditions if not (isinstance(c, dict)
                                              and c.get("type") == CONDITION_TYPE)]
        body["conditions"] = rest or None
    return {"status": body} if body else None


__all__ = ["CONDITION_TYPE", "clear_patch", "hostname_of", "is_ready", "status_patch"]
