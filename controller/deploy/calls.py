"""The deployer's view of the AWS client pool: ELBv2 and EC2 calls, counted, with an optional
hook before every mutating call (tests use it to simulate a crash at any point)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.aws import AWSClientPool
from controller.deploy.errors import SnapshotStale

if TYPE_CHECKING:
    from controller.deploy.batching import DescribeBatcher
    from controller.deploy.snapshot import RegionSnapshot

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


class Calls:
    def __init__(self, pool: AWSClientPool, *, before_mutation: BeforeMutation | None = None,
                 after_mutation: AfterMutation | None = None,
                 counts: CallCounts | None = None,
                 batcher: DescribeBatcher | None = None,
                 snapshot: RegionSnapshot | None = None) -> None:
        self._pool = pool
        # Describe calls by ARN or name may be shared with other verifications (batching.py).
        self.batcher = batcher
        # A verification's lookups may be answered by the region snapshot (snapshot.py);
        # `from_snapshot` says one was, and then no mutating call may be sent.
        self.snapshot = snapshot
        self.from_snapshot = False
        self._before_mutation = before_mutation
        self._after_mutation = after_mutation
        self.counts = counts or CallCounts()

    def _count(self, operation: str, params: dict[str, Any]) -> None:
        self.counts.calls += 1
        self.counts.by_operation[operation] = self.counts.by_operation.get(operation, 0) + 1
        if is_mutating(operation):
            if self.from_snapshot:
                raise SnapshotStale(operation)
            self.counts.mutating += 1
            if self._before_mutation is not None:
                self._before_mutation(operation, params)

    async def call(self, operation: str, /, *, service: str = "elbv2",
                   **params: Any) -> dict[str, Any]:
        self._count(operation, params)
        response = await self._pool.call(service, operation, **params)
        if self._after_mutation is not None and is_mutating(operation):
            self._after_mutation(operation, params, response)
        return response

    async def paginate(self, operation: str, /, *, service: str = "elbv2",
                       **params: Any) -> AsyncIterator[dict[str, Any]]:
        async for page in self._pool.paginate(service, operation, **params):
            self._count(operation, params)
            yield page
