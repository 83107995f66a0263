"""Helpers for tests that drive a PriorityQueue by hand, without workers."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import TypeVar

from runtime.workqueue import PriorityQueue

K = TypeVar("K", bound=Hashable)


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
