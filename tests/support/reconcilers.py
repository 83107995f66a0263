"""A reconciler for tests that drive a real Controller: it notes what it ran and can hold a
reconcile in flight."""

from __future__ import annotations

import asyncio

from runtime.reconcile import Request, Result, reconcile_priority


class Recording:
    """Reconciles by noting each request (its name, or its key with `keyed`) and the priority
    it ran at; the requests named in `hold` wait for `release` before they finish."""

    def __init__(self, hold: set[str] | None = None, *, keyed: bool = False) -> None:
        self.seen: list[tuple[str, int]] = []
        self.hold = hold or set()
        self.keyed = keyed
        self.release = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        which = request.key if self.keyed else request.name
        self.seen.append((which, reconcile_priority()))
        if which in self.hold:
            await self.release.wait()
        return Result()
