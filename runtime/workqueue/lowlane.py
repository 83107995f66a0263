"""The LOW lane's policy: when may an item below NORMAL priority leave the queue?

Through a token bucket (`qps`, `burst`), so a restart cannot flood the APIs behind the
reconciler; never while the shared `gate` is closed; never beyond `max_in_flight` LOW items
handed out at once. Normal items never ask. A ready LOW item older than `max_wait` is promoted
ahead of everything else by the queue, but it still needs this lane's permission, so promotion
bounds the wait without lifting the pace.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Generic, TypeVar

from runtime.clock import Clock
from runtime.tokenbucket import TokenBucket
from runtime.workqueue.options import LaneGate, LowLaneOptions

__all__ = ["LowLane"]

K = TypeVar("K", bound=Hashable)


class LowLane(Generic[K]):
    """The lane of one queue; built from defaulted options (`with_defaults`)."""

    __slots__ = ("_bucket", "_gate", "_max_in_flight", "free", "in_flight", "max_wait")

    def __init__(self, options: LowLaneOptions, *, clock: Clock) -> None:
        self._bucket: TokenBucket | None = None
        if options.qps is not None:
            try:
                self._bucket = TokenBucket(rate=options.qps, burst=options.burst or 0,
                                           clock=clock)
            except ValueError as exc:
                raise ValueError(f"LOW-priority lane: {exc}") from None
        self._gate: LaneGate | None = options.gate
        self._max_in_flight = options.max_in_flight
        # None: never promote. Read by the queue, which owns the ages.
        max_wait = options.max_wait
        self.max_wait: float | None = (
            None if max_wait is None or math.isinf(max_wait) else max_wait)
        # Keys handed out as LOW, counted only when there is a cap to count them for.
        self.in_flight: set[K] = set()
        # Nothing holds LOW items back: the queue skips asking.
        self.free = self._bucket is None and self._gate is None and self._max_in_flight is None

    @property
    def paced(self) -> bool:
        """Something besides the queue order holds LOW items back."""
        return self._bucket is not None or self._gate is not None

    def full(self) -> bool:
        """Every LOW slot is taken: only a `finished` can let the next one out."""
        return self._max_in_flight is not None and len(self.in_flight) >= self._max_in_flight

    def admit(self) -> bool:
        """May one LOW item leave now? Spends a bucket token if so (checked last for that)."""
        if self._max_in_flight is not None and len(self.in_flight) >= self._max_in_flight:
            return False
        if self._gate is not None and self._gate.time_to_open() > 0:
            return False
        return self._bucket is None or self._bucket.try_take()

    def time_to_admit(self) -> float:
        """Seconds until `admit` could succeed, as far as bucket and gate tell (slots aside)."""
        wait = 0.0
        if self._bucket is not None:
            wait = self._bucket.time_to_next()
        if self._gate is not None:
            wait = max(wait, self._gate.time_to_open())
        return wait

    def started(self, key: K) -> None:
        if self._max_in_flight is not None:
            self.in_flight.add(key)

    def finished(self, key: K) -> bool:
        """`key`, handed out as LOW, is done; True if that freed a slot someone may wait on."""
        if key not in self.in_flight:
            return False
        self.in_flight.discard(key)
        return True
