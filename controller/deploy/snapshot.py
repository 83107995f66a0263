"""A region snapshot for verifications: the load balancers and target groups of the region
with their tags, and the security groups of a VPC, listed once and shared by every paced
verification (LOW reconcile) for a while.

After a restart every unchanged stack is verified once. Looked up one by one, each costs a
DescribeLoadBalancers, a DescribeTargetGroups, two DescribeTags and a DescribeSecurityGroups
(about 7 calls with its listeners and rules), so 334 ALB groups took 2,300 calls of the
verification budget. Listed once, the same facts cost a few pages and one DescribeTags per 20
resources; each verification then reads only what no listing gives: its listeners, their rules
and the tags of those.

The rules that keep this safe:
- only verifications read from it; a real change (NORMAL) always reads AWS itself;
- a snapshot is at most `ttl` old when read (taken again after that, once, for everyone);
- it only ever confirms: a deploy that read from it and is about to change anything in AWS
  stops (`SnapshotStale` in errors.py, raised before the call is sent) and the deployer runs
  it again on fresh reads, so nothing is changed on the strength of a listing made earlier;
- what is not in it does not exist, for the kinds it lists (it lists all of them), so a lookup
  by name of a resource that is not there is answered (nothing) without asking again.
What it cannot see: a drift made in AWS after the listing is found by the next verification,
as if it had been made just after this one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from controller.deploy.tags import describe_tags
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority

if TYPE_CHECKING:
    from controller.deploy.calls import Calls

TTL: Final = 300.0
# Not the 400 DescribeLoadBalancers and DescribeTargetGroups allow: a page's XML is parsed on
# the event loop in one go (about a millisecond per load balancer), and a real change's
# reconcile waits behind it; 100 keeps each pause short for a few calls more per listing.
PAGE_SIZE: Final = 100
_ITEM: Final = {
    ("DescribeLoadBalancers", "LoadBalancerArns"): ("load_balancers", "LoadBalancerArn"),
    ("DescribeLoadBalancers", "Names"): ("load_balancers", "LoadBalancerName"),
    ("DescribeTargetGroups", "TargetGroupArns"): ("target_groups", "TargetGroupArn"),
    ("DescribeTargetGroups", "Names"): ("target_groups", "TargetGroupName"),
}


@dataclass
class Listing:
    taken_at: float
    load_balancers: list[dict[str, Any]] = field(default_factory=list)
    target_groups: list[dict[str, Any]] = field(default_factory=list)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # by ARN
    security_groups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by VPC
    _target_groups_by_arn: dict[str, dict[str, Any]] | None = field(default=None, repr=False)

    def target_group(self, arn: str) -> dict[str, Any] | None:
        """The listed description of one target group (indexed on first use: the binding
        controller looks up each of its bindings' target groups here)."""
        if self._target_groups_by_arn is None:
            self._target_groups_by_arn = {str(d.get("TargetGroupArn")): d
                                          for d in self.target_groups}
        return self._target_groups_by_arn.get(arn)

    def items(self, operation: str, param: str, values: Sequence[str]
              ) -> list[dict[str, Any]] | None:
        found = _ITEM.get((operation, param))
        if found is None:
            return None
        kind, key = found
        wanted = set(values)
        items: list[dict[str, Any]] = getattr(self, kind)
        return [item for item in items if item.get(key) in wanted]

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
        self._vpcs: dict[str, asyncio.Future[list[dict[str, Any]]]] = {}
        self.taken = 0  # listings made, for tests and benchmarks

    @staticmethod
    def applies() -> bool:
        cell = current_priority()
        return cell is not None and cell.value < NORMAL

    async def listing(self, calls: Calls) -> Listing | None:
        if not self.applies():
            return None
        listing = self._listing
        if listing is not None and self._clock.now() - listing.taken_at < self._ttl:
            return listing
        if self._taking is None or self._taking.done():
            self._taking = asyncio.ensure_future(self._take(calls))
            self._taking.add_done_callback(lambda f: f.cancelled() or f.exception())
        return await asyncio.shield(self._taking)

    async def security_groups(self, calls: Calls, listing: Listing,
                              vpc_id: str) -> list[dict[str, Any]]:
        """Every security group of `vpc_id` (with rules and tags), listed along the rest."""
        if vpc_id in listing.security_groups:
            return listing.security_groups[vpc_id]
        pending = self._vpcs.get(vpc_id)
        if pending is None or pending.done():
            pending = asyncio.ensure_future(self._groups(calls, vpc_id))
            pending.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._vpcs[vpc_id] = pending
        groups = await asyncio.shield(pending)
        listing.security_groups[vpc_id] = groups
        return groups

    async def _take(self, calls: Calls) -> Listing:
        listing = Listing(taken_at=self._clock.now())
        async for page in calls.paginate("DescribeLoadBalancers", PageSize=PAGE_SIZE):
            listing.load_balancers.extend(page.get("LoadBalancers") or [])
        async for page in calls.paginate("DescribeTargetGroups", PageSize=PAGE_SIZE):
            listing.target_groups.extend(page.get("TargetGroups") or [])
        arns = [d["LoadBalancerArn"] for d in listing.load_balancers]
        arns += [d["TargetGroupArn"] for d in listing.target_groups]
        listing.tags = await describe_tags(calls, arns, snapshot=False)
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

    async def _groups(self, calls: Calls, vpc_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        async for page in calls.paginate("DescribeSecurityGroups", service="ec2", Filters=[
                {"Name": "vpc-id", "Values": [vpc_id]}]):
            found.extend(page.get("SecurityGroups") or [])
        return found


__all__ = ["Listing", "RegionSnapshot"]
