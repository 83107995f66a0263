"""How networking code reaches AWS: anything with the deployer's `call(operation, service=...)`
shape, so a deploy counts and can interrupt these calls like its own, and the
TargetGroupBinding controller goes straight to the shared client pool."""

from __future__ import annotations

from typing import Any, Protocol

from controller.aws import AWSClientPool, AWSError


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


__all__ = ["Caller", "PoolCaller", "is_group_not_found"]
