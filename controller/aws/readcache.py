"""AWS reads for callers that anyone may set off: the admission webhooks. The webhook server
answers whoever reaches its port, and every review of a TargetGroupBinding used to cost a
DescribeTargetGroups and a DescribeTags: 600 reviews from a pod in the cluster drew 519
throttled answers from ELBv2, and a new NLB took 23 s instead of half a second. Here no number
of reviews costs more than a few calls:

- answers are cached by key: what exists for `ttl`, what does not for the shorter
  `negative_ttl` (a resource made a moment ago is seen soon), at most `size` keys of each
  kind, the least recently used dropped first;
- one lookup per key is in flight: concurrent reviews of one target group share it;
- a miss spends a token of one bucket (`rate` per second, `burst`) shared by every kind; a
  lookup that gets none within `max_wait`, or that AWS (or the network) fails, raises
  `LookupUnavailable`, and the caller fails open, as the webhooks' documentation says. Errors
  are not cached: the next miss asks again, when the bucket lets it.

A lookup that outlives its caller (a review answered at its deadline) still completes and
fills the cache for the next one.

The region snapshot (snapshot.py) does not fit here: it answers only paced verifications, and
its listing may be minutes old, where admission must see a target group made a moment ago.

```python
reads = ReadCache(DirectReader(Caller(pool)), clock=manager.clock)
found = await reads.target_group(arn=arn)          # Tagged: desc None when it does not exist
group = await reads.security_group("sg-0123")      # EC2's description with its Tags, or None
```
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from controller.aws import addonreads
from controller.aws.reader import Desc, DirectReader, Tagged
from runtime.clock import Clock, RealClock
from runtime.tokenbucket import TokenBucket

__all__ = ["LookupCache", "LookupUnavailable", "ReadCache", "ReadCacheSettings"]

V = TypeVar("V")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadCacheSettings:
    # Target groups' type, VPC, IP family and protocol never change; tags and a name's ARN
    # (a group deleted and made again) may, and the reconciler checks them again anyway.
    ttl: float = 30.0
    negative_ttl: float = 5.0
    size: int = 1024  # keys per kind: a few hundred KiB
    # A handful of misses at once (a chart creating its bindings), then two a second: ELBv2's
    # Describe bucket refills at 10 a second for the whole account, and the reconcilers need it.
    rate: float = 2.0
    burst: int = 10
    # Well inside a handler's deadline (half the API server's 10 s), so that the review says
    # why it skipped the lookup rather than being cut off.
    max_wait: float = 1.0

    def __post_init__(self) -> None:
        if not (self.ttl > 0 and self.negative_ttl > 0 and self.rate > 0
                and self.max_wait >= 0):
            raise ValueError("read cache times and rate must be positive")
        if self.size < 1 or self.burst < 1:
            raise ValueError("read cache size and burst must be at least 1")


class LookupUnavailable(Exception):
    """No answer in time: no token for a miss within `max_wait`, or the lookup failed
    (`__cause__`). The caller goes on without the answer (fails open)."""


class LookupCache(Generic[V]):
    """One kind of lookup: answers by key, one lookup in flight per key, misses paced by the
    shared `bucket`; `missing(answer)` tells an answer that the resource is not there (kept
    for `negative_ttl`)."""

    def __init__(self, *, bucket: TokenBucket, clock: Clock, settings: ReadCacheSettings,
                 missing: Callable[[V], bool]) -> None:
        self._bucket = bucket
        self._clock = clock
        self._settings = settings
        self._missing = missing
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._in_flight: dict[str, asyncio.Future[V]] = {}
        self.lookups = 0  # misses sent to `lookup`

    def __len__(self) -> int:
        return len(self._entries)

    def cached(self, key: str) -> tuple[bool, V | None]:
        """(known, answer) without a lookup; an expired entry is dropped."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if self._clock.now() >= expires:
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, value

    def put(self, key: str, value: V) -> None:
        settings = self._settings
        ttl = settings.negative_ttl if self._missing(value) else settings.ttl
        self._entries[key] = (self._clock.now() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > settings.size:
            self._entries.popitem(last=False)

    async def get(self, key: str, lookup: Callable[[], Awaitable[V]]) -> V:
        """The answer for `key`, from the cache or from `lookup` (shared with every caller
        asking for `key` meanwhile); raises LookupUnavailable."""
        entry = self._entries.get(key)
        if entry is not None and self._clock.now() < entry[0]:
            self._entries.move_to_end(key)
            return entry[1]
        pending = self._in_flight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._look_up(key, lookup))
            self._in_flight[key] = pending
            pending.add_done_callback(lambda done: self._settle(key, done))
        # A caller that gives up (its review's deadline) leaves the lookup to the others.
        return await asyncio.shield(pending)

    def _settle(self, key: str, done: asyncio.Future[V]) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
        if not done.cancelled():
            done.exception()  # retrieved: a failure nobody awaited is not an error to report

    async def _look_up(self, key: str, lookup: Callable[[], Awaitable[V]]) -> V:
        await self._token()
        self.lookups += 1
        try:
            value = await lookup()
        except Exception as exc:  # AWS's error, a timeout, a refused connection: fail open
            raise LookupUnavailable(f"{exc or type(exc).__name__}") from exc
        self.put(key, value)
        return value

    async def _token(self) -> None:
        waited = 0.0
        while not self._bucket.try_take():
            wait = self._bucket.time_to_next()
            if waited + wait > self._settings.max_wait:
                raise LookupUnavailable("too many AWS lookups: rate limited")
            await self._clock.sleep(wait)
            waited += wait


class ReadCache:
    """The reads admission makes, each kind in its own `LookupCache`, all paced by one bucket.
    A new kind is a `LookupCache` and a method here."""

    def __init__(self, reader: DirectReader, *, clock: Clock | None = None,
                 settings: ReadCacheSettings | None = None) -> None:
        self._reader = reader
        self._clock: Clock = clock or RealClock()
        self.settings = settings or ReadCacheSettings()
        bucket = TokenBucket(rate=self.settings.rate, burst=self.settings.burst,
                             clock=self._clock)
        self.target_groups: LookupCache[Tagged] = LookupCache(
            bucket=bucket, clock=self._clock, settings=self.settings,
            missing=lambda found: found.desc is None)
        self.security_groups: LookupCache[Desc | None] = LookupCache(
            bucket=bucket, clock=self._clock, settings=self.settings,
            missing=lambda group: group is None)
        self.web_acls: LookupCache[str | None] = LookupCache(
            bucket=bucket, clock=self._clock, settings=self.settings,
            missing=lambda arn: arn is None)

    @property
    def lookups(self) -> int:
        """Misses sent to AWS so far, of every kind."""
        return (self.target_groups.lookups + self.security_groups.lookups
                + self.web_acls.lookups)

    async def target_group(self, *, arn: str | None = None, name: str | None = None) -> Tagged:
        """A target group by ARN (or else name) with its tags (DescribeTargetGroups and
        DescribeTags on a miss): `desc` None when it does not exist, with AWS's words
        (`refused`) when it gave some. Raises LookupUnavailable."""
        key = f"arn:{arn}" if arn else f"name:{name or ''}"

        async def lookup() -> Tagged:
            found = await self._reader.target_group(arn=arn, name=name)
            if found.desc is not None and not arn:
                # The same group by ARN: a binding created by name is then checked by ARN.
                self.target_groups.put(f"arn:{found.desc.get('TargetGroupArn')}", found)
            return found

        return await self.target_groups.get(key, lookup)

    async def security_group(self, group_id: str) -> Desc | None:
        """A security group by ID (DescribeSecurityGroups on a miss), with its `Tags`, `VpcId`
        and rules as EC2 describes them; None when there is none (or the ID is malformed).
        Raises LookupUnavailable."""
        async def lookup() -> Desc | None:
            found = await self._reader.security_groups(vpc_id=None, ids=[group_id])
            return next((g for g in found if g.get("GroupId") == group_id), None)

        return await self.security_groups.get(group_id, lookup)

    async def web_acl_named(self, name: str) -> str | None:
        """The ARN of the REGIONAL WAFv2 web ACL called `name` (ListWebACLs on a miss), or
        None. Raises LookupUnavailable."""
        async def lookup() -> str | None:
            return await addonreads.wafv2_web_acl_named(self._reader.caller, name)

        return await self.web_acls.get(name, lookup)
