"""Batched lookups by ARN or name that tolerate resources vanishing meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from controller.aws import AWSError
from controller.deploy.calls import Calls

_LB_BATCH = 20  # DescribeLoadBalancers: at most 20 names or ARNs per call


async def _describe(calls: Calls, operation: str, result_key: str, param: str,
                    values: list[str]) -> list[dict[str, Any]]:
    """One call for the batch; if AWS answers NotFound (it does when *any* item is missing),
    ask for each item alone and drop the missing ones."""
    if not values:
        return []
    if calls.snapshot is not None:
        listing = await calls.snapshot.listing(calls)
        answered = listing.items(operation, param, values) if listing is not None else None
        if answered is not None:
            calls.from_snapshot = True
            return answered
    if calls.batcher is not None:
        shared = await calls.batcher.describe(calls, operation, param, values)
        if shared is not None:
            return shared
    try:
        kwargs: dict[str, Any] = {param: values}
        resp = await calls.call(operation, **kwargs)
    except AWSError as exc:
        if not exc.is_not_found:
            raise
        if len(values) == 1:
            return []
        parts = await asyncio.gather(
            *(_describe(calls, operation, result_key, param, [v]) for v in values))
        return [item for part in parts for item in part]
    items: list[dict[str, Any]] = resp.get(result_key, [])
    return items


async def load_balancers_by(calls: Calls, *, arns: Sequence[str] = (),
                            names: Sequence[str] = ()) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for i in range(0, len(arns), _LB_BATCH):
        found += await _describe(calls, "DescribeLoadBalancers", "LoadBalancers",
                                 "LoadBalancerArns", list(arns[i:i + _LB_BATCH]))
    for i in range(0, len(names), _LB_BATCH):
        found += await _describe(calls, "DescribeLoadBalancers", "LoadBalancers", "Names",
                                 list(names[i:i + _LB_BATCH]))
    return found


async def target_groups_by(calls: Calls, *, arns: Sequence[str] = (),
                           names: Sequence[str] = ()) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    found += await _describe(calls, "DescribeTargetGroups", "TargetGroups", "TargetGroupArns",
                             list(arns))
    found += await _describe(calls, "DescribeTargetGroups", "TargetGroups", "Names", list(names))
    return found


async def target_groups_of_load_balancer(calls: Calls, lb_arn: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if calls.snapshot is not None:
        listing = await calls.snapshot.listing(calls)
        if listing is not None:
            # What DescribeTargetGroups(LoadBalancerArn) answers: the groups naming it.
            calls.from_snapshot = True
            return [d for d in listing.target_groups if lb_arn in (d.get("LoadBalancerArns")
                                                                   or [])]
    try:
        async for page in calls.paginate("DescribeTargetGroups", LoadBalancerArn=lb_arn):
            found.extend(page.get("TargetGroups", []))
    except AWSError as exc:
        if not exc.is_not_found:
            raise
    return found
