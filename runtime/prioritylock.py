"""A lock shared by reconciles of different priorities, whose holder inherits the priority of
the most urgent waiter.

A paced LOW-lane verification may hold a lock on something every reconcile shares (one
security group all bindings write to) while it waits for the verification budget; a real
change needing the same lock would then wait for the budget too: priority inversion. Here a
waiter with a higher priority raises the holder's (`ReconcilePriority.raise_to`, the same
promotion a key gets when a real change arrives for it in flight), so the holder stops waiting
like a verification and the real change gets the lock as soon as the work under it is done.
Outside a reconcile the caller counts as NORMAL.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from runtime.reconcile import NORMAL, ReconcilePriority, current_priority


class InheritingLock:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._holder: ReconcilePriority | None = None
        self._waiting: list[int] = []

    def locked(self) -> bool:
        return self._lock.locked()

    def _promote_holder(self) -> None:
        if self._holder is not None and self._waiting:
            self._holder.raise_to(max(self._waiting))

    async def acquire(self) -> None:
        mine = current_priority()
        level = mine.value if mine is not None else NORMAL
        self._waiting.append(level)
        try:
            self._promote_holder()
            await self._lock.acquire()
        finally:
            self._waiting.remove(level)
        self._holder = mine
        # Whoever still waits behind the new holder is owed its priority too.
        self._promote_holder()

    def release(self) -> None:
        self._holder = None
        self._lock.release()

    async def __aenter__(self) -> InheritingLock:
        await self.acquire()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


__all__ = ["InheritingLock"]
