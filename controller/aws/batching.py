"""The batching reader: lookups by ARN or name shared by the paced verifications that wait for
the verification budget at the same time.

After a restart every unchanged stack is verified once, and the verification budget
(budget.py) is what they all wait for. While it is in debt, a verification's
DescribeLoadBalancers (by names or ARNs), DescribeTargetGroups (by ARNs) or DescribeTags does
not ask on its own: it opens a batch, or joins the one open for that call, and the batch is
sent once the budget's debt is paid (at most `max_wait` later), with every ARN or name its
members asked for (at most 20: DescribeTags' limit, and DescribeLoadBalancers'). One call,
charged once, answers them all; each member keeps the items it asked for.

What it does not change:
- real changes (NORMAL reconciles) never wait here, and neither does a verification while the
  budget is open (with no one waiting there is no one to share with) or once it is promoted
  to a real change;
- every member still judges from a read made after it asked, so a verification sees the same
  drift it saw alone;
- AWS answers NotFound for the whole call when any item is missing: then every member asks
  for its own items again through the reader below, which finds out which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controller.aws.budget import VerificationBudget
from controller.aws.caller import Caller
from controller.aws.errors import AWSError
from controller.aws.reader import (
    LOAD_BALANCERS_BY_ARN,
    LOAD_BALANCERS_BY_NAME,
    TAGS,
    TARGET_GROUPS_BY_ARN,
    Desc,
    Query,
    Reader,
    send,
)
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority

BATCH_LIMIT: Final = 20
MAX_WAIT: Final = 1.0
SHARED: Final = frozenset({LOAD_BALANCERS_BY_ARN, LOAD_BALANCERS_BY_NAME, TARGET_GROUPS_BY_ARN,
                           TAGS})


@dataclass
class _Batch:
    values: list[str] = field(default_factory=list)
    members: int = 1
    sent: asyncio.Future[list[Desc]] | None = None


class DescribeBatcher:
    """The batches open now, shared by every deploy of one deployer."""

    def __init__(self, budget: VerificationBudget | None, *, clock: Clock | None = None,
                 max_wait: float = MAX_WAIT) -> None:
        self._budget = budget
        self._clock: Clock = clock or RealClock()
        self._max_wait = max_wait
        self._open: dict[Query, _Batch] = {}
        self.shared_calls = 0  # calls that answered more than one member

    def _wait(self) -> float:
        budget = self._budget
        return 0.0 if budget is None else min(budget.time_to_open(), self._max_wait)

    async def describe(self, caller: Caller, query: Query,
                       values: Sequence[str]) -> list[Desc] | None:
        """The items of `query` for `values`, from a shared call; None when this lookup is
        not to be shared (or the shared call was refused for a missing item): the reader
        below then asks."""
        wanted = set(values)
        cell = current_priority()
        if (cell is None or cell.value >= NORMAL or query not in SHARED or not wanted
                or len(wanted) > BATCH_LIMIT):
            return None
        batch = self._open.get(query)
        if batch is None or len(wanted | set(batch.values)) > BATCH_LIMIT:
            wait = self._wait()
            if wait <= 0:
                return None
            batch = _Batch(values=sorted(wanted))
            self._open[query] = batch
            batch.sent = asyncio.ensure_future(self._send(caller, query, batch, wait))
            # Members that leave early (promoted) do not read its outcome; it is not lost.
            batch.sent.add_done_callback(lambda t: t.cancelled() or t.exception())
        else:
            batch.values += sorted(wanted - set(batch.values))
            batch.members += 1
        assert batch.sent is not None
        # A member promoted meanwhile (a real change arrived for its object) asks alone at
        # once instead of waiting for the batch's turn in the budget.
        sent = asyncio.shield(batch.sent)
        promoted = asyncio.ensure_future(cell.raised())
        waiters: list[asyncio.Future[Any]] = [sent, promoted]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            sent.cancel()  # this member is gone (cancelled): nobody reads its view of the call
            raise
        finally:
            promoted.cancel()
        if not sent.done():
            sent.cancel()
            return None
        try:
            items = sent.result()
        except AWSError as exc:
            if query.missing(exc):
                return None
            raise
        return [item for item in items if item.get(query.key) in wanted]

    async def _send(self, caller: Caller, query: Query, batch: _Batch,
                    wait: float) -> list[Desc]:
        # Made in the first member's task context, with its caller: charged to the budget
        # once, as its call.
        try:
            await self._clock.sleep(wait)
        finally:
            if self._open.get(query) is batch:
                del self._open[query]
        items = await send(caller, query, batch.values)
        if batch.members > 1:
            self.shared_calls += 1
        return items


class BatchingReader(Reader):
    """Wraps `below`: a lookup it may share goes to the batcher first."""

    def __init__(self, below: Reader, batcher: DescribeBatcher) -> None:
        self._below = below
        self._batcher = batcher

    @property
    def caller(self) -> Caller:
        return self._below.caller

    async def describe(self, query: Query, keys: Sequence[str]) -> list[Desc]:
        shared = await self._batcher.describe(self.caller, query, keys)
        if shared is not None:
            return shared
        return await self._below.describe(query, keys)

    async def target_groups_of_load_balancer(self, arn: str) -> list[Desc]:
        return await self._below.target_groups_of_load_balancer(arn)

    async def security_groups(self, *, vpc_id: str | None, names: Sequence[str] = (),
                              ids: Sequence[str] = (),
                              tags: Mapping[str, str] | None = None,
                              name_tags: Sequence[str] = ()) -> list[Desc]:
        return await self._below.security_groups(vpc_id=vpc_id, names=names, ids=ids,
                                                 tags=tags, name_tags=name_tags)


__all__ = ["BATCH_LIMIT", "SHARED", "BatchingReader", "DescribeBatcher"]
