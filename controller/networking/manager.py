"""The inbound rules TargetGroupBindings need on their targets' security groups (upstream's
`pkg/networking/networking_manager.go`), kept from the desired state of every binding in the
cache.

Among the rules this cluster may act on (its own and the upstream ones it adopts,
`ruleowners.py`), each group holds:
- what the bindings this process reconciled ask for there ("known": their targets' groups and
  ports resolved), as long as the cache still holds the networking they were reconciled with;
- of every other binding in the cache (not reconciled by this process yet, failing, or changed
  since), the rules it could need (`policy.claimed_rules`: its spec's rules, a named port
  widened to every port, on any group): such a rule is never granted, only kept where a rule
  of ours already admits it, narrowed to what it covers.
Everything else of ours is revoked. So stale rules go as soon as the caches are synced after a
start, checkpoints or not, and a binding that cannot be reconciled holds back only the rules it
could need itself, never another binding's or another group's revocation.

Aggregation, as upstream: rules from a security group are merged per (protocol, source) into one
port range from the lowest to the highest port asked for; rules from a CIDR stay one per port.
With `--disable-restricted-sg-rules` (every port asked for anyway) equal rules are merged.

Where: the groups bindings want rules on, and every group seen holding a rule of ours. A
leader's first pass (`first_pass`, a leader runnable: it starts once the caches are synced)
lists the VPC's security groups (one paginated listing) and converges every group holding a
rule of ours, whatever its tags (with no binding asking for rules in the cache, the listing
waits for the first pass that has one: a cluster that uses none makes no call for it); later
passes look at those and at the groups bindings name.

Cost: a group's rules are read in one batched DescribeSecurityGroups with every other group the
pass looks at; a group whose rules of ours, as last read, are still what it should hold and
that was read within `verify_interval` is not read again. So the node group every binding
shares is verified a few times per pass over the whole cluster, not once per binding, and
drift there is repaired within `verify_interval` of the next reconcile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import structlog

from controller.aws import AWSError, Caller, DirectReader
from controller.networking import securitygrouprules as group_rules
from controller.networking.groupfacts import GroupFactsCache
from controller.networking.permissions import Permission, expand
from controller.networking.policy import NetworkingPolicy, may_hold
from controller.networking.ruleowners import RuleOwners, legacy_sources
from controller.networking.settings import NetworkingSettings
from runtime.clock import Clock, RealClock
from runtime.prioritylock import InheritingLock

_BATCH: Final = 200
_RETRY_MAX: Final = 60.0

PermissionsByGroup = dict[str, list[Permission]]
Rule = tuple[str, int, int, str, str]

log = structlog.get_logger("networking")


@dataclass(frozen=True, slots=True)
class Claim:
    """One binding in the cache with networking: `version` tells whether what it was
    reconciled with is still what it asks for; `rules` what it could need (already without
    what the policy refuses from its spec alone)."""

    key: str
    uid: str
    version: str
    namespace: str
    rules: tuple[Permission, ...] = ()


def aggregate(per_binding: Iterable[PermissionsByGroup], *,
              restricted: bool) -> dict[str, list[Permission]]:
    """Every binding's rules per group, merged as upstream merges them."""
    merged: dict[str, dict[tuple[Any, ...], Permission]] = {}
    for groups in per_binding:
        for group_id, permissions in groups.items():
            into = merged.setdefault(group_id, {})
            for p in permissions:
                if restricted and p.source_kind == "group":
                    key: tuple[Any, ...] = ("range", p.protocol, p.source)
                    have = into.get(key)
                    if have is not None:
                        p = Permission(p.protocol, min(have.from_port, p.from_port),
                                       max(have.to_port, p.to_port), p.source_kind, p.source,
                                       p.description)
                    into[key] = p
                else:
                    into[p.rule] = p
    return {g: sorted(rules.values()) for g, rules in merged.items()}


def _rules(permissions: Iterable[Permission]) -> frozenset[Rule]:
    return frozenset(p.rule for p in permissions)


def clip(held: Iterable[Permission], present: Iterable[Permission]) -> list[Permission]:
    """The parts of the `held` rules that the `present` rules (of the same protocol and
    source) admit: what may be kept for bindings whose groups are not known, never more."""
    present = list(present)
    found = []
    for want in held:
        for have in present:
            if (have.protocol, have.source_kind, have.source) != (
                    want.protocol, want.source_kind, want.source):
                continue
            low, high = max(want.from_port, have.from_port), min(want.to_port, have.to_port)
            if low <= high:
                found.append(Permission(want.protocol, low, high, want.source_kind,
                                        want.source))
    return found


@dataclass(frozen=True, slots=True)
class _Known:
    version: str
    wanted: PermissionsByGroup


@dataclass(frozen=True, slots=True)
class _Verified:
    """A group as the last pass left it: our rules there (what it wanted), and when."""

    rules: tuple[Permission, ...]
    at: float


class NetworkingManager:
    def __init__(self, calls: Caller, settings: NetworkingSettings, *,
                 policy: NetworkingPolicy, claims: Callable[[], Iterable[Claim]],
                 facts: GroupFactsCache | None = None, clock: Clock | None = None) -> None:
        self._calls = calls
        self._settings = settings
        self._policy = policy
        self._claims = claims
        self._clock: Clock = clock or RealClock()
        self._facts = facts or GroupFactsCache(calls, clock=self._clock)
        self._owners = RuleOwners(policy, self._facts)
        # Bindings' reconciles share the groups; a real change waiting here lifts a paced
        # verification holding the lock out of its budget wait.
        self._lock = InheritingLock()
        self._known: dict[str, _Known] = {}
        # (key, uid) of bindings whose finalizer released their rules while the cache still
        # holds them (being deleted): they hold nothing back any more.
        self._released: set[tuple[str, str]] = set()
        self._tracked: set[str] = set()
        self._verified: dict[str, _Verified] = {}
        # The VPC's groups are to be listed by the next pass that has a binding with
        # networking to serve (set again by every leader's first pass).
        self._list_groups = True

    @property
    def settings(self) -> NetworkingSettings:
        return self._settings

    @property
    def policy(self) -> NetworkingPolicy:
        return self._policy

    @property
    def facts(self) -> GroupFactsCache:
        return self._facts

    @property
    def description(self) -> str:
        """The description of this cluster's rules."""
        return self._owners.description

    def knows(self, binding: str) -> bool:
        return binding in self._known

    async def reconcile(self, binding: str, version: str, wanted: PermissionsByGroup) -> int:
        """`binding`, whose networking is `version`, needs `wanted` (group → its rules);
        converge every group. The number of mutating calls made."""
        async with self._lock:
            self._known[binding] = _Known(version, {g: list(p) for g, p in wanted.items() if p})
            return await self._converge()

    async def refuse(self, binding: str, version: str) -> int:
        """`binding`'s networking (`version`) is not allowed: it needs nothing, and what it may
        have had goes (no pass when it is known to have had nothing)."""
        async with self._lock:
            before = self._known.get(binding)
            self._known[binding] = _Known(version, {})
            if before is not None and not before.wanted:
                return 0
            return await self._converge()

    def unresolved(self, binding: str) -> None:
        """`binding`'s groups cannot be told now (a target without an interface): until it is
        reconciled again it holds back the rules it could need, on every group."""
        self._known.pop(binding, None)

    async def forget(self, binding: str, uid: str) -> int:
        """`binding` (of `uid`) is going: its rules go unless another binding needs them."""
        async with self._lock:
            self._known.pop(binding, None)
            self._released.add((binding, uid))
            return await self._converge()

    # ---- the first pass of a leader ----------------------------------------------------------

    async def first_pass(self, stop: asyncio.Event) -> None:
        """A leader runnable: once the caches are synced, every group holding a rule of ours
        is converged; retried with backoff until it succeeds or leadership ends."""
        delay = 1.0
        while not stop.is_set():
            try:
                made = await self.full_pass()
            except Exception as exc:
                log.warning("networking pass failed; retrying", error=str(exc), after=delay)
            else:
                log.info("networking pass done", groups=len(self._tracked), mutations=made)
                return
            sleeping = asyncio.ensure_future(self._clock.sleep(delay))
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({sleeping, stopped}, return_when=asyncio.FIRST_COMPLETED)
            for task in (sleeping, stopped):
                task.cancel()
            await asyncio.gather(sleeping, stopped, return_exceptions=True)
            delay = min(delay * 2, _RETRY_MAX)

    async def full_pass(self) -> int:
        """List the VPC's security groups and converge every one holding a rule of ours. With
        no binding asking for rules in the cache (a cluster that uses none, where this would be
        its only AWS call), the listing waits for the first pass that has one."""
        async with self._lock:
            self._list_groups = True
            return await self._converge()

    async def _listing(self) -> dict[str, dict[str, Any]]:
        listed = await DirectReader(self._calls).security_groups(
            vpc_id=self._settings.cluster.vpc_id)
        self._facts.remember(listed)
        listing = {str(g["GroupId"]): g for g in listed}
        await self._facts.load(legacy_sources(listing.values()), recheck_missing=False)
        self._tracked.update(g for g, desc in listing.items() if self._owners.has_any(desc))
        return listing

    # ---- desired state ------------------------------------------------------------------------

    def _current_claims(self) -> dict[str, Claim]:
        claims = {c.key: c for c in self._claims()}
        for binding in [b for b in self._known if b not in claims]:
            del self._known[binding]  # gone from the cache (or its networking with it)
        present = {(c.key, c.uid) for c in claims.values()}
        self._released &= present
        return {k: c for k, c in claims.items() if (k, c.uid) not in self._released}

    def _is_known(self, claim: Claim) -> bool:
        known = self._known.get(claim.key)
        return known is not None and known.version == claim.version

    async def _held(self, claims: Mapping[str, Claim]) -> list[Permission]:
        unknown = [c for c in claims.values() if not self._is_known(c)]
        await self._facts.load({r.source for c in unknown for r in c.rules
                                if r.source_kind == "group"}, recheck_missing=False)
        return sorted({r for c in unknown for r in c.rules
                       if may_hold(self._policy, c.namespace, r,
                                   self._facts.get(r.source) if r.source_kind == "group"
                                   else None)})

    # ---- convergence ------------------------------------------------------------------------

    async def _converge(self) -> int:
        claims = self._current_claims()
        listing: Mapping[str, dict[str, Any]] = {}
        force = False
        if self._list_groups and claims:
            listing, force = await self._listing(), True
            self._list_groups = False
        wanted = aggregate((k.wanted for b, k in self._known.items()
                            if b in claims and self._is_known(claims[b])),
                           restricted=self._settings.backend.restricted_rules)
        held = await self._held(claims)
        now = self._clock.now()
        due = []
        for group_id in sorted(set(wanted) | self._tracked):
            seen = self._verified.get(group_id)
            # Read again only when what it should hold (as far as its rules last read tell)
            # changed, or they were read too long ago: bindings becoming known one by one
            # after a restart change what is held back, rarely what a group should hold.
            if (not force and seen is not None
                    and now - seen.at < self._settings.verify_interval
                    and _rules(self._desired(wanted.get(group_id, []), held, seen.rules))
                    == _rules(seen.rules)):
                continue
            due.append(group_id)
        described = {g: dict(listing[g]) for g in due if g in listing}
        described.update(await self._describe([g for g in due if g not in described]))
        await self._facts.load(legacy_sources(described.values()), recheck_missing=False)
        made = 0
        for group_id in due:
            group = described.get(group_id)
            if group is None:
                # Deleted (a node group gone with its nodes): nothing to keep there.
                self._forget_group(group_id)
                continue
            owned = self._owners.owned(group)
            current = list(expand(group.get("IpPermissions") or []))
            desired = self._desired(wanted.get(group_id, []), held,
                                    [p for p in current if owned(p)])
            changes = group_rules.plan(current, desired, owned=owned, relabel=owned)
            try:
                made += await group_rules.apply(self._calls, group_id, changes)
            except AWSError as exc:
                if not exc.is_group_not_found:
                    raise
                self._forget_group(group_id)
                continue
            revoked = {p.rule for p in changes.revoke}
            if desired or any(owned(p) and p.rule not in revoked for p in current):
                self._tracked.add(group_id)
            else:
                self._tracked.discard(group_id)
            self._verified[group_id] = _Verified(tuple(desired), self._clock.now())
        return made

    def _desired(self, wanted: Iterable[Permission], held: Iterable[Permission],
                 present: Iterable[Permission]) -> list[Permission]:
        """Our rules a group should hold: what known bindings want there, and what the others
        could need of the rules of ours `present` there, aggregated."""
        merged = aggregate([{"": [*wanted, *clip(held, present)]}],
                           restricted=self._settings.backend.restricted_rules)
        return [replace(p, description=self.description) for p in merged.get("", [])]

    def _forget_group(self, group_id: str) -> None:
        self._tracked.discard(group_id)
        self._verified.pop(group_id, None)

    async def _describe(self, group_ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(group_ids), _BATCH):
            chunk = group_ids[start:start + _BATCH]
            try:
                resp = await self._calls.call("DescribeSecurityGroups", service="ec2",
                                              GroupIds=chunk)
            except AWSError as exc:
                if not exc.is_group_not_found:
                    raise
                if len(chunk) == 1:
                    continue
                # One of them is gone, and AWS answers for none: ask one by one.
                for group_id in chunk:
                    found.update(await self._describe([group_id]))
                continue
            for group in resp.get("SecurityGroups") or []:
                found[str(group["GroupId"])] = group
        self._facts.remember(found.values())
        return found


__all__ = ["Claim", "NetworkingManager", "PermissionsByGroup", "aggregate", "clip"]

