"""The lock whose holder inherits the priority of the most urgent waiter."""

from __future__ import annotations

import asyncio

from runtime.prioritylock import InheritingLock
from runtime.reconcile import LOW, NORMAL, ReconcilePriority, current_reconcile


async def _hold(lock: InheritingLock, cell: ReconcilePriority, entered: asyncio.Event,
                leave: asyncio.Event) -> None:
    with current_reconcile(priority=cell, reconcile_id="holder"):
        async with lock:
            entered.set()
            await leave.wait()


async def test_a_normal_waiter_promotes_a_low_holder() -> None:
    lock = InheritingLock()
    holder = ReconcilePriority(LOW)
    entered, leave = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_hold(lock, holder, entered, leave))
    await entered.wait()
    waiter_done = asyncio.Event()

    async def normal() -> None:
        with current_reconcile(priority=ReconcilePriority(NORMAL), reconcile_id="change"):
            async with lock:
                waiter_done.set()

    waiting = asyncio.create_task(normal())
    await asyncio.wait_for(holder.raised(), 1)
    assert holder.value == NORMAL
    assert not waiter_done.is_set()  # still behind the holder, which now hurries
    leave.set()
    await asyncio.wait_for(waiting, 1)
    await task


async def test_a_low_waiter_leaves_a_low_holder_low_and_the_next_holder_is_promoted() -> None:
    lock = InheritingLock()
    first = ReconcilePriority(LOW)
    entered, leave = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_hold(lock, first, entered, leave))
    await entered.wait()
    second = ReconcilePriority(LOW)
    second_in, second_leave = asyncio.Event(), asyncio.Event()
    queued = asyncio.create_task(_hold(lock, second, second_in, second_leave))
    await asyncio.sleep(0)
    assert first.value == LOW  # a verification behind a verification changes nothing

    async def outside() -> None:  # no reconcile: counts as NORMAL
        async with lock:
            pass

    late = asyncio.create_task(outside())
    await asyncio.sleep(0)
    assert first.value == NORMAL
    leave.set()
    await second_in.wait()
    # The real change is still queued behind the second verification: it is promoted too.
    assert second.value == NORMAL
    second_leave.set()
    await asyncio.gather(task, queued, late)
    assert not lock.locked()
