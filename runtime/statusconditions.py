"""metav1.Condition lists, kept the way `meta.SetStatusCondition` does: one entry per type,
`lastTransitionTime` moved only when the status flips, so `kubectl wait --for condition=...`
and dashboards see real transitions rather than every reconcile."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def rfc3339(unix_seconds: float) -> str:
    return datetime.fromtimestamp(int(unix_seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(conditions: list[dict[str, Any]] | None, *, type: str, status: str,
                  reason: str, message: str, observed_generation: int | None,
                  now: float) -> list[dict[str, Any]]:
    """A new list with the condition of `type` set; the input is not modified."""
    result = [dict(c) for c in conditions or [] if isinstance(c, dict)]
    for cond in result:
        if cond.get("type") == type:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = rfc3339(now)
            cond.update(status=status, reason=reason, message=message)
            if observed_generation is not None:
                cond["observedGeneration"] = observed_generation
            return result
    new: dict[str, Any] = {"type": type, "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": rfc3339(now)}
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    result.append(new)
    return result


def find_condition(obj: dict[str, Any], type: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type:
            return cond
    return None
