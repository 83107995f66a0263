"""The client-go family of per-key rate limiters, which answer the queue's rate-limited adds.

Limiters follow client-go's `workqueue` contracts: `when(key)` records a failure and returns the
delay before the key may be retried, `forget(key)` clears its history, `num_requeues(key)` reports
how many failures were recorded.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from runtime.clock import Clock
from runtime.tokenbucket import TokenBucket

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol[K_contra]):
    def when(self, key: K_contra) -> float:
        """Record a failure of `key` and return the delay in seconds before its retry."""
        ...

    def forget(self, key: K_contra) -> None: ...

    def num_requeues(self, key: K_contra) -> int: ...


class ItemExponentialFailureRateLimiter(Generic[K]):
    """`base * 2**failures`, capped at `max_delay`; per key. Defaults are controller-runtime's
    (5 ms doubling to 1000 s, reached on the 19th consecutive failure)."""

    def __init__(self, *, base: float = 0.005, max_delay: float = 1000.0) -> None:
        if not (isinstance(base, int | float) and math.isfinite(base) and base > 0):
            raise ValueError(f"exponential backoff base must be a positive number, got {base!r}")
        if not (
            isinstance(max_delay, int | float) and math.isfinite(max_delay) and max_delay >= base
        ):
            raise ValueError(
                f"exponential backoff max_delay must be a number >= base ({base}), "
                f"got {max_delay!r}"
            )
        self._base = base
        self._max = max_delay
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        exp = self._failures.get(key, 0)
        self._failures[key] = exp + 1
        # A float exponent this large overflows; the cap is long reached anyway.
        if exp >= 1024:
            return self._max
        return min(self._base * 2.0**exp, self._max)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter(Generic[K]):
    """One token bucket shared by all keys (client-go's `BucketRateLimiter`, 10 qps / 100 burst):
    it bounds the overall retry rate, not any single key's."""

    def __init__(self, *, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        self._bucket = TokenBucket(rate=qps, burst=burst, clock=clock)

    def when(self, key: K) -> float:
        return self._bucket.reserve()

    def forget(self, key: K) -> None:
        pass

    def num_requeues(self, key: K) -> int:
        return 0


class MaxOfRateLimiter(Generic[K]):
    """The slowest answer of several limiters. Every child sees every `when`, so a bucket child
    spends a token on each rate-limited add even when another child's delay wins."""

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, key: K) -> float:
        return max([limiter.when(key) for limiter in self._limiters])

    def forget(self, key: K) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return max(limiter.num_requeues(key) for limiter in self._limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter[K]:
    """client-go's `DefaultTypedControllerRateLimiter`: exponential 5 ms → 1000 s per key, and a
    10 qps / 100 burst bucket over all keys."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base=0.005, max_delay=1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
