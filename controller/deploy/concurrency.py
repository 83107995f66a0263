"""Run branches of a deploy concurrently, all-or-nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any


async def run_all(coroutines: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Like `gather`, but when one branch fails the others are cancelled (no call keeps
    running behind the caller's back), and the first error is raised as itself rather than
    inside an ExceptionGroup."""
    try:
        async with asyncio.TaskGroup() as group:
            for coroutine in coroutines:
                group.create_task(coroutine)
    except BaseExceptionGroup as errors:
        first = errors.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
