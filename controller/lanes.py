"""The controllers' queues: one place that turns the verification settings (checkpoints on,
pace, burst, maximum wait) into a Controller whose LOW lane is paced accordingly."""

from __future__ import annotations

from runtime.controller import Controller, Reconciler
from runtime.handlers import Request
from runtime.manager import Manager
from runtime.ratelimit import ItemExponentialFailureRateLimiter
from runtime.workqueue import PriorityQueue


def paced_controller(manager: Manager, name: str, reconciler: Reconciler, *,
                     max_concurrent_reconciles: int, low_lane_qps: float | None,
                     verify_burst: int, verify_max_wait: float | None,
                     max_backoff: float = 1000.0) -> Controller:
    """`low_lane_qps=None` leaves the LOW lane unpaced (nothing is ever deferred)."""
    queue: PriorityQueue[Request] = PriorityQueue(
        name, clock=manager.clock, registry=manager.registry,
        rate_limiter=ItemExponentialFailureRateLimiter(max_delay=max_backoff),
        low_priority_qps=low_lane_qps, low_priority_burst=verify_burst,
        low_priority_max_wait=verify_max_wait)
    return Controller(name, reconciler, max_concurrent_reconciles=max_concurrent_reconciles,
                      queue=queue, clock=manager.clock, registry=manager.registry)
