"""The verification budget: how many AWS calls per second the paced LOW lanes may spend, all
controllers of the process together.

Pacing verifications by reconciles per controller is not enough: an ALB group's verification
costs 8 to 10 Describe calls, a Service's about 6, a TargetGroupBinding's 1 or 2, so three
lanes at 2 reconciles/s each ask for about 24 Describe calls/s against a documented
account-wide refill of 10/s, and the real changes the lanes were meant to make way for get
throttled. With a budget:

- the pool charges every call made by a LOW-priority reconcile to the budget before its
  throttle bucket (`spend`, on credit: the calls of one verification are never refused, they
  wait), and such calls take a throttle token only when no NORMAL call is owed one;
- each controller's queue lets a LOW item go only while the budget is open (`time_to_open`
  is 0), so verifications start at the rate the budget refills, whatever each one costs.

NORMAL reconciles never touch the budget, and a verification promoted in flight (its key got a
real change meanwhile) stops waiting for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from runtime.clock import Clock, RealClock
from runtime.tokenbucket import TokenBucket


class VerificationBudget:
    """A token bucket of AWS calls shared by the LOW lanes; also their `LaneGate`."""

    def __init__(self, *, rate: float, burst: int, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or RealClock()
        self._bucket = TokenBucket(rate=rate, burst=burst, clock=self._clock)

    @property
    def rate(self) -> float:
        return self._bucket.rate

    @property
    def burst(self) -> int:
        return self._bucket.burst

    def time_to_open(self) -> float:
        """Seconds until a new verification may start (0.0 now): until the debt left by the
        verifications already running is paid back."""
        return self._bucket.time_to_next()

    async def spend(self, promoted: Callable[[], Awaitable[None]] | None = None) -> float:
        """Charge one call and wait until it is due, or until `promoted()` completes (the
        reconcile became a real change: it no longer waits like a verification); return the
        time waited."""
        delay = self._bucket.reserve()
        if delay <= 0:
            return 0.0
        if promoted is None:
            await self._clock.sleep(delay)
            return delay
        start = self._clock.now()
        sleep = asyncio.ensure_future(self._clock.sleep(delay))
        raised = asyncio.ensure_future(promoted())
        try:
            await asyncio.wait({sleep, raised}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleep, raised):
                task.cancel()
            await asyncio.gather(sleep, raised, return_exceptions=True)
        return self._clock.now() - start
