"""Upstream's rule optimizer (`pkg/ingress/rule_optimizer.go`): the listener rules a group's
paths give that are left out, per listener.

- A redirect rule that would redirect to itself (every part of its redirect is kept or equals
  the rule's own host, path, port or protocol, and its query is kept) is left out: on an HTTPS
  listener, the `actions.ssl-redirect` idiom would otherwise loop forever. A rule matching paths
  by regular expression is never taken for such a loop.
- A rule after a kept redirect rule whose host and path conditions cover it (the redirect rule
  has no other condition, and its hosts, or paths, are none, `/*`, or a superset of the later
  rule's) is left out: it could never match.
Nothing else collapses: every other path is a rule of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol as TypingProtocol
from typing import TypeVar

from controller.model import (
    Action,
    Condition,
    HostHeaderCondition,
    PathPatternCondition,
    RedirectAction,
)


class RuleLike(TypingProtocol):
    @property
    def conditions(self) -> Sequence[Condition]: ...

    @property
    def actions(self) -> Sequence[Action]: ...


R = TypeVar("R", bound=RuleLike)


def optimize(port: int, protocol: str, rules: Sequence[R]) -> list[R]:
    """The rules of one listener that are kept, in their order."""
    kept = [r for r in rules if not _loops(port, protocol, r)]
    out: list[R] = []
    for rule in kept:
        if not any(_redirect(e.actions) is not None and _covers(e.conditions, rule.conditions)
                   for e in out):
            out.append(rule)
    return out


def _redirect(actions: Sequence[Action]) -> RedirectAction | None:
    return next((a for a in actions if isinstance(a, RedirectAction)), None)


def _loops(port: int, protocol: str, rule: RuleLike) -> bool:
    redirect = _redirect(rule.actions)
    if redirect is None:
        return False
    hosts: set[str] = set()
    paths: set[str] = set()
    for c in rule.conditions:
        if isinstance(c, HostHeaderCondition):
            hosts.update(c.values)
        elif isinstance(c, PathPatternCondition):
            if c.regex_values:
                return False
            paths.update(c.values)
    return ((redirect.host == "#{host}" or redirect.host in hosts)
            and (redirect.path == "/#{path}" or redirect.path in paths)
            and redirect.port in ("#{port}", str(port))
            and redirect.protocol in ("#{protocol}", protocol)
            and redirect.query == "#{query}")


def _hosts_and_paths(conditions: Sequence[Condition]) -> tuple[set[str], set[str], bool]:
    """Hosts (wildcard values), paths (regular expressions if any, else values), and whether
    any other condition is there."""
    hosts: set[str] = set()
    paths: set[str] = set()
    other = False
    for c in conditions:
        if isinstance(c, HostHeaderCondition):
            hosts.update(c.values)
        elif isinstance(c, PathPatternCondition):
            paths.update(c.regex_values or c.values)
        else:
            other = True
    return hosts, paths, other


def _covers(earlier: Sequence[Condition], later: Sequence[Condition]) -> bool:
    hosts, paths, other = _hosts_and_paths(earlier)
    if other:
        return False
    their_hosts, their_paths, _ = _hosts_and_paths(later)
    host_ok = not hosts or (bool(their_hosts) and hosts >= their_hosts)
    path_ok = not paths or "/*" in paths or (bool(their_paths) and paths >= their_paths)
    return host_ok and path_ok


__all__ = ["optimize"]
