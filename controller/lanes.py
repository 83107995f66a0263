"""The controllers' queues: one place that turns the verification settings (checkpoints on,
pace, burst, maximum wait, the shared AWS-call budget) into a Controller whose LOW lane is
paced accordingly."""

from __future__ import annotations

from runtime.controller import Controller, Reconciler
from runtime.handlers import Request
from runtime.manager import Manager
from runtime.ratelimit import ItemExponentialFailureRateLimiter
from runtime.workqueue import LaneGate, PriorityQueue


def paced_controller(manager: Manager, name: str, reconciler: Reconciler, *,
                     max_concurrent_reconciles: int, low_lane_qps: float | None,
                     verify_burst: int, verify_max_wait: float | None,
                     max_backoff: float = 1000.0, gate: LaneGate | None = None) -> Controller:
    """`low_lane_qps=None` leaves the LOW lane unpaced (nothing is ever deferred; upstream's
    behaviour). A paced lane also waits for `gate` (the AWS pool's verification budget, shared
    by every controller) and never holds more than all workers but one, so a real change always
    finds a worker even while verifications wait for the budget."""
    paced = low_lane_qps is not None
    queue: PriorityQueue[Request] = PriorityQueue(
        name, clock=manager.clock, registry=manager.registry,
        rate_limiter=ItemExponentialFailureRateLimiter(max_delay=max_backoff),
        low_priority_qps=low_lane_qps, low_priority_burst=verify_burst,
        low_priority_max_wait=verify_max_wait,
        low_priority_gate=gate if paced else None,
        low_priority_max_in_flight=max(1, max_concurrent_reconciles - 1) if paced else None)
    return Controller(name, reconciler, max_concurrent_reconciles=max_concurrent_reconciles,
                      queue=queue, clock=manager.clock, registry=manager.registry)
