"""What the networking policy and the rule owners read of a security group: its VPC and tags,
by ID, cached for a few minutes (tags change rarely), read through the AWS read path
(`controller.aws.DirectReader`, many IDs a call, missing ones left out).

A group AWS says is not there is asked for again by a check (one created a moment ago, a load
balancer's frontend group written into its binding right after, is then found), but not by the
manager's passes, which run on every reconcile: a spec naming a group that does not exist
costs one lookup per cache lifetime there, not one per pass. Listings read for another purpose
(the manager's look at the VPC's groups) fill the cache too, so a full pass costs no lookup of
its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from controller.aws import Caller, DirectReader, ReadCache, tag_dict
from runtime.clock import Clock, RealClock

FACTS_TTL: Final = 300.0
# DescribeSecurityGroups takes many IDs; a chunk this size keeps one call's answer small.
_CHUNK: Final = 200


@dataclass(frozen=True, slots=True)
class GroupFacts:
    group_id: str
    vpc_id: str
    tags: Mapping[str, str] = field(default_factory=dict)


def facts_of(group: Mapping[str, Any]) -> GroupFacts:
    """A DescribeSecurityGroups item's facts."""
    return GroupFacts(str(group["GroupId"]), str(group.get("VpcId") or ""),
                      tag_dict(group.get("Tags")))


class GroupFactsSource(Protocol):
    async def load(self, group_ids: Iterable[str], *,
                   recheck_missing: bool = True) -> dict[str, GroupFacts]:
        """The facts of those of `group_ids` that exist."""


class GroupFactsCache:
    def __init__(self, calls: Caller, *, clock: Clock | None = None,
                 ttl: float = FACTS_TTL) -> None:
        self._reader = DirectReader(calls)
        self._clock: Clock = clock or RealClock()
        self._ttl = ttl
        self._facts: dict[str, tuple[float, GroupFacts]] = {}
        self._missing: dict[str, float] = {}  # group ID → when AWS said it is not there

    def get(self, group_id: str) -> GroupFacts | None:
        """What is known of the group now, without asking AWS."""
        entry = self._facts.get(group_id)
        if entry is None or self._clock.now() - entry[0] >= self._ttl:
            return None
        return entry[1]

    def remember(self, groups: Iterable[Mapping[str, Any]]) -> None:
        """DescribeSecurityGroups items read for another purpose."""
        now = self._clock.now()
        for group in groups:
            facts = facts_of(group)
            self._facts[facts.group_id] = (now, facts)
            self._missing.pop(facts.group_id, None)

    def _known_missing(self, group_id: str, now: float) -> bool:
        since = self._missing.get(group_id)
        return since is not None and now - since < self._ttl

    async def load(self, group_ids: Iterable[str], *,
                   recheck_missing: bool = True) -> dict[str, GroupFacts]:
        """The facts of those of `group_ids` that exist, reading only what is not cached (nor,
        without `recheck_missing`, known to be missing)."""
        wanted = sorted(set(group_ids))
        now = self._clock.now()
        ask = [g for g in wanted if self.get(g) is None
               and (recheck_missing or not self._known_missing(g, now))]
        for start in range(0, len(ask), _CHUNK):
            chunk = ask[start:start + _CHUNK]
            self.remember(await self._reader.security_groups(vpc_id=None, ids=chunk))
            self._missing.update({g: now for g in chunk if self.get(g) is None})
        found = {g: self.get(g) for g in wanted}
        return {g: f for g, f in found.items() if f is not None}


class ReadCacheGroupFacts:
    """Group facts as admission reads them: through the webhooks' `ReadCache` (one lookup per
    group in flight, misses rate-limited, answers cached briefly), so no number of reviews
    costs more than a few calls. Raises `LookupUnavailable` when there is no answer in time:
    the caller fails open, leaving the check to the reconcile."""

    def __init__(self, reads: ReadCache) -> None:
        self._reads = reads

    async def load(self, group_ids: Iterable[str], *,
                   recheck_missing: bool = True) -> dict[str, GroupFacts]:
        found: dict[str, GroupFacts] = {}
        for group_id in sorted(set(group_ids)):
            group = await self._reads.security_group(group_id)
            if group is not None:
                found[group_id] = facts_of(group)
        return found


__all__ = ["FACTS_TTL", "GroupFacts", "GroupFactsCache", "GroupFactsSource",
           "ReadCacheGroupFacts", "facts_of"]
