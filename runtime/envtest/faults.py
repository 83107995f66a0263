"""Fault injection and the request log, for tests that need a misbehaving API server."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.envtest.status import StatusError

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected fault",
    503: "The server is currently unable to handle the request",
    504: "The server was unable to return a response in the time allotted",
}


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One served API request (admin requests are not recorded)."""

    verb: str
    path: str
    query: dict[str, str]
    status: int
    # The authenticated user; "" when unknown (always, with RBAC off and no token).
    user: str = ""


@dataclass(slots=True)
class _Rule:
    remaining: int
    verb: str | None
    resource: str | None
    status: int
    retry_after: float | None

    def matches(self, verb: str, resource: str | None) -> bool:
        return (self.verb is None or self.verb == verb) and \
            (self.resource is None or self.resource == resource)


@dataclass
class Faults:
    """Injected failures and latency. `fail_next` rules are consumed in the order they were
    added; a request consumes at most one."""

    latency: float = 0.0
    _rules: list[_Rule] = field(default_factory=list)

    def fail_next(self, n: int = 1, *, verb: str | None = None, resource: str | None = None,
                  status: int = 500, retry_after: float | None = None) -> None:
        if n < 1:
            raise ValueError("n must be at least 1")
        if verb is not None and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; expected one of {', '.join(VERBS)}")
        if not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error code (400-599)")
        self._rules.append(_Rule(n, verb, resource, status, retry_after))

    def set_latency(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("latency must not be negative")
        self.latency = seconds

    def clear(self) -> None:
        self._rules.clear()
        self.latency = 0.0

    @property
    def pending(self) -> int:
        return sum(rule.remaining for rule in self._rules)

    def take(self, verb: str, resource: str | None) -> StatusError | None:
        """The injected error for this request, if a rule matches (consuming one use)."""
        for rule in self._rules:
            if rule.matches(verb, resource):
                rule.remaining -= 1
                if rule.remaining == 0:
                    self._rules.remove(rule)
                return _error(rule.status, rule.retry_after)
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"latency": self.latency,
                "rules": [{"n": r.remaining, "verb": r.verb, "resource": r.resource,
                           "status": r.status, "retry_after": r.retry_after}
                          for r in self._rules]}


def _error(status: int, retry_after: float | None) -> StatusError:
    headers: dict[str, str] = {}
    details: dict[str, Any] | None = None
    if status == 429 and retry_after is None:
        retry_after = 1
    if retry_after is not None:
        seconds = max(0, round(retry_after))
        headers["Retry-After"] = str(seconds)
        details = {"retryAfterSeconds": seconds}
    message = _MESSAGES.get(status, f"injected fault (HTTP {status})")
    return StatusError(status, message, details=details, headers=headers)
