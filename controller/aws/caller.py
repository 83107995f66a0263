"""The one way the controller's code calls AWS: `Caller.call(operation, service=..., **params)`
and `Caller.paginate`, over the shared client pool.

Readers (reader.py, batching.py, snapshot.py), the deployer's synthesizers, the networking code
and the TargetGroupBinding controller all call through a `Caller`. A deploy makes one per run:
it counts that run's calls, runs the test hooks before and after every mutating call (the
crash tests raise there), and refuses mutations once a read of the run came from the region
snapshot (`confirm_only`). Everyone else uses a plain `Caller(pool)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from controller.aws.assumerole import Role
from controller.aws.errors import SnapshotStale
from controller.aws.pool import AWSClientPool

_READ_ONLY_PREFIXES = ("Describe", "List", "Get")

# Called with (operation, parameters) before each mutating call is sent, and with (operation,
# parameters, response) after AWS accepted it; raising from either simulates a crash there.
BeforeMutation = Callable[[str, dict[str, Any]], None]
AfterMutation = Callable[[str, dict[str, Any], dict[str, Any]], None]


def is_mutating(operation: str) -> bool:
    return not operation.startswith(_READ_ONLY_PREFIXES)


@dataclass
class CallCounts:
    calls: int = 0
    mutating: int = 0
    by_operation: dict[str, int] = field(default_factory=dict)


class Caller:
    """Calls of one service client pool. `service` is the botocore client name (`elbv2`, the
    default, `ec2`, `acm`), `operation` the PascalCase API name. With `role`, every call is
    made as that IAM role (another account's: assumerole.py)."""

    def __init__(self, pool: AWSClientPool, *, counts: CallCounts | None = None,
                 before_mutation: BeforeMutation | None = None,
                 after_mutation: AfterMutation | None = None,
                 role: Role | None = None) -> None:
        self._pool = pool
        self.role = role
        self._before_mutation = before_mutation
        self._after_mutation = after_mutation
        self._confirm_only = False
        self.counts = counts or CallCounts()

    @property
    def pool(self) -> AWSClientPool:
        return self._pool

    def confirm_only(self) -> None:
        """From now on this caller may only confirm: a mutating call raises `SnapshotStale`
        before anything is sent. The snapshot reader says so when it answered a read from its
        listing, which may be minutes old: nothing is changed on the strength of it."""
        self._confirm_only = True

    def _count(self, operation: str, params: dict[str, Any]) -> None:
        self.counts.calls += 1
        self.counts.by_operation[operation] = self.counts.by_operation.get(operation, 0) + 1
        if is_mutating(operation):
            if self._confirm_only:
                raise SnapshotStale(operation)
            self.counts.mutating += 1
            if self._before_mutation is not None:
                self._before_mutation(operation, params)

    async def call(self, operation: str, /, *, service: str = "elbv2",
                   **params: Any) -> dict[str, Any]:
        self._count(operation, params)
        response = await self._pool.call(service, operation, role=self.role, **params)
        if self._after_mutation is not None and is_mutating(operation):
            self._after_mutation(operation, params, response)
        return response

    async def paginate(self, operation: str, /, *, service: str = "elbv2",
                       **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Each page is one call, counted once it arrived."""
        async for page in self._pool.paginate(service, operation, role=self.role, **params):
            self._count(operation, params)
            yield page


__all__ = ["AfterMutation", "BeforeMutation", "CallCounts", "Caller", "is_mutating"]
