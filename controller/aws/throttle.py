"""Client-side AWS API throttling with upstream's `--aws-api-throttle` syntax.

A rule is `serviceID:operationRegex=rate:burst`; serviceID is the SDK service id
(`Elastic Load Balancing v2`, `EC2`, `ACM`, `WAFV2`, ...). Two deliberate differences from
upstream's throttler, which searched each regex anywhere in the name and waited on every
matching bucket (RegisterTargets paid twice until upstream PR #4641):

- Regexes are matched against the **whole** operation name (`Describe.*` does not match
  `XDescribe`), whether or not the rule spells `^`.
- A call is charged to **exactly one** bucket: the first rule, in order, whose service and
  regex match. Order is the order rules are written on the command line; for a service left
  at its defaults it is the order of `DEFAULT_THROTTLE` (Register/Deregister before Describe
  before Modify). Operations no rule matches are not throttled.

Overriding any rule of a service replaces all default rules of that service; other services
keep their defaults.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.aws.errors import AWSConfigError
from runtime.clock import Clock, RealClock
from runtime.tokenbucket import TokenBucket

ELBV2 = "Elastic Load Balancing v2"
WAFV2 = "WAFV2"
WAF_REGIONAL = "WAF Regional"

RULE_SYNTAX = "serviceID:operationRegex=rate:burst"


@dataclass(frozen=True)
class ThrottleRule:
    service_id: str
    operation: str  # the regex as written; matched against the whole operation name
    rate: float  # tokens per second
    burst: int
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            pattern = re.compile(self.operation)
        except re.error as exc:
            raise AWSConfigError(
                f"throttle rule for {self.service_id!r}: operation regex {self.operation!r} "
                f"is invalid: {exc}") from None
        object.__setattr__(self, "_pattern", pattern)
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise AWSConfigError(f"throttle rule {self}: rate must be a positive number")
        if not isinstance(self.burst, int) or isinstance(self.burst, bool) or self.burst < 1:
            raise AWSConfigError(f"throttle rule {self}: burst must be an integer >= 1")

    def matches(self, service_id: str, operation: str) -> bool:
        return service_id == self.service_id and self._pattern.fullmatch(operation) is not None

    def __str__(self) -> str:
        rate = f"{self.rate:g}"
        return f"{self.service_id}:{self.operation}={rate}:{self.burst}"


@dataclass(frozen=True)
class ThrottleConfig:
    """An ordered list of rules; the first match wins. `ThrottleConfig()` throttles nothing."""

    rules: tuple[ThrottleRule, ...] = ()

    def rule_for(self, service_id: str, operation: str) -> ThrottleRule | None:
        for rule in self.rules:
            if rule.matches(service_id, operation):
                return rule
        return None

    def services(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rule.service_id for rule in self.rules))

    def with_overrides(self, overrides: Iterable[ThrottleRule]) -> ThrottleConfig:
        """Rules of every service named in `overrides` replace this config's rules for it."""
        new = tuple(overrides)
        replaced = {rule.service_id for rule in new}
        kept = tuple(rule for rule in self.rules if rule.service_id not in replaced)
        return ThrottleConfig(rules=kept + new)

    def __str__(self) -> str:
        return ",".join(str(rule) for rule in self.rules)


# Upstream v3.2 defaults (pkg/aws/throttle/defaults.go).
DEFAULT_THROTTLE = ThrottleConfig(rules=(
    ThrottleRule(WAF_REGIONAL, "^AssociateWebACL|DisassociateWebACL", 0.5, 1),
    ThrottleRule(WAF_REGIONAL, "^GetWebACLForResource|ListResourcesForWebACL", 1, 1),
    ThrottleRule(WAFV2, "^AssociateWebACL|DisassociateWebACL", 0.5, 1),
    ThrottleRule(WAFV2, "^GetWebACLForResource|ListResourcesForWebACL", 1, 1),
    ThrottleRule(ELBV2, "^RegisterTargets|^DeregisterTargets", 4, 20),
    ThrottleRule(ELBV2, "^Describe.*", 50, 200),
    ThrottleRule(ELBV2, "^Modify.*", 3, 20),
))

_NUMBER = re.compile(r"\s*[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*")


def parse_throttle(text: str, *, defaults: ThrottleConfig = DEFAULT_THROTTLE) -> ThrottleConfig:
    """Parse an `--aws-api-throttle` value into the effective config (defaults + overrides).

    An empty string gives `defaults` unchanged. Raises `AWSConfigError` naming the bad entry.
    """
    overrides = [_parse_rule(entry) for entry in _split_entries(text)]
    return defaults.with_overrides(overrides)


def _split_entries(text: str) -> list[str]:
    entries = [entry.strip() for entry in text.split(",")]
    if all(not entry for entry in entries):
        return []
    for entry in entries:
        if not entry:
            raise AWSConfigError(f"invalid --aws-api-throttle {text!r}: empty entry "
                                 f"(expected comma-separated {RULE_SYNTAX})")
    return entries


def _parse_rule(entry: str) -> ThrottleRule:
    def bad(why: str) -> AWSConfigError:
        return AWSConfigError(f"invalid --aws-api-throttle entry {entry!r}: {why}")

    if "=" not in entry:
        raise bad(f"missing '=' (expected {RULE_SYNTAX})")
    # The operation regex may itself hold ':' or '=', so split on the first ':' and last '='.
    head, _, limits = entry.rpartition("=")
    service_id, sep, operation = head.partition(":")
    service_id = service_id.strip()
    if not sep:
        raise bad(f"missing ':' between serviceID and operation regex (expected {RULE_SYNTAX})")
    if not service_id:
        raise bad(f"empty serviceID (expected {RULE_SYNTAX})")
    if not operation:
        raise bad(f"empty operation regex (expected {RULE_SYNTAX})")
    rate_text, sep, burst_text = limits.partition(":")
    if not sep or ":" in burst_text:
        raise bad(f"limits {limits!r} must be rate:burst")
    if not _NUMBER.fullmatch(rate_text):
        raise bad(f"rate {rate_text!r} is not a number")
    rate = float(rate_text)
    if rate <= 0:
        raise bad(f"rate {rate_text!r} must be greater than 0")
    try:
        burst = int(burst_text)
    except ValueError:
        raise bad(f"burst {burst_text!r} is not an integer") from None
    if burst < 1:
        raise bad(f"burst {burst_text!r} must be at least 1")
    try:
        re.compile(operation)
    except re.error as exc:
        raise bad(f"operation regex {operation!r} is invalid: {exc}") from None
    return ThrottleRule(service_id, operation, rate, burst)


class Throttler:
    """One token bucket per rule. `wait` charges the first matching rule's bucket and sleeps
    (on the injected clock) until the token is due."""

    def __init__(self, config: ThrottleConfig, *, clock: Clock | None = None) -> None:
        self._config = config
        self._clock: Clock = clock or RealClock()
        self._buckets = [TokenBucket(rate=rule.rate, burst=rule.burst, clock=self._clock)
                         for rule in config.rules]

    @property
    def config(self) -> ThrottleConfig:
        return self._config

    def bucket_for(self, service_id: str, operation: str) -> TokenBucket | None:
        for rule, bucket in zip(self._config.rules, self._buckets, strict=True):
            if rule.matches(service_id, operation):
                return bucket
        return None

    def reserve(self, service_id: str, operation: str) -> float:
        """Charge one token; return the seconds the caller must wait before calling."""
        bucket = self.bucket_for(service_id, operation)
        return 0.0 if bucket is None else bucket.reserve()

    async def wait(self, service_id: str, operation: str, *, yield_: bool = False) -> float:
        """Charge one token and wait for it; return the time waited.

        With `yield_` the caller does not queue for a token: it takes one only when the bucket
        holds one that no other caller is owed, so callers that do queue (real changes) always
        go first and a yielding caller never adds to their wait."""
        bucket = self.bucket_for(service_id, operation)
        if bucket is None:
            return 0.0
        if not yield_:
            delay = bucket.reserve()
            if delay > 0:
                await self._clock.sleep(delay)
            return delay
        start = self._clock.now()
        while not bucket.try_take():
            await self._clock.sleep(bucket.time_to_next())
        return self._clock.now() - start
