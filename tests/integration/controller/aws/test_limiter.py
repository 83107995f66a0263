"""The client-side limiter keeps an operation class within its rate, measured at the proxy."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from controller.aws import ELBV2, AWSClientPool, AWSSettings, parse_throttle
from controller.standins import AWSFaultProxy


async def test_describe_class_is_held_to_its_rate(aws_proxy: AWSFaultProxy) -> None:
    registry = CollectorRegistry()
    settings = AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url,
                           throttle=parse_throttle("Elastic Load Balancing v2:^Describe.*=20:5"))
    async with AWSClientPool(settings, registry=registry) as pool:
        await pool.raw_client("elbv2")  # client creation is not part of the measurement
        start = time.monotonic()
        await asyncio.gather(*(pool.call("elbv2", "DescribeLoadBalancers") for _ in range(60)))
        elapsed = time.monotonic() - start

    # Only the lower bound is a property of the limiter: a loaded machine can always make the
    # run slower. That the limiter does not hold calls longer than the rate requires is read
    # from its own wait accounting below, which the machine's load does not change.
    assert elapsed >= (60 - 5) / 20 - 0.05
    times = sorted(r.time for r in aws_proxy.records(operation="DescribeLoadBalancers"))
    assert len(times) == 60
    # The limiter releases the k-th call (k >= burst) no sooner than (k - burst + 1) / rate
    # after the start; the network can only delay an arrival, never advance it.
    for k, t in enumerate(times[5:], start=5):
        assert t - start >= (k - 5 + 1) / 20 - 0.01, f"request {k} at {t - start:.3f} s"
    # Per one-second window, seen at the proxy: the burst plus one second of refill, with room
    # for arrivals bunched by event-loop jitter.
    for i, t in enumerate(times):
        in_window = sum(1 for u in times[i:] if u < t + 1.0)
        assert in_window <= 5 + 20 + 5, f"{in_window} requests within 1 s from {t - start:.2f}"
    waits = registry.get_sample_value("aws_api_throttle_wait_seconds_sum", {
        "service": ELBV2, "operation": "DescribeLoadBalancers"})
    # If all 60 calls reached the limiter at once, the 55 delayed ones would wait k/20 s for
    # k = 1..55. Calls reach it later on a slow machine (each task builds its request first), and
    # a later arrival waits less, so that sum is an upper bound: the limiter never holds a call
    # longer than the rate requires. The lower bound is the wall time asserted above.
    assert waits is not None
    assert 0 < waits <= sum(k / 20 for k in range(1, 56)) * 1.05
