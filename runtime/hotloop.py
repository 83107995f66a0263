"""The hot-loop guard: a key reconciled again and again in a short time is slowed down, whatever
keeps waking it. Per-key exponential backoff applies to failures only; a reconcile that
succeeds (or fails terminally) and wakes itself again through a write nobody filtered, or an
object flapping faster than a reconcile can help, would otherwise spin a worker and its AWS
calls. Past `limit` reconciles within `window` seconds the key's next reconcile is deferred by a
delay that doubles from `base_delay` up to `max_delay`; the count drains as the window moves."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from runtime.clock import Clock

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True, kw_only=True)
class HotLoopOptions:
    """`limit=None` turns the guard off."""

    window: float = 60.0
    limit: int | None = 50
    base_delay: float = 1.0
    max_delay: float = 60.0


class HotLoopGuard(Generic[K]):
    def __init__(self, options: HotLoopOptions, *, clock: Clock) -> None:
        if options.limit is not None and (options.limit < 1 or options.window <= 0):
            raise ValueError("hot-loop guard: limit must be >= 1 and window > 0")
        self._options = options
        self._clock = clock
        self._starts: dict[K, deque[float]] = {}

    def admit(self, key: K) -> float:
        """Record a reconcile of `key` about to start; the seconds to defer it instead (0.0: go
        ahead)."""
        limit = self._options.limit
        if limit is None:
            return 0.0
        now = self._clock.now()
        starts = self._starts.setdefault(key, deque())
        horizon = now - self._options.window
        while starts and starts[0] <= horizon:
            starts.popleft()
        if len(starts) < limit:
            starts.append(now)
            return 0.0
        excess = len(starts) - limit
        starts.append(now)  # a deferral counts too, so a key that keeps coming stays slowed
        return float(min(self._options.max_delay, self._options.base_delay * 2 ** excess))

    def forget(self, key: K) -> None:
        self._starts.pop(key, None)

    def prune(self) -> None:
        """Drop keys with nothing left in the window (bounded memory over many keys)."""
        horizon = self._clock.now() - self._options.window
        for key in [k for k, starts in self._starts.items() if not starts or starts[-1] <= horizon]:
            del self._starts[key]


__all__ = ["HotLoopGuard", "HotLoopOptions"]
