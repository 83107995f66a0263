"""Waiting for asynchronous outcomes in tests without sleeping blindly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


async def eventually(check: Callable[[], Awaitable[Any]], *, timeout: float = 15.0,
                     interval: float = 0.05,
                     message: str = "condition not reached in time") -> Any:
    """Poll `check` every `interval` seconds until it returns something truthy, and return
    that; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{message} (after {timeout}s)")
        await asyncio.sleep(interval)
