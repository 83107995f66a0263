"""Target groups as the TargetGroupBinding controller sees them: looked up by ARN or name with
the tags and VPC the ownership checks read (cached for a while), their current targets
(DescribeTargetHealth, cached as upstream does), and registration in chunks of 200 (the API's
limit per call).

Looking one target group up by ARN reads, in the same two calls, up to 19 others the bindings
name and the cache does not hold (`read_ahead`): after a restart every binding is verified
once, and each would otherwise cost its own DescribeTargetGroups and DescribeTags. What is read
ahead is cached for the same `info_ttl` as what is read alone, so no check judges from older
facts than before. Lookups of ARNs already being read wait for that read instead of asking
again.

With the process's region snapshot (controller/aws/snapshot.py), a paced verification's
lookup is answered from its listing instead, when the listing holds the target group and its
tags and is younger than `info_ttl`: the deployers' verifications list every target group of
the region with its tags anyway, so the bindings' lookups then cost no call of their own. What
the listing says is cached as read at the time it was taken, so no check judges from older
facts than a read-ahead would have given it; a target group the listing does not hold (made
since, or gone) is read as before.

A binding with `iamRoleArnToAssume` reads and registers as that role, in its account
(`for_role`): one `TargetGroups` per role, with caches of its own, neither reading ahead nor
from the region snapshot (both are of the controller's own account)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controller.apis.targetgroupbinding import InvalidSpec
from controller.aws import (
    TAGS,
    TARGET_GROUPS_BY_ARN,
    AWSClientPool,
    AWSError,
    Caller,
    DirectReader,
    Listing,
    RegionSnapshot,
    Role,
    Tagged,
)
from controller.targetgroupaccess import FACTS_TTL, TargetGroupFacts
from controller.targetgroupbinding.targets import Target
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority, reconcile_priority

CHUNK_SIZE = 200
# DescribeTags takes at most 20 ARNs; DescribeTargetGroups is asked for as many, so that one
# batch is one call of each.
READ_AHEAD_BATCH = 20
HEALTH_CACHE_TTL = 300.0  # upstream: 5 min
# States whose targets are about to change on their own; a cache holding them is refreshed on
# the next look instead of being trusted for five minutes.
_VOLATILE_STATES = frozenset({"initial", "unhealthy", "draining", "unavailable"})
# Distinct target healths kept as shared objects (state, reason and description).
_STATES_KEPT = 256


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
    protocol: str = ""
    # A port of its own, None for "traffic-port" (the target's): the networking policy admits it.
    health_check_port: int | None = None

    @property
    def facts(self) -> TargetGroupFacts:
        return TargetGroupFacts(arn=self.arn, name=self.name, vpc_id=self.vpc_id,
                                tags=self.tags)


@dataclass(frozen=True, slots=True)
class TargetState:
    """One target's `TargetHealth` as DescribeTargetHealth reports it."""

    state: str
    reason: str = ""
    description: str = ""


# What AWS reports for a target it has just been asked to register.
REGISTERING: Final = TargetState("initial", "Elb.RegistrationInProgress",
                                 "Target registration is in progress")


@dataclass(slots=True)
class _Health:
    targets: set[Target]
    fetched_at: float
    volatile: bool
    states: dict[Target, TargetState] = field(default_factory=dict)
    # A QUIC target group's targets' server IDs, as registered.
    server_ids: dict[Target, str] = field(default_factory=dict)


class TargetGroups:
    def __init__(self, pool: AWSClientPool, *, clock: Clock | None = None,
                 health_ttl: float = HEALTH_CACHE_TTL, info_ttl: float = FACTS_TTL,
                 read_ahead: Callable[[], Iterable[str]] | None = None,
                 snapshot: RegionSnapshot | None = None, role: Role | None = None) -> None:
        self._pool = pool
        self.role = role
        self._calls = Caller(pool, role=role)
        self._reader = DirectReader(self._calls)
        self._snapshot = snapshot
        # ARNs worth reading along with a miss: those the bindings name.
        self._read_ahead = read_ahead
        # Reads in flight, by each ARN they read, and whether a paced verification made them.
        self._reading: dict[str, tuple[asyncio.Future[dict[str, TargetGroupInfo]], bool]] = {}
        # ARNs AWS said were missing (or malformed): read alone until found.
        self._suspect: dict[str, str] = {}  # with AWS's words for it
        self._clock = clock or RealClock()
        self._ttl = health_ttl
        self._info_ttl = info_ttl
        # By ARN and by "name:<name>", with the time it was read: tags and VPC are what the
        # ownership checks rely on, so they are read again now and then.
        self._info: dict[str, tuple[float, TargetGroupInfo]] = {}
        self._health: dict[str, _Health] = {}
        self._states: dict[tuple[str, str, str], TargetState] = {}
        self._by_role: dict[Role, TargetGroups] = {}

    def for_role(self, role: Role | None) -> TargetGroups:
        """The target groups as `role` sees them (None: these, the controller's own)."""
        if role is None or role == self.role:
            return self
        found = self._by_role.get(role)
        if found is None:
            found = self._by_role[role] = TargetGroups(
                self._pool, clock=self._clock, health_ttl=self._ttl, info_ttl=self._info_ttl,
                role=role)
        return found

    def drop_role(self, role: Role) -> None:
        """Forget what was read as `role` (STS refused it: a role ARN is user input, and one
        that cannot be assumed keeps nothing)."""
        self._by_role.pop(role, None)

    def cached(self, *, arn: str | None, name: str | None) -> TargetGroupInfo | None:
        """What is known without asking AWS (for priority decisions)."""
        entry = self._info.get(arn or f"name:{name}")
        return entry[1] if entry is not None else None

    async def resolve(self, *, arn: str | None, name: str | None,
                      read_ahead: bool = False) -> TargetGroupInfo:
        """`read_ahead`: read others the bindings name along (for converging, not for the
        lookups of a finalizer, which has no verifications to share with)."""
        key = arn or f"name:{name}"
        now = self._clock.now()
        cached = self._info.get(key)
        if cached is not None and now - cached[0] < self._info_ttl:
            return cached[1]
        if arn:
            return await self._by_arn(arn, read_ahead=read_ahead)
        found = await self._reader.target_group(name=name)
        if found.desc is None:
            raise _not_found(str(name), found.refused)
        info = _info(found.desc, found.tags)
        self._remember(key, info, now)
        return info

    async def _by_arn(self, arn: str, *, read_ahead: bool) -> TargetGroupInfo:
        # A real change does not wait for a read a paced verification started: that read
        # waits for the verification budget.
        paced = reconcile_priority() < NORMAL
        if paced and self._snapshot is not None:
            listing = await self._listing()
            if listing is not None:
                listed = self._listed(listing, arn)
                if listed is not None:
                    return listed
                read_ahead = False  # the others the bindings name are in the listing
        reading = self._reading.get(arn)
        batch = [arn]
        if reading is not None and (paced or not reading[1]):
            found = await self._join(reading[0])
            if arn in found:
                return found[arn]
        elif reading is None and read_ahead and arn not in self._suspect:
            batch += self._companions(arn)
        task = asyncio.ensure_future(self._read(batch))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._reading[arn] = (task, paced)
        for one in batch[1:]:
            self._reading.setdefault(one, (task, paced))
        try:
            found = await asyncio.shield(task)
        finally:
            for one in batch:
                if self._reading.get(one, (None,))[0] is task:
                    del self._reading[one]
        if arn not in found:
            why = self._suspect.setdefault(arn, "not found")
            raise TargetGroupNotFound(f"target group {arn} not found: {why}")
        return found[arn]

    async def _listing(self) -> Listing | None:
        """The region snapshot's listing, when it is younger than what the cache keeps."""
        assert self._snapshot is not None
        listing = await self._snapshot.listing(self._reader)
        if listing is None or self._clock.now() - listing.taken_at >= self._info_ttl:
            return None
        return listing

    def _listed(self, listing: Listing, arn: str) -> TargetGroupInfo | None:
        """The target group as the listing has it, None when it cannot say (not listed, or
        its tags not read): remembered as read when the listing was taken."""
        desc = listing.target_group(arn)
        tags = listing.tags.get(arn)
        if desc is None or tags is None:
            return None
        info = _info(desc, tags)
        self._remember(arn, info, listing.taken_at)
        self._suspect.pop(arn, None)
        return info

    async def _join(self, read: asyncio.Future[dict[str, TargetGroupInfo]]
                    ) -> dict[str, TargetGroupInfo]:
        """What another lookup's read found; nothing when it failed, or when this reconcile
        was promoted to a real change while that read waits for the verification budget."""
        cell = current_priority()
        shared = asyncio.shield(read)
        if cell is None or cell.value >= NORMAL:
            waiters: list[asyncio.Future[Any]] = [shared]
        else:
            waiters = [shared, asyncio.ensure_future(cell.raised())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters[1:]:
                waiter.cancel()
        if not shared.done():
            shared.cancel()
            return {}
        try:
            return shared.result()
        except (AWSError, TargetGroupNotFound):
            return {}  # another lookup's failure: asked alone

    def _companions(self, arn: str) -> list[str]:
        if self._read_ahead is None:
            return []
        now = self._clock.now()
        picked: list[str] = []
        for other in self._read_ahead():
            if len(picked) == READ_AHEAD_BATCH - 1:
                break
            cached = self._info.get(other)
            if (other != arn and other not in self._reading and other not in self._suspect
                    and other.startswith("arn:") and ":targetgroup/" in other
                    and (cached is None or now - cached[0] >= self._info_ttl)):
                picked.append(other)
        return picked

    async def _read(self, batch: list[str]) -> dict[str, TargetGroupInfo]:
        """The target groups of `batch` that exist, with their tags, by ARN; the first ARN is
        the one asked for, which raises when AWS refuses it for another reason than its
        absence. The tags are read once the target groups are known, so that one gone since
        costs its share of a bisection, not a failed DescribeTags too; one gone between the
        two reads is left out (and bisected out of the DescribeTags)."""
        now = self._clock.now()
        groups = await self._describe(batch)
        arns = [str(tg["TargetGroupArn"]) for tg in groups]
        answer = await self._reader.answer(TAGS, arns, halves=True)
        self._suspect.update({arn: exc.message or exc.code
                              for arn, exc in answer.refused.items()})
        tags = answer.tags()
        found: dict[str, TargetGroupInfo] = {}
        for tg, arn in zip(groups, arns, strict=True):
            if arn in answer.refused:
                continue
            found[arn] = _info(tg, tags.get(arn, {}))
            self._remember(arn, found[arn], now)
            self._suspect.pop(arn, None)
        if len(batch) == 1 and len(found) == 1 and batch[0] not in found:
            # Spelt differently by AWS than by the spec: the answer is still the one asked for.
            found[batch[0]] = next(iter(found.values()))
            self._remember(batch[0], found[batch[0]], now)
        return found

    async def _describe(self, arns: list[str]) -> list[dict[str, Any]]:
        """DescribeTargetGroups of `arns`, leaving out the missing ones. AWS refuses the whole
        call when any ARN of it is missing (or malformed): then each half is asked on its own,
        so that one missing ARN among 20 costs about ten calls, not twenty; it is remembered
        and not read ahead again until a lookup of its own finds it."""
        answer = await self._reader.answer(TARGET_GROUPS_BY_ARN, arns, halves=True)
        self._suspect.update({arn: exc.message or exc.code
                              for arn, exc in answer.refused.items()})
        return answer.items

    def _remember(self, key: str, info: TargetGroupInfo, now: float) -> None:
        self._info[key] = (now, info)
        self._info[info.arn] = (now, info)

    def forget(self, arn: str) -> None:
        self._health.pop(arn, None)

    async def reread(self, arn: str) -> TargetGroupInfo:
        """The target group read afresh, whatever is cached (a check that would refuse on
        cached facts, such as a health-check port changed since, looks again first)."""
        for key in [k for k, (_, info) in self._info.items() if info.arn == arn]:
            del self._info[key]
        return await self.resolve(arn=arn, name=None)

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
            resp = await self._calls.call("DescribeTargetHealth", TargetGroupArn=arn)
        except AWSError as exc:
            if exc.code == "TargetGroupNotFound":
                raise self._gone(arn) from None
            raise
        # The cache keeps the objects it held for targets AWS still reports, and one object
        # per distinct health: a reply builds a fresh Target and TargetState for each of
        # thousands of targets, and keeping those grew a churned cluster's memory by ~10 MiB
        # of copies of what was already held.
        known = {t: t for t in cached.targets} if cached is not None else {}
        targets: set[Target] = set()
        states: dict[Target, TargetState] = {}
        server_ids: dict[Target, str] = {}
        volatile = False
        for desc in resp.get("TargetHealthDescriptions") or []:
            target = desc.get("Target") or {}
            health = desc.get("TargetHealth") or {}
            state = health.get("State", "")
            if state == "draining":
                # Already on its way out: neither ours to keep nor to deregister again.
                volatile = True
                continue
            volatile = volatile or state in _VOLATILE_STATES
            key = Target(str(target["Id"]), int(target.get("Port") or 0))
            key = known.get(key, key)
            targets.add(key)
            if target.get("QuicServerId"):
                server_ids[key] = str(target["QuicServerId"])
            states[key] = self._state(state, health.get("Reason") or "",
                                      health.get("Description") or "")
        self._health[arn] = _Health(targets, now, volatile, states, server_ids)
        return set(targets)

    def server_ids(self, arn: str) -> dict[Target, str]:
        """The QUIC server IDs of the targets `current_targets` read (and registered since)."""
        cached = self._health.get(arn)
        return dict(cached.server_ids) if cached is not None else {}

    def _state(self, state: str, reason: str, description: str) -> TargetState:
        """The one TargetState object for this health (AWS reports a handful of them)."""
        found = self._states.get((state, reason, description))
        if found is None:
            if len(self._states) >= _STATES_KEPT:  # descriptions AWS words anew: start over
                self._states.clear()
            found = self._states[(state, reason, description)] = TargetState(
                state, reason, description)
        return found

    def health(self, arn: str) -> dict[Target, TargetState]:
        """The targets' health as last described (`current_targets` reads it), with targets
        registered since then as AWS reports them at first."""
        cached = self._health.get(arn)
        return dict(cached.states) if cached is not None else {}

    async def register(self, arn: str, targets: Sequence[Target],
                       server_ids: Mapping[Target, str] | None = None) -> None:
        """TargetGroupNotFound when the target group went behind our back (the cached health
        and facts said otherwise). `server_ids`: a QUIC target group's targets' IDs."""
        ids = server_ids or {}
        for chunk in _chunks(targets):
            try:
                await self._calls.call("RegisterTargets", TargetGroupArn=arn, Targets=[
                    {"Id": t.id, "Port": t.port,
                     **({"QuicServerId": ids[t]} if t in ids else {})} for t in chunk])
            except AWSError as exc:
                if exc.code == "TargetGroupNotFound":
                    raise self._gone(arn) from None
                raise
            self._adjust(arn, add=chunk)
            cached = self._health.get(arn)
            if cached is not None:
                cached.server_ids.update((t, ids[t]) for t in chunk if t in ids)

    async def deregister(self, arn: str, targets: Sequence[Target]) -> None:
        """TargetGroupNotFound as `register`."""
        for chunk in _chunks(targets):
            try:
                await self._calls.call("DeregisterTargets", TargetGroupArn=arn,
                                       Targets=[{"Id": t.id, "Port": t.port} for t in chunk])
            except AWSError as exc:
                if exc.code == "TargetGroupNotFound":
                    raise self._gone(arn) from None
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
        for target in add:
            cached.states.setdefault(target, REGISTERING)
        for target in remove:
            cached.states.pop(target, None)
            cached.server_ids.pop(target, None)
        # Fresh registrations start out `initial` at AWS; look again next time.
        cached.volatile = cached.volatile or bool(add)


def _not_found(what: str, refused: AWSError | None) -> TargetGroupNotFound:
    if refused is None:
        return TargetGroupNotFound(f"target group {what} not found")
    return TargetGroupNotFound(f"target group {what} not found: "
                               f"{refused.message or refused.code}")


def looked_up(found: Tagged, *, arn: str | None, name: str | None) -> TargetGroupInfo:
    """One target group as a lookup by `arn` (or else `name`) found it (admission reads them
    through its own cache), or TargetGroupNotFound in the words `resolve` uses."""
    if found.desc is not None:
        return _info(found.desc, found.tags)
    if arn:
        refused = found.refused
        why = (refused.message or refused.code) if refused is not None else "not found"
        raise TargetGroupNotFound(f"target group {arn} not found: {why}")
    raise _not_found(str(name), found.refused)


def _info(tg: Mapping[str, Any], tags: Mapping[str, str]) -> TargetGroupInfo:
    return TargetGroupInfo(
        arn=str(tg["TargetGroupArn"]), name=tg.get("TargetGroupName", ""),
        target_type=tg.get("TargetType", "instance"), vpc_id=tg.get("VpcId", ""),
        ip_address_type=tg.get("IpAddressType", "ipv4"), port=tg.get("Port"),
        protocol=tg.get("Protocol", ""), tags=tags,
        health_check_port=_health_check_port(tg.get("HealthCheckPort")))


def _health_check_port(value: Any) -> int | None:
    text = str(value or "")
    return int(text) if text.isdigit() and 0 < int(text) <= 65535 else None


def _chunks(targets: Sequence[Target]) -> Iterable[Sequence[Target]]:
    ordered = sorted(targets)
    for start in range(0, len(ordered), CHUNK_SIZE):
        yield ordered[start:start + CHUNK_SIZE]
