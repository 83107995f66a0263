"""Reading ELBv2 and EC2 resources: the surface every reader has (`Reader`), and the reader
that asks AWS (`DirectReader`).

Readers wrap one another, each with the same surface, as client-go's queue, delaying queue and
rate-limiting queue do:

    SnapshotReader(BatchingReader(DirectReader(caller), batcher), snapshot)

- `DirectReader` (here) asks AWS: one call per lookup (of at most 20 keys where AWS says so).
  AWS refuses a lookup whole when one of its keys is missing; then the keys are asked for again
  apart and the missing ones left out (`split_missing`, the one place this is written).
- `BatchingReader` (batching.py): paced verifications that wait for the verification budget at
  the same time share their lookups by ARN or name; otherwise the reader below asks.
- `SnapshotReader` (snapshot.py): a paced verification is answered from the region snapshot's
  listing, and the caller then only confirms (`Caller.confirm_only`); otherwise the reader
  below asks.

What is not a lookup of many resources (one load balancer's listeners, a listener's rules,
attributes, certificates, subnets) is read with the caller itself (`reader.caller`).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controller.aws.caller import Caller
from controller.aws.errors import AWSError

Desc = dict[str, Any]


@dataclass(frozen=True)
class Query:
    """A Describe call that takes a list of keys (`param`) and answers a list of items
    (`result`), each named by its `key`."""

    operation: str
    param: str
    result: str
    key: str
    limit: int | None = None  # keys one call takes at most (None: all of them)
    # Codes that, besides AWS's "...NotFound", mean that one of the keys is not there.
    also_missing: frozenset[str] = frozenset()

    def missing(self, exc: AWSError) -> bool:
        return exc.is_not_found or exc.code in self.also_missing


LOAD_BALANCERS_BY_ARN: Final = Query("DescribeLoadBalancers", "LoadBalancerArns", "LoadBalancers",
                                     "LoadBalancerArn", limit=20)
LOAD_BALANCERS_BY_NAME: Final = Query("DescribeLoadBalancers", "Names", "LoadBalancers",
                                      "LoadBalancerName", limit=20)
# A target group's ARN or name may come from a user's spec: AWS answers a malformed one with
# ValidationError, which means as much as not found.
TARGET_GROUPS_BY_ARN: Final = Query("DescribeTargetGroups", "TargetGroupArns", "TargetGroups",
                                    "TargetGroupArn", also_missing=frozenset({"ValidationError"}))
TARGET_GROUPS_BY_NAME: Final = Query("DescribeTargetGroups", "Names", "TargetGroups",
                                     "TargetGroupName", also_missing=frozenset({"ValidationError"}))
TAGS: Final = Query("DescribeTags", "ResourceArns", "TagDescriptions", "ResourceArn", limit=20)


@dataclass
class Answer:
    items: list[Desc] = field(default_factory=list)
    # Keys AWS refused on their own, with its answer: missing (or malformed).
    refused: dict[str, AWSError] = field(default_factory=dict)

    def tags(self) -> dict[str, dict[str, str]]:
        """The items of a `TAGS` answer, as tags by ARN."""
        return {str(d["ResourceArn"]): tag_dict(d.get("Tags")) for d in self.items}


@dataclass(frozen=True)
class Tagged:
    """One resource with its tags; `desc` None when it is not there (or a malformed key), with
    AWS's answer when it gave one (`refused`)."""

    desc: Desc | None
    tags: dict[str, str] = field(default_factory=dict)
    refused: AWSError | None = None


async def split_missing(ask: Callable[[list[str]], Awaitable[list[Desc]]], keys: list[str], *,
                        missing: Callable[[AWSError], bool], halves: bool = False) -> Answer:
    """`ask(keys)`; when AWS refuses it for a missing key (`missing`), the keys are asked for
    again apart, one by one or (`halves`) half by half, and those refused on their own are
    left out. Halves cost about 2·log2(n) calls for one missing key among n instead of n: for
    keys that may well be missing (user-given ARNs read along with the one asked for)."""
    if not keys:
        return Answer()
    try:
        return Answer(items=await ask(keys))
    except AWSError as exc:
        if not missing(exc):
            raise
        if len(keys) == 1:
            return Answer(refused={keys[0]: exc})
    if halves:
        middle = len(keys) // 2
        parts = [keys[:middle], keys[middle:]]
    else:
        parts = [[key] for key in keys]
    answer = Answer()
    for part in await asyncio.gather(*(split_missing(ask, p, missing=missing, halves=halves)
                                       for p in parts)):
        answer.items += part.items
        answer.refused.update(part.refused)
    return answer


async def send(caller: Caller, query: Query, keys: Sequence[str]) -> list[Desc]:
    """One call of `query` for `keys`. Each operation is named where it is sent: the IAM
    policy is derived from such names."""
    params: dict[str, Any] = {query.param: list(keys)}
    if query.operation == "DescribeLoadBalancers":
        resp = await caller.call("DescribeLoadBalancers", **params)
    elif query.operation == "DescribeTargetGroups":
        resp = await caller.call("DescribeTargetGroups", **params)
    elif query.operation == "DescribeTags":
        resp = await caller.call("DescribeTags", **params)
    else:
        raise ValueError(f"{query.operation} is not a lookup")
    items: list[Desc] = resp.get(query.result) or []
    return items


def tag_dict(tags: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """AWS's `[{"Key": ..., "Value": ...}]` as a mapping."""
    return {str(t["Key"]): str(t.get("Value", "")) for t in tags or []}


def _chunks(keys: Sequence[str], limit: int | None) -> Iterator[list[str]]:
    step = limit or max(len(keys), 1)
    for start in range(0, len(keys), step):
        yield list(keys[start:start + step])


class Reader(ABC):
    """What every reader answers: AWS's descriptions, as AWS gives them; a resource that does
    not exist is left out. The lookups by key are written once, on `describe`, which each
    reader answers its own way."""

    @property
    @abstractmethod
    def caller(self) -> Caller:
        """The caller the reads go through; a deploy makes its other calls with it too."""

    @abstractmethod
    async def describe(self, query: Query, keys: Sequence[str]) -> list[Desc]:
        """The items of `query` for `keys` (not empty, at most `query.limit`)."""

    @abstractmethod
    async def target_groups_of_load_balancer(self, arn: str) -> list[Desc]:
        """The target groups `arn` forwards to (none when it is gone)."""

    @abstractmethod
    async def security_groups(self, *, vpc_id: str | None, names: Sequence[str] = (),
                              ids: Sequence[str] = (),
                              tags: Mapping[str, str] | None = None,
                              name_tags: Sequence[str] = ()) -> list[Desc]:
        """Security groups (with their rules and tags) of `vpc_id` whose GroupName is one of
        `names`, or whose `Name` tag is one of `name_tags` (how upstream resolves the groups a
        user names), or carrying every tag of `tags`, or every group of the VPC when none is
        given; `ids` are looked up by ID alone. Missing IDs are left out."""

    async def load_balancers(self, *, arns: Sequence[str] = (),
                             names: Sequence[str] = ()) -> list[Desc]:
        found: list[Desc] = []
        for query, keys in ((LOAD_BALANCERS_BY_ARN, arns), (LOAD_BALANCERS_BY_NAME, names)):
            for chunk in _chunks(keys, query.limit):
                found += await self.describe(query, chunk)
        return found

    async def target_groups(self, *, arns: Sequence[str] = (),
                            names: Sequence[str] = ()) -> list[Desc]:
        found: list[Desc] = []
        for query, keys in ((TARGET_GROUPS_BY_ARN, arns), (TARGET_GROUPS_BY_NAME, names)):
            for chunk in _chunks(keys, query.limit):
                found += await self.describe(query, chunk)
        return found

    async def tags(self, arns: Iterable[str]) -> dict[str, dict[str, str]]:
        """Tags of ELBv2 resources of any type, by ARN, 20 ARNs a call at most."""
        parts = await asyncio.gather(*(self.describe(TAGS, chunk)
                                       for chunk in _chunks(sorted(set(arns)), TAGS.limit)))
        return Answer(items=[d for part in parts for d in part]).tags()


class DirectReader(Reader):
    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    @property
    def caller(self) -> Caller:
        return self._caller

    async def answer(self, query: Query, keys: Sequence[str], *,
                     halves: bool = False) -> Answer:
        """`describe`, with the keys AWS refused and its words for each (`halves`: see
        `split_missing`)."""
        async def ask(part: list[str]) -> list[Desc]:
            return await send(self._caller, query, part)

        return await split_missing(ask, list(keys), missing=query.missing, halves=halves)

    async def describe(self, query: Query, keys: Sequence[str]) -> list[Desc]:
        return (await self.answer(query, keys)).items

    async def target_group(self, *, arn: str | None = None, name: str | None = None) -> Tagged:
        """One target group by ARN or name, with its tags (two calls); one gone between the
        two is not there either."""
        query, key = (TARGET_GROUPS_BY_ARN, arn) if arn else (TARGET_GROUPS_BY_NAME, name or "")
        groups = await self.answer(query, [key])
        if not groups.items:
            return Tagged(None, refused=groups.refused.get(key))
        desc = groups.items[0]
        found = str(desc["TargetGroupArn"])
        tags = await self.answer(TAGS, [found])
        if found in tags.refused:
            return Tagged(None, refused=tags.refused[found])
        return Tagged(desc, tags.tags().get(found, {}))

    async def target_groups_of_load_balancer(self, arn: str) -> list[Desc]:
        found: list[Desc] = []
        try:
            async for page in self._caller.paginate("DescribeTargetGroups", LoadBalancerArn=arn):
                found.extend(page.get("TargetGroups") or [])
        except AWSError as exc:
            if not exc.is_not_found:
                raise
        return found

    async def security_groups(self, *, vpc_id: str | None, names: Sequence[str] = (),
                              ids: Sequence[str] = (),
                              tags: Mapping[str, str] | None = None,
                              name_tags: Sequence[str] = ()) -> list[Desc]:
        if ids:
            answer = await split_missing(self._groups_by_id, list(ids),
                                         missing=lambda exc: exc.is_group_not_found)
            return answer.items
        filters: list[dict[str, Any]] = []
        if vpc_id is not None:
            filters.append({"Name": "vpc-id", "Values": [vpc_id]})
        if names:
            filters.append({"Name": "group-name", "Values": list(names)})
        if name_tags:
            filters.append({"Name": "tag:Name", "Values": list(name_tags)})
        filters += [{"Name": f"tag:{key}", "Values": [value]}
                    for key, value in (tags or {}).items()]
        if names or tags or name_tags:
            resp = await self._caller.call("DescribeSecurityGroups", service="ec2",
                                           Filters=filters)
            return list(resp.get("SecurityGroups") or [])
        if vpc_id is None:
            raise ValueError("security groups are listed per VPC, not for the whole region")
        found: list[Desc] = []
        async for page in self._caller.paginate("DescribeSecurityGroups", service="ec2",
                                                Filters=filters):
            found.extend(page.get("SecurityGroups") or [])
        return found

    async def _groups_by_id(self, ids: list[str]) -> list[Desc]:
        resp = await self._caller.call("DescribeSecurityGroups", service="ec2", GroupIds=ids)
        return list(resp.get("SecurityGroups") or [])


__all__ = [
    "LOAD_BALANCERS_BY_ARN",
    "LOAD_BALANCERS_BY_NAME",
    "TAGS",
    "TARGET_GROUPS_BY_ARN",
    "TARGET_GROUPS_BY_NAME",
    "Answer",
    "Desc",
    "DirectReader",
    "Query",
    "Reader",
    "Tagged",
    "send",
    "split_missing",
    "tag_dict",
]
