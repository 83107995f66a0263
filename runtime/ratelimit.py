"""Former home of the token bucket and the rate limiters; they now live in `runtime.tokenbucket`
and `runtime.workqueue.ratelimit`."""

from __future__ import annotations

# compatibility re-export
from runtime.tokenbucket import TokenBucket

# compatibility re-export
from runtime.workqueue.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "default_controller_rate_limiter",
]
