"""A token bucket (golang.org/x/time/rate's Limiter, reduced to what the runtime uses).

It stands on its own so that anything needing client-side pacing (the work queue's LOW lane and
its bucket rate limiter, API throttles, a REST client's QPS limit) shares one implementation and
one injectable clock.
"""

from __future__ import annotations

import math

from runtime.clock import Clock, RealClock

__all__ = ["TokenBucket"]

# Clock arithmetic in floats leaves 0.9999999 tokens where exactly one is due; without slack a
# fake clock advanced to the computed instant would never see the token.
_EPSILON = 1e-9


class TokenBucket:
    """A bucket of `burst` tokens refilled at `rate` tokens per second (golang.org/x/time/rate).

    It starts full. `try_take` takes a token only if one is there; `reserve` always takes one,
    letting the balance go negative, and returns how long the caller must wait for it.
    """

    def __init__(self, *, rate: float, burst: int, clock: Clock | None = None) -> None:
        if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"token bucket rate must be a positive number, got {rate!r}")
        if not isinstance(burst, int) or isinstance(burst, bool) or burst < 1:
            raise ValueError(f"token bucket burst must be an integer >= 1, got {burst!r}")
        self._rate = float(rate)
        self._burst = burst
        self._clock: Clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def burst(self) -> int:
        return self._burst

    def _refill(self) -> None:
        now = self._clock.now()
        if now > self._last:
            self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._rate)
            self._last = now

    def tokens(self) -> float:
        """Tokens available now (negative while reservations are outstanding)."""
        self._refill()
        return self._tokens

    def try_take(self) -> bool:
        self._refill()
        if self._tokens >= 1.0 - _EPSILON:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take a token now, possibly on credit; return seconds until it is actually due."""
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= -_EPSILON:
            return 0.0
        return -self._tokens / self._rate

    def time_to_next(self) -> float:
        """Seconds until `try_take` would succeed; 0.0 if it would now."""
        self._refill()
        missing = 1.0 - self._tokens
        if missing <= _EPSILON:
            return 0.0
        return missing / self._rate
