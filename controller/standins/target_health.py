"""Target health that moves the way ELBv2's does, for the fault proxy to answer with.

moto reports every registered target `healthy` at once and drops a deregistered one at once.
AWS does not: a new target is `initial` until it passes its health checks, a target of a target
group no load balancer forwards to is `unused`, a deregistered target is `draining` for the
group's deregistration delay, and an id that was never registered is `unused` /
`Target.NotRegistered`. This module is that state machine, driven by an injected clock; moto
stays the registry of record and `target_health_handler.py` puts the two together on the wire.

Tests and the demo drive it with `mark_healthy` / `mark_unhealthy` / `clear_mark`,
`complete_draining` and `settings` (delays), and with the clock itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from runtime.clock import Clock

TargetKey = tuple[str, int | None]  # (Id, Port); Port None for Lambda targets


@dataclass(frozen=True)
class Health:
    """One `TargetHealth` answer: AWS leaves Reason and Description out when healthy."""

    state: str
    reason: str | None = None
    description: str | None = None


HEALTHY: Final = Health("healthy")
REGISTRATION_IN_PROGRESS: Final = Health(
    "initial", "Elb.RegistrationInProgress", "Target registration is in progress")
NOT_IN_USE: Final = Health(
    "unused", "Target.NotInUse",
    "Target group is not configured to receive traffic from the load balancer")
NOT_REGISTERED: Final = Health(
    "unused", "Target.NotRegistered", "Target is not registered to the target group")
DEREGISTRATION_IN_PROGRESS: Final = Health(
    "draining", "Target.DeregistrationInProgress", "Target deregistration is in progress")
HEALTH_CHECK_DISABLED: Final = Health(
    "unavailable", "Target.HealthCheckDisabled", "Health checks are disabled")
# The reasons AWS documents for `unhealthy`, with the descriptions it gives them.
UNHEALTHY_REASONS: Final = {
    "Target.FailedHealthChecks": "Health checks failed",
    "Target.Timeout": "Request timed out",
    "Target.ResponseCodeMismatch": "Health checks failed with these codes: [503]",
    "Elb.InternalError": "Health checks failed due to an internal error",
}
# AWS's default `deregistration_delay.timeout_seconds`.
DEFAULT_DEREGISTRATION_DELAY: Final = 300.0


@dataclass(frozen=True)
class TargetHealthSettings:
    """How fast targets move.

    By default the delays are AWS's own, read from the target group: a new target needs
    `HealthyThresholdCount x HealthCheckIntervalSeconds` of passing checks, and a deregistered
    one drains for the `deregistration_delay.timeout_seconds` attribute; both are multiplied by
    `time_scale`. A fixed `health_check_delay` / `deregistration_delay` (seconds, not scaled)
    replaces them; `math.inf` means "until a test says so" (`mark_healthy`,
    `complete_draining`)."""

    time_scale: float = 1.0
    health_check_delay: float | None = None
    deregistration_delay: float | None = None

    def __post_init__(self) -> None:
        if not self.time_scale >= 0:
            raise ValueError(f"time_scale must be >= 0, got {self.time_scale}")
        for name in ("health_check_delay", "deregistration_delay"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")


@dataclass(frozen=True)
class GroupFacts:
    """What the model needs to know about a target group, as moto describes it."""

    arn: str
    port: int | None
    in_use: bool  # a listener or rule of some load balancer forwards to it
    health_check_enabled: bool = True
    health_check_port: str | None = "traffic-port"
    healthy_after: float = 150.0  # HealthyThresholdCount x HealthCheckIntervalSeconds


@dataclass(frozen=True)
class TargetSpec:
    """A target as a request names it (`Targets.member.N`)."""

    id: str
    port: int | None = None
    zone: str | None = None


@dataclass(frozen=True)
class TargetDescription:
    """One `TargetHealthDescription`."""

    id: str
    port: int | None
    zone: str | None
    health_check_port: str | None
    health: Health


@dataclass(frozen=True)
class TargetEvent:
    """A registration or deregistration the model took (its clock's time): with the delays,
    enough to tell when each target was healthy and when it finished draining."""

    time: float
    arn: str
    target: TargetKey
    kind: str  # "registered" or "deregistered"


@dataclass
class _Registered:
    zone: str | None
    registered_at: float
    checks_since: float | None  # health checks run only while a load balancer uses the group


@dataclass
class _Draining:
    zone: str | None
    since: float
    attribute: float  # the group's deregistration_delay.timeout_seconds when deregistered


@dataclass
class _Group:
    registered: dict[TargetKey, _Registered] = field(default_factory=dict)
    draining: dict[TargetKey, _Draining] = field(default_factory=dict)
    # (Id, Port) -> Health; Port None marks every port of that Id.
    marks: dict[TargetKey, Health] = field(default_factory=dict)


class TargetHealth:
    """The health of every target of every target group the proxy has seen change."""

    def __init__(self, settings: TargetHealthSettings, clock: Clock) -> None:
        self.settings = settings
        self._clock = clock
        self._groups: dict[str, _Group] = {}
        self.history: list[TargetEvent] = []

    # ---- what tests and the demo drive -------------------------------------------------------

    def mark_healthy(self, arn: str, target_id: str, port: int | None = None) -> None:
        """The target passes its health checks from now on (every port of it if `port` is
        None), until it is deregistered or marked again."""
        self._group(arn).marks[(target_id, port)] = HEALTHY

    def mark_unhealthy(self, arn: str, target_id: str, port: int | None = None, *,
                       reason: str = "Target.FailedHealthChecks") -> None:
        """The target fails its health checks from now on, for one of AWS's documented
        `unhealthy` reasons."""
        if reason not in UNHEALTHY_REASONS:
            raise ValueError(f"unknown unhealthy reason {reason!r}; one of "
                             f"{', '.join(sorted(UNHEALTHY_REASONS))}")
        self._group(arn).marks[(target_id, port)] = Health(
            "unhealthy", reason, UNHEALTHY_REASONS[reason])

    def clear_mark(self, arn: str, target_id: str, port: int | None = None) -> None:
        """Back to the delay-driven health checks."""
        self._group(arn).marks.pop((target_id, port), None)

    def complete_draining(self, arn: str | None = None) -> None:
        """End the deregistration delay now, for one target group or for all."""
        for group_arn, group in self._groups.items():
            if arn is None or group_arn == arn:
                group.draining.clear()

    # ---- what the wire handler reports -------------------------------------------------------

    def registered(self, facts: GroupFacts, targets: Iterable[TargetSpec]) -> None:
        """RegisterTargets succeeded at moto. Registering a draining target starts it anew;
        registering a registered one changes nothing, as at AWS."""
        now = self._clock.now()
        group = self._group(facts.arn)
        for target in targets:
            key = (target.id, target.port if target.port is not None else facts.port)
            group.draining.pop(key, None)
            if key not in group.registered:
                group.registered[key] = _Registered(
                    zone=target.zone, registered_at=now,
                    checks_since=now if facts.in_use else None)
                self.history.append(TargetEvent(now, facts.arn, key, "registered"))

    def deregistered(self, facts: GroupFacts, targets: Iterable[TargetSpec], *,
                     delay_attribute: float) -> None:
        """DeregisterTargets succeeded at moto: the targets drain, and their marks end."""
        now = self._clock.now()
        group = self._group(facts.arn)
        for target in targets:
            key = (target.id, target.port if target.port is not None else facts.port)
            previous = group.registered.pop(key, None)
            if previous is not None:
                self.history.append(TargetEvent(now, facts.arn, key, "deregistered"))
            zone = target.zone or (previous.zone if previous else None)
            group.draining[key] = _Draining(zone=zone, since=now, attribute=delay_attribute)
            group.marks.pop(key, None)
            group.marks.pop((target.id, None), None)

    def forget(self, arn: str) -> None:
        """The target group is gone."""
        self._groups.pop(arn, None)

    # ---- what happened (fixed delays, groups in use from the start, no marks) ----------------

    def healthy_timeline(self, arn: str) -> list[tuple[float, int]]:
        """How many targets of `arn` were healthy, as steps `(from this time, count)`, worked
        out from `history` and the fixed `health_check_delay`."""
        delay = self.settings.health_check_delay
        if delay is None or not math.isfinite(delay):
            raise ValueError("a timeline needs a fixed, finite health_check_delay")
        changes: list[tuple[float, int]] = []
        since: dict[TargetKey, float] = {}
        for event in (e for e in self.history if e.arn == arn):
            if event.kind == "registered":
                since[event.target] = event.time
                continue
            registered = since.pop(event.target, None)
            if registered is not None and event.time > registered + delay:
                changes += [(registered + delay, 1), (event.time, -1)]
        changes += [(registered + delay, 1) for registered in since.values()]
        steps: list[tuple[float, int]] = []
        count = 0
        for at, change in sorted(changes):
            count += change
            if steps and steps[-1][0] == at:
                steps[-1] = (at, count)
            else:
                steps.append((at, count))
        return steps

    def drained(self, arn: str) -> list[tuple[TargetKey, float, float]]:
        """`(target, deregistered at, drained at)` of every deregistration of `arn`, with the
        fixed `deregistration_delay`."""
        delay = self.settings.deregistration_delay
        if delay is None or not math.isfinite(delay):
            raise ValueError("draining times need a fixed, finite deregistration_delay")
        return [(e.target, e.time, e.time + delay) for e in self.history
                if e.arn == arn and e.kind == "deregistered"]

    def describe(self, facts: GroupFacts, at_moto: Sequence[tuple[TargetKey, Health]],
                 requested: Sequence[TargetSpec] | None = None) -> list[TargetDescription]:
        """The `TargetHealthDescriptions` of a DescribeTargetHealth, from what moto reports as
        registered (`at_moto`: its keys and its own verdicts) and what this model remembers.
        With `requested` (the `Targets` filter) exactly those targets, in that order."""
        now = self._clock.now()
        group = self._group(facts.arn)
        self._expire(group, now)
        self._reconcile(group, facts, at_moto, now)
        verdicts = {key: health for key, health in at_moto}
        if requested is None:
            keys = [*group.registered, *group.draining]
            return [self._description(group, facts, key, verdicts, now) for key in keys]
        return [self._description(group, facts,
                                  (t.id, t.port if t.port is not None else facts.port),
                                  verdicts, now, zone=t.zone) for t in requested]

    # ---- internals ---------------------------------------------------------------------------

    def _group(self, arn: str) -> _Group:
        return self._groups.setdefault(arn, _Group())

    def _deregistration_delay(self, draining: _Draining) -> float:
        if self.settings.deregistration_delay is not None:
            return self.settings.deregistration_delay
        return draining.attribute * self.settings.time_scale

    def _health_check_delay(self, facts: GroupFacts) -> float:
        if self.settings.health_check_delay is not None:
            return self.settings.health_check_delay
        return facts.healthy_after * self.settings.time_scale

    def _expire(self, group: _Group, now: float) -> None:
        for key, draining in list(group.draining.items()):
            if now >= draining.since + self._deregistration_delay(draining):
                del group.draining[key]

    @staticmethod
    def _reconcile(group: _Group, facts: GroupFacts,
                   at_moto: Sequence[tuple[TargetKey, Health]], now: float) -> None:
        """Follow changes made around the proxy (moto is the registry of record)."""
        at_moto_ids = {target_id for (target_id, _), _ in at_moto}
        # moto keeps one port per target id, so a target registered through the proxy on a
        # second port is kept while moto still knows its id.
        for key in [k for k in group.registered if k[0] not in at_moto_ids]:
            del group.registered[key]
        known_ids = {target_id for target_id, _ in group.registered}
        for key, _ in at_moto:
            if key not in group.registered and key[0] not in known_ids:
                group.draining.pop(key, None)  # registered again around the proxy
                group.registered[key] = _Registered(zone=None, registered_at=now,
                                                    checks_since=None)
        for registered in group.registered.values():
            if not facts.in_use:
                registered.checks_since = None
            elif registered.checks_since is None:
                registered.checks_since = now

    def _description(self, group: _Group, facts: GroupFacts, key: TargetKey,
                     verdicts: dict[TargetKey, Health], now: float, *,
                     zone: str | None = None) -> TargetDescription:
        target_id, port = key
        health_check_port = facts.health_check_port
        if health_check_port == "traffic-port":
            health_check_port = str(port) if port is not None else None
        registered = group.registered.get(key)
        draining = group.draining.get(key)
        if registered is not None:
            health = self._registered_health(group, facts, key, registered, verdicts, now)
            zone = registered.zone or zone
        elif draining is not None:
            health = DEREGISTRATION_IN_PROGRESS
            zone = draining.zone or zone
        else:
            health = NOT_REGISTERED
        return TargetDescription(id=target_id, port=port, zone=zone,
                                 health_check_port=health_check_port, health=health)

    def _registered_health(self, group: _Group, facts: GroupFacts, key: TargetKey,
                           registered: _Registered, verdicts: dict[TargetKey, Health],
                           now: float) -> Health:
        verdict = verdicts.get(key)
        if verdict is not None and verdict.state != "healthy":
            return verdict  # moto knows better: a stopped instance, say
        if not facts.in_use:
            return NOT_IN_USE
        if not facts.health_check_enabled:
            return HEALTH_CHECK_DISABLED
        mark = group.marks.get(key) or group.marks.get((key[0], None))
        if mark is not None:
            return mark
        since = registered.checks_since if registered.checks_since is not None else now
        delay = self._health_check_delay(facts)
        if math.isfinite(delay) and now >= since + delay:
            return HEALTHY
        return REGISTRATION_IN_PROGRESS
