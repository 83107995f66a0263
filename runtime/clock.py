"""Injectable time. Queues, rate limiters, leader election and backoff read time only from here,
so tests can drive them with a `FakeClock` instead of sleeping."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""
        ...

    def wall(self) -> float:
        """Unix seconds, for timestamps written to objects."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    # The builtin itself rather than a method calling it: work queues read the time several
    # times per item.
    now = staticmethod(time.monotonic)

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time that moves only when a test calls `advance`. Sleepers wake in deadline order."""

    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._wall_offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline passes, in order, and let the
        woken tasks run before returning."""
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not fut.done():
                fut.set_result(None)
            for _ in range(5):
                await asyncio.sleep(0)
        self._now = target
        for _ in range(5):
            await asyncio.sleep(0)
