"""The queue's options: one object (`QueueOptions`, with the LOW lane's nested in
`LowLaneOptions`), and one function that fills in defaults and rejects nonsense
(`with_defaults`), as controller-runtime's priority queue `Opts` and its defaulting do.

A field left None takes its default; what each default is, is written down only in
`with_defaults`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from runtime.workqueue.ratelimit import ItemExponentialFailureRateLimiter, RateLimiter

__all__ = ["AllGates", "LaneGate", "LowLaneOptions", "QueueOptions", "with_defaults"]


class LaneGate(Protocol):
    """A budget the LOW lanes of several queues share. The queue only looks; whoever does the
    work spends it (so a LOW item's cost need not be known when it leaves the queue)."""

    def time_to_open(self) -> float:
        """Seconds until the gate opens; 0.0 while it is open."""
        ...


class AllGates:
    """Several gates as one: open when every one of them is."""

    __slots__ = ("gates",)

    def __init__(self, *gates: LaneGate) -> None:
        self.gates = gates

    def time_to_open(self) -> float:
        return max((g.time_to_open() for g in self.gates), default=0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class LowLaneOptions:
    """How items below NORMAL priority leave the queue.

    - `qps`, `burst`: the token bucket LOW items leave through (qps None: unpaced).
    - `max_wait`: seconds after which a ready LOW item is promoted ahead of everything else
      (math.inf: never), so constant normal traffic cannot starve it.
    - `gate`: a budget shared with other queues; no LOW item leaves while it is closed.
    - `max_in_flight`: at most this many LOW items handed out at once (None: no limit), so LOW
      work waiting on the gate never occupies every worker.
    """

    qps: float | None = None
    burst: int | None = None
    max_wait: float | None = None
    gate: LaneGate | None = None
    max_in_flight: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueOptions:
    """`rate_limiter` answers rate-limited adds (None: per-key exponential backoff from 5 ms,
    doubling up to `max_backoff` seconds); `low_lane` is the LOW lane's policy."""

    rate_limiter: RateLimiter[Any] | None = None
    max_backoff: float | None = None
    low_lane: LowLaneOptions = field(default_factory=LowLaneOptions)


# The defaults, all here.
DEFAULT_MAX_BACKOFF = 1000.0  # controller-runtime's 5 ms → 1000 s
DEFAULT_LOW_BURST = 10
DEFAULT_LOW_MAX_WAIT = 60.0


def _seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def with_defaults(options: QueueOptions | None = None) -> QueueOptions:
    """`options` with every unset field filled in; ValueError naming the field for values that
    make no sense. Rate and burst are checked by the token bucket itself."""
    options = options if options is not None else QueueOptions()
    low = options.low_lane
    max_wait = DEFAULT_LOW_MAX_WAIT if low.max_wait is None else low.max_wait
    if not (_seconds(max_wait) and max_wait >= 0):
        raise ValueError("LOW lane: max_wait must be a number of seconds >= 0 (math.inf: never), "
                         f"got {low.max_wait!r}")
    if low.max_in_flight is not None and (
            not isinstance(low.max_in_flight, int) or isinstance(low.max_in_flight, bool)
            or low.max_in_flight < 1):
        raise ValueError("LOW lane: max_in_flight must be an integer >= 1 or None, "
                         f"got {low.max_in_flight!r}")
    max_backoff = DEFAULT_MAX_BACKOFF if options.max_backoff is None else options.max_backoff
    rate_limiter: RateLimiter[Hashable] | None = options.rate_limiter
    if rate_limiter is None:
        rate_limiter = ItemExponentialFailureRateLimiter(max_delay=max_backoff)
    return QueueOptions(
        rate_limiter=rate_limiter,
        max_backoff=max_backoff,
        low_lane=replace(low, burst=DEFAULT_LOW_BURST if low.burst is None else low.burst,
                         max_wait=float(max_wait)),
    )
