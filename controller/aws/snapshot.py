"""The snapshot reader: a region snapshot for verifications, the load balancers and target
groups of the region with their tags, and the security groups of a VPC, listed once and shared
by every paced verification (LOW reconcile) for a while.

After a restart every unchanged stack is verified once. Looked up one by one, each costs a
DescribeLoadBalancers, a DescribeTargetGroups, two DescribeTags and a DescribeSecurityGroups
(about 7 calls with its listeners and rules), so 334 ALB groups took 2,300 calls of the
verification budget. Listed once, the same facts cost a few pages and one DescribeTags per 20
resources; each verification then reads only what no listing gives: its listeners, their rules
and the tags of those.

The rules that keep this safe:
- only verifications read from it; a real change (NORMAL) always reads AWS itself;
- a snapshot is at most `ttl` old when read (taken again after that, once, for everyone);
- it only ever confirms: once `SnapshotReader` answered a read from it, the deploy's caller
  refuses any mutating call before sending it (`SnapshotStale`, errors.py) and the deployer
  runs the deploy again on fresh reads, so nothing is changed on the strength of a listing
  made earlier;
- what is not in it does not exist, for the kinds it lists (it lists all of them), so a lookup
  by name of a resource that is not there is answered (nothing) without asking again.
What it cannot see: a drift made in AWS after the listing is found by the next verification,
as if it had been made just after this one.

The TargetGroupBinding controller reads the listing itself (`RegionSnapshot.listing`): it
takes a target group's facts from it as read when the listing was taken, and reads those the
listing lacks, rather than taking their absence for an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from controller.aws.caller import Caller
from controller.aws.reader import Desc, Query, Reader, tag_dict
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority

TTL: Final = 300.0
# Not the 400 DescribeLoadBalancers and DescribeTargetGroups allow: a page's XML is parsed on
# the event loop in one go (about a millisecond per load balancer), and a real change's
# reconcile waits behind it; 100 keeps each pause short for a few calls more per listing.
PAGE_SIZE: Final = 100


@dataclass
class Listing:
    taken_at: float
    load_balancers: list[Desc] = field(default_factory=list)
    target_groups: list[Desc] = field(default_factory=list)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # by ARN
    security_groups: dict[str, list[Desc]] = field(default_factory=dict)  # by VPC
    _target_groups_by_arn: dict[str, Desc] | None = field(default=None, repr=False)

    def target_group(self, arn: str) -> Desc | None:
        """The listed description of one target group (indexed on first use: the binding
        controller looks up each of its bindings' target groups here)."""
        if self._target_groups_by_arn is None:
            self._target_groups_by_arn = {str(d.get("TargetGroupArn")): d
                                          for d in self.target_groups}
        return self._target_groups_by_arn.get(arn)

    def described(self, query: Query, keys: Sequence[str]) -> list[Desc] | None:
        """What `query` answers for `keys`, for the kinds listed (None for the others: tags are
        read with `tags_of`)."""
        listed = {"DescribeLoadBalancers": self.load_balancers,
                  "DescribeTargetGroups": self.target_groups}.get(query.operation)
        if listed is None:
            return None
        wanted = set(keys)
        return [item for item in listed if item.get(query.key) in wanted]

    def tags_of(self, arns: Iterable[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
        """(tags of the ARNs the listing holds, the ARNs it does not hold: listeners, rules,
        and resources made after it; those are asked for)."""
        known: dict[str, dict[str, str]] = {}
        rest: list[str] = []
        for arn in arns:
            if arn in self.tags:
                known[arn] = self.tags[arn]
            else:
                rest.append(arn)
        return known, rest


class RegionSnapshot:
    """One per process, shared by the deployers and the TargetGroupBinding controller's
    target group lookups (one listing serves the verifications of all of them); `listing`
    gives the current listing to a verification, None to anyone else."""

    def __init__(self, *, clock: Clock | None = None, ttl: float = TTL) -> None:
        self._clock: Clock = clock or RealClock()
        self._ttl = ttl
        self._listing: Listing | None = None
        self._taking: asyncio.Future[Listing] | None = None
        self._vpcs: dict[str, asyncio.Future[list[Desc]]] = {}
        self.taken = 0  # listings made, for tests and benchmarks

    @staticmethod
    def applies() -> bool:
        cell = current_priority()
        return cell is not None and cell.value < NORMAL

    async def listing(self, below: Reader) -> Listing | None:
        """The listing for a verification (None for anyone else), taken through `below` (the
        reader under the snapshot's) when there is none younger than `ttl`: by the first
        verification that needs it, charged to it."""
        if not self.applies():
            return None
        listing = self._listing
        if listing is not None and self._clock.now() - listing.taken_at < self._ttl:
            return listing
        if self._taking is None or self._taking.done():
            self._taking = asyncio.ensure_future(self._take(below))
            self._taking.add_done_callback(lambda f: f.cancelled() or f.exception())
        return await asyncio.shield(self._taking)

    async def security_groups(self, below: Reader, listing: Listing,
                              vpc_id: str) -> list[Desc]:
        """Every security group of `vpc_id` (with rules and tags), listed along the rest."""
        if vpc_id in listing.security_groups:
            return listing.security_groups[vpc_id]
        pending = self._vpcs.get(vpc_id)
        if pending is None or pending.done():
            pending = asyncio.ensure_future(below.security_groups(vpc_id=vpc_id))
            pending.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._vpcs[vpc_id] = pending
        groups = await asyncio.shield(pending)
        listing.security_groups[vpc_id] = groups
        return groups

    async def _take(self, below: Reader) -> Listing:
        listing = Listing(taken_at=self._clock.now())
        async for page in below.caller.paginate("DescribeLoadBalancers", PageSize=PAGE_SIZE):
            listing.load_balancers.extend(page.get("LoadBalancers") or [])
        async for page in below.caller.paginate("DescribeTargetGroups", PageSize=PAGE_SIZE):
            listing.target_groups.extend(page.get("TargetGroups") or [])
        arns = [d["LoadBalancerArn"] for d in listing.load_balancers]
        arns += [d["TargetGroupArn"] for d in listing.target_groups]
        listing.tags = await below.tags(arns)
        self._listing = listing
        self._vpcs.clear()
        self.taken += 1
        self._drop_later(listing)
        return listing

    def _drop_later(self, listing: Listing) -> None:
        """Let go of the listing once it is too old to be read, rather than holding a region's
        worth of descriptions until the next restart's verifications."""
        def drop() -> None:
            if self._listing is not listing:
                return
            left = self._ttl - (self._clock.now() - listing.taken_at)
            if left > 0:
                asyncio.get_running_loop().call_later(left, drop)
            else:
                self._listing = None
                self._vpcs.clear()

        asyncio.get_running_loop().call_later(self._ttl, drop)


class SnapshotReader(Reader):
    """Wraps `below`: a verification's lookups are answered from the snapshot's listing, and
    then its caller may only confirm (`Caller.confirm_only`); anyone else's go below."""

    def __init__(self, below: Reader, snapshot: RegionSnapshot) -> None:
        self._below = below
        self._snapshot = snapshot

    @property
    def caller(self) -> Caller:
        return self._below.caller

    async def _listing(self) -> Listing | None:
        return await self._snapshot.listing(self._below)

    def _answered(self) -> None:
        # The one place a read from the listing is recorded: whatever this deploy decides
        # from here on rests on it, so it may not change anything.
        self.caller.confirm_only()

    async def describe(self, query: Query, keys: Sequence[str]) -> list[Desc]:
        if keys:
            listing = await self._listing()
            answered = listing.described(query, keys) if listing is not None else None
            if answered is not None:
                self._answered()
                return answered
        return await self._below.describe(query, keys)

    async def tags(self, arns: Iterable[str]) -> dict[str, dict[str, str]]:
        """Those of the listed load balancers and target groups from the listing, the others
        (listeners, rules, resources made since) from below."""
        unique = sorted(set(arns))
        result: dict[str, dict[str, str]] = {}
        if unique:
            listing = await self._listing()
            if listing is not None:
                known, unique = listing.tags_of(unique)
                if known:
                    self._answered()
                    result.update(known)
        result.update(await self._below.tags(unique))
        return result

    async def target_groups_of_load_balancer(self, arn: str) -> list[Desc]:
        listing = await self._listing()
        if listing is None:
            return await self._below.target_groups_of_load_balancer(arn)
        self._answered()
        # What DescribeTargetGroups(LoadBalancerArn) answers: the groups naming it.
        return [d for d in listing.target_groups if arn in (d.get("LoadBalancerArns") or [])]

    async def security_groups(self, *, vpc_id: str | None, names: Sequence[str] = (),
                              ids: Sequence[str] = (),
                              tags: Mapping[str, str] | None = None,
                              name_tags: Sequence[str] = ()) -> list[Desc]:
        listing = await self._listing() if vpc_id is not None else None
        if listing is None or vpc_id is None:
            return await self._below.security_groups(vpc_id=vpc_id, names=names, ids=ids,
                                                     tags=tags, name_tags=name_tags)
        self._answered()
        groups = await self._snapshot.security_groups(self._below, listing, vpc_id)
        return [g for g in groups if _matches(g, names=names, ids=ids, tags=tags or {},
                                              name_tags=name_tags)]


def _matches(group: Desc, *, names: Sequence[str], ids: Sequence[str],
             tags: Mapping[str, str], name_tags: Sequence[str] = ()) -> bool:
    """The filters EC2 would apply (`DirectReader.security_groups`), on the listing."""
    if names and group.get("GroupName") not in names:
        return False
    if name_tags and tag_dict(group.get("Tags")).get("Name") not in name_tags:
        return False
    if ids and group.get("GroupId") not in ids:
        return False
    have = tag_dict(group.get("Tags")) if tags else {}
    return all(have.get(key) == value for key, value in tags.items())


__all__ = ["Listing", "RegionSnapshot", "SnapshotReader"]
