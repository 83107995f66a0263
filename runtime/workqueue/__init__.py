"""The work queue, layered like client-go's: the contract queue (`queue.py`), the LOW lane's
policy (`lowlane.py`) configured by one options object (`options.py`), the rate limiters that
answer rate-limited adds (`ratelimit.py`), and metrics computed at scrape time (`metrics.py`).
README.md in `runtime/` tells the whole story."""

from __future__ import annotations

from runtime.workqueue.options import (
    AllGates,
    LaneGate,
    LowLaneOptions,
    QueueOptions,
    with_defaults,
)
from runtime.workqueue.queue import PriorityQueue, ShutDown
from runtime.workqueue.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)

__all__ = [
    "AllGates",
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "LaneGate",
    "LowLaneOptions",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "QueueOptions",
    "RateLimiter",
    "ShutDown",
    "default_controller_rate_limiter",
    "with_defaults",
]
