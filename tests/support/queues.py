"""Helpers for tests that drive a PriorityQueue by hand, without workers."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any, TypeVar

from runtime.prioritydecisions import Deferred
from runtime.workqueue import LowLaneOptions, PriorityQueue, QueueOptions

K = TypeVar("K", bound=Hashable)


def low_lane(**lane: Any) -> QueueOptions:
    """Queue options with these LOW-lane settings (`LowLaneOptions` fields)."""
    return QueueOptions(low_lane=LowLaneOptions(**lane))


async def settle(rounds: int = 20) -> None:
    """Let woken tasks run."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def take_ready(queue: PriorityQueue[K]) -> list[tuple[K, int]]:
    """Hand out every item that may leave the queue now, as `get_nowait` would (not done)."""
    out: list[tuple[K, int]] = []
    while True:
        try:
            out.append(queue.get_nowait())
        except asyncio.QueueEmpty:
            return out


def finish_ready(queue: PriorityQueue[K]) -> int:
    """Take and finish, one at a time, every item that may leave now; how many did."""
    taken = 0
    while True:
        try:
            key, _ = queue.get_nowait()
        except asyncio.QueueEmpty:
            return taken
        queue.done(key)
        taken += 1


async def parked_getter(queue: PriorityQueue[K]) -> tuple[asyncio.Task[None], list[tuple[K, int]]]:
    """Start a getter and let it park; what it eventually gets lands in the list."""
    got: list[tuple[K, int]] = []

    async def getter() -> None:
        got.append(await queue.get())

    task = asyncio.create_task(getter())
    await settle()
    return task, got


def decided(priority: int | Deferred) -> int:
    """A priority function's answer, with a deferred decision made now (as the controller's
    decisions task would make it)."""
    return priority() if isinstance(priority, Deferred) else priority
