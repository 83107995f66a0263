"""Deleting a security group, for a stack's frontend group and the backend group alike: AWS
refuses while a deleted load balancer's interfaces still use it, so the deletion waits that
out."""

from __future__ import annotations

from collections.abc import Callable

from controller.aws import AWSError, Caller
from runtime.clock import Clock


class GroupInUse(Exception):
    """AWS still refused the deletion after every retry; the text is its DependencyViolation
    message."""


async def delete_group(calls: Caller, group_id: str, *, retries: int, backoff: float,
                       clock: Clock, give_up: Callable[[], bool] = lambda: False) -> bool:
    """Delete a security group, waiting out `DependencyViolation` (AWS releases the interfaces
    of a deleted load balancer some time after the deletion), `backoff` doubling between tries.
    True once it is gone (a group already gone counts); False when `give_up()` said, between
    tries, that it is wanted again; raises GroupInUse when the retries ran out."""
    for attempt in range(retries + 1):
        try:
            await calls.call("DeleteSecurityGroup", service="ec2", GroupId=group_id)
            return True
        except AWSError as exc:
            if exc.is_group_not_found:
                return True
            if exc.code != "DependencyViolation":
                raise
            if attempt == retries:
                raise GroupInUse(exc.message) from None
        await clock.sleep(backoff * 2 ** attempt)
        if give_up():
            return False
    raise AssertionError("unreachable: the last attempt returns or raises")


__all__ = ["GroupInUse", "delete_group"]
