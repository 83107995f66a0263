"""Describe calls shared by the paced verifications that wait for the verification budget at
the same time.

After a restart every unchanged stack is verified once, and the verification budget
(controller/aws/budget.py) is what they all wait for. While it is in debt, a verification's
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
  for its own items again, the usual way (describe.py, tags.py), which finds out which one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from controller.aws import AWSClientPool, AWSError
from runtime.clock import Clock, RealClock
from runtime.reconcile import NORMAL, current_priority

if TYPE_CHECKING:
    from controller.deploy.calls import Calls

BATCH_LIMIT: Final = 20
MAX_WAIT: Final = 1.0
# What each call's answer names its items by.
_ITEM_KEY: Final = {
    ("DescribeLoadBalancers", "LoadBalancerArns"): "LoadBalancerArn",
    ("DescribeLoadBalancers", "Names"): "LoadBalancerName",
    ("DescribeTargetGroups", "TargetGroupArns"): "TargetGroupArn",
    ("DescribeTags", "ResourceArns"): "ResourceArn",
}
_RESULT_KEY: Final = {
    "DescribeLoadBalancers": "LoadBalancers",
    "DescribeTargetGroups": "TargetGroups",
    "DescribeTags": "TagDescriptions",
}


@dataclass
class _Batch:
    values: list[str] = field(default_factory=list)
    members: int = 1
    sent: asyncio.Future[list[dict[str, Any]]] | None = None


class DescribeBatcher:
    def __init__(self, pool: AWSClientPool, *, clock: Clock | None = None,
                 max_wait: float = MAX_WAIT) -> None:
        self._pool = pool
        self._clock: Clock = clock or RealClock()
        self._max_wait = max_wait
        self._open: dict[tuple[str, str], _Batch] = {}
        self.shared_calls = 0  # calls that answered more than one member

    def _wait(self) -> float:
        budget = self._pool.verification_budget
        return 0.0 if budget is None else min(budget.time_to_open(), self._max_wait)

    async def describe(self, calls: Calls, operation: str, param: str,
                       values: Sequence[str]) -> list[dict[str, Any]] | None:
        """The items of `operation` for `values`, from a shared call; None when this call
        is not to be shared (or the shared one was refused for a missing item): the caller
        then asks the usual way."""
        key = (operation, param)
        item_key = _ITEM_KEY.get(key)
        wanted = set(values)
        cell = current_priority()
        if (cell is None or cell.value >= NORMAL or item_key is None or not wanted
                or len(wanted) > BATCH_LIMIT):
            return None
        batch = self._open.get(key)
        if batch is None or len(wanted | set(batch.values)) > BATCH_LIMIT:
            wait = self._wait()
            if wait <= 0:
                return None
            batch = _Batch(values=sorted(wanted))
            self._open[key] = batch
            batch.sent = asyncio.ensure_future(
                self._send(calls, operation, param, batch, wait))
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
            if exc.is_not_found:
                return None
            raise
        return [item for item in items if item.get(item_key) in wanted]

    async def _send(self, calls: Calls, operation: str, param: str, batch: _Batch,
                    wait: float) -> list[dict[str, Any]]:
        # Made in the first member's task context: charged to the budget once, as its call.
        key = (operation, param)
        try:
            await self._clock.sleep(wait)
        finally:
            if self._open.get(key) is batch:
                del self._open[key]
        resp = await _send_one(calls, operation, {param: list(batch.values)})
        if batch.members > 1:
            self.shared_calls += 1
        items: list[dict[str, Any]] = resp.get(_RESULT_KEY[operation]) or []
        return items


async def _send_one(calls: Calls, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    # Spelt out so that every operation this module can send is named where it is sent (the
    # IAM policy is derived from such names).
    if operation == "DescribeLoadBalancers":
        return await calls.call("DescribeLoadBalancers", **params)
    if operation == "DescribeTargetGroups":
        return await calls.call("DescribeTargetGroups", **params)
    if operation == "DescribeTags":
        return await calls.call("DescribeTags", **params)
    raise ValueError(f"{operation} is not shared")


__all__ = ["BATCH_LIMIT", "DescribeBatcher"]
