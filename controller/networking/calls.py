"""How networking code reaches AWS: anything with the deployer's `call(operation, service=...)`
shape, so a deploy counts and can interrupt these calls like its own, and the
TargetGroupBinding controller goes straight to the shared client pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from controller.aws import AWSClientPool, AWSError
from runtime.clock import Clock


class Caller(Protocol):
    async def call(self, operation: str, /, *, service: str = ...,
                   **params: Any) -> dict[str, Any]: ...


class PoolCaller:
    """The client pool in the `Caller` shape."""

    def __init__(self, pool: AWSClientPool) -> None:
        self._pool = pool

    async def call(self, operation: str, /, *, service: str = "ec2",
                   **params: Any) -> dict[str, Any]:
        return await self._pool.call(service, operation, **params)


def is_group_not_found(exc: AWSError) -> bool:
    return exc.code in ("InvalidGroup.NotFound", "InvalidGroupId.NotFound",
                        "InvalidGroupId.Malformed")


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
            if is_group_not_found(exc):
                return True
            if exc.code != "DependencyViolation":
                raise
            if attempt == retries:
                raise GroupInUse(exc.message) from None
        await clock.sleep(backoff * 2 ** attempt)
        if give_up():
            return False
    raise AssertionError("unreachable: the last attempt returns or raises")


__all__ = ["Caller", "GroupInUse", "PoolCaller", "delete_group", "is_group_not_found"]
