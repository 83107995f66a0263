"""User-supplied functions (index, map, priority and filter functions) meet hostile objects; one
that raises must cost one log line, not the informer or the other objects.

`FailureLog` logs such a failure at most once per object per interval: the same broken object
comes back on every resync and every update, and a line each time would drown the log.
"""

from __future__ import annotations

from typing import Any

import structlog

from runtime.clock import Clock, RealClock

__all__ = ["FailureLog", "describe"]


def describe(exc: BaseException) -> str:
    """`Type: message`, one line, no traceback (bad input is not a crash)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class FailureLog:
    """At most one warning per `(what, object key)` per `interval` seconds. The memory of what was
    logged is bounded by `max_keys` (past that, old marks are forgotten first)."""

    def __init__(self, logger: Any | None = None, *, interval: float = 300.0,
                 max_keys: int = 4096, clock: Clock | None = None) -> None:
        self._log = logger if logger is not None else structlog.get_logger("runtime")
        self._interval = interval
        self._max_keys = max_keys
        self._clock: Clock = clock or RealClock()
        self._last: dict[tuple[str, str], float] = {}

    def failed(self, what: str, key: str, exc: BaseException, **fields: Any) -> bool:
        """Report that `what` (e.g. "index 'app'") failed on object `key`; True if logged."""
        now = self._clock.now()
        mark = (what, key)
        last = self._last.get(mark)
        if last is not None and now - last < self._interval:
            return False
        if last is None and len(self._last) >= self._max_keys:
            self._forget(now)
        self._last.pop(mark, None)  # re-inserted last: the dict stays in logging order
        self._last[mark] = now
        self._log.warning(f"{what} failed on an object", object=key, error=describe(exc),
                          **fields)
        return True

    def _forget(self, now: float) -> None:
        expired = [m for m, t in self._last.items() if now - t >= self._interval]
        for mark in expired:
            del self._last[mark]
        while len(self._last) >= self._max_keys:  # all recent: drop the oldest marks
            del self._last[next(iter(self._last))]
