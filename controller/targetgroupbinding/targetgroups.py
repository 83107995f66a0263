"""Target groups as the TargetGroupBinding controller sees them: looked up by ARN or name with
the tags and VPC the ownership checks read (cached for a while), their current targets
(DescribeTargetHealth, cached as upstream does), and registration in chunks of 200 (the API's
limit per call)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.apis.targetgroupbinding import InvalidSpec
from controller.aws import AWSClientPool, AWSError
from controller.ownership import FACTS_TTL, TargetGroupFacts, describe_tags
from controller.targetgroupbinding.targets import Target
from runtime.clock import Clock, RealClock

CHUNK_SIZE = 200
HEALTH_CACHE_TTL = 300.0  # upstream: 5 min
# States whose targets are about to change on their own; a cache holding them is refreshed on
# the next look instead of being trusted for five minutes.
_VOLATILE_STATES = frozenset({"initial", "unhealthy", "draining", "unavailable"})


class TargetGroupNotFound(InvalidSpec):
    condition_reason = "TargetGroupNotFound"


@dataclass(frozen=True, slots=True)
class TargetGroupInfo:
    arn: str
    name: str
    target_type: str
    vpc_id: str
    ip_address_type: str
    port: int | None
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def facts(self) -> TargetGroupFacts:
        return TargetGroupFacts(arn=self.arn, name=self.name, vpc_id=self.vpc_id,
                                tags=self.tags)


@dataclass(slots=True)
class _Health:
    targets: set[Target]
    fetched_at: float
    volatile: bool


class TargetGroups:
    def __init__(self, pool: AWSClientPool, *, clock: Clock | None = None,
                 health_ttl: float = HEALTH_CACHE_TTL, info_ttl: float = FACTS_TTL) -> None:
        self._pool = pool
        self._clock = clock or RealClock()
        self._ttl = health_ttl
        self._info_ttl = info_ttl
        # By ARN and by "name:<name>", with the time it was read: tags and VPC are what the
        # ownership checks rely on, so they are read again now and then.
        self._info: dict[str, tuple[float, TargetGroupInfo]] = {}
        self._health: dict[str, _Health] = {}

    def cached(self, *, arn: str | None, name: str | None) -> TargetGroupInfo | None:
        """What is known without asking AWS (for priority decisions)."""
        entry = self._info.get(arn or f"name:{name}")
        return entry[1] if entry is not None else None

    async def resolve(self, *, arn: str | None, name: str | None) -> TargetGroupInfo:
        key = arn or f"name:{name}"
        now = self._clock.now()
        cached = self._info.get(key)
        if cached is not None and now - cached[0] < self._info_ttl:
            return cached[1]
        tags: dict[str, str] | None = None
        try:
            if arn:
                # Both at once: a verification's pace should not depend on one more round trip.
                resp, tags = await asyncio.gather(
                    self._pool.call("elbv2", "DescribeTargetGroups", TargetGroupArns=[arn]),
                    describe_tags(self._pool, arn))
            else:
                resp = await self._pool.call("elbv2", "DescribeTargetGroups", Names=[name])
        except AWSError as exc:
            if exc.code in ("TargetGroupNotFound", "ValidationError"):
                raise TargetGroupNotFound(
                    f"target group {arn or name} not found: {exc.message or exc.code}") from None
            raise
        groups = resp.get("TargetGroups") or []
        if not groups:
            raise TargetGroupNotFound(f"target group {arn or name} not found")
        tg = groups[0]
        found = str(tg["TargetGroupArn"])
        info = TargetGroupInfo(
            arn=found, name=tg.get("TargetGroupName", ""),
            target_type=tg.get("TargetType", "instance"), vpc_id=tg.get("VpcId", ""),
            ip_address_type=tg.get("IpAddressType", "ipv4"), port=tg.get("Port"),
            tags=tags if tags is not None and found == arn
            else await describe_tags(self._pool, found))
        self._info[key] = (now, info)
        self._info[info.arn] = (now, info)
        return info

    def forget(self, arn: str) -> None:
        self._health.pop(arn, None)

    def _gone(self, arn: str) -> TargetGroupNotFound:
        """A target group deleted behind our back: drop what we cached about it."""
        self._health.pop(arn, None)
        for key in [k for k, (_, info) in self._info.items() if info.arn == arn]:
            del self._info[key]
        return TargetGroupNotFound(f"target group {arn} not found")

    async def current_targets(self, arn: str) -> set[Target]:
        cached = self._health.get(arn)
        now = self._clock.now()
        if cached is not None and not cached.volatile and now - cached.fetched_at < self._ttl:
            return set(cached.targets)
        try:
            resp = await self._pool.call("elbv2", "DescribeTargetHealth", TargetGroupArn=arn)
        except AWSError as exc:
            if exc.code == "TargetGroupNotFound":
                raise self._gone(arn) from None
            raise
        targets: set[Target] = set()
        volatile = False
        for desc in resp.get("TargetHealthDescriptions") or []:
            target = desc.get("Target") or {}
            state = (desc.get("TargetHealth") or {}).get("State", "")
            if state == "draining":
                # Already on its way out: neither ours to keep nor to deregister again.
                volatile = True
                continue
            volatile = volatile or state in _VOLATILE_STATES
            targets.add(Target(str(target["Id"]), int(target.get("Port") or 0)))
        self._health[arn] = _Health(targets, now, volatile)
        return set(targets)

    async def register(self, arn: str, targets: Sequence[Target]) -> None:
        for chunk in _chunks(targets):
            await self._pool.call("elbv2", "RegisterTargets", TargetGroupArn=arn,
                                  Targets=[{"Id": t.id, "Port": t.port} for t in chunk])
            self._adjust(arn, add=chunk)

    async def deregister(self, arn: str, targets: Sequence[Target]) -> None:
        for chunk in _chunks(targets):
            try:
                await self._pool.call("elbv2", "DeregisterTargets", TargetGroupArn=arn,
                                      Targets=[{"Id": t.id, "Port": t.port} for t in chunk])
            except AWSError as exc:
                if exc.code != "InvalidTarget":
                    raise
                # Some target of the chunk was already gone; whether the others went with
                # the call is unknown, so the next look asks AWS.
                self.forget(arn)
                continue
            self._adjust(arn, remove=chunk)

    def _adjust(self, arn: str, *, add: Iterable[Target] = (),
                remove: Iterable[Target] = ()) -> None:
        cached = self._health.get(arn)
        if cached is None:
            return
        cached.targets.update(add)
        cached.targets.difference_update(remove)
        # Fresh registrations start out `initial` at AWS; look again next time.
        cached.volatile = cached.volatile or bool(add)


def _chunks(targets: Sequence[Target]) -> Iterable[Sequence[Target]]:
    ordered = sorted(targets)
    for start in range(0, len(ordered), CHUNK_SIZE):
        yield ordered[start:start + CHUNK_SIZE]
