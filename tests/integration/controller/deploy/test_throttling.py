"""Ten stacks deployed at once through one pool, with 30% of ELBv2 requests throttled."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from prometheus_client import CollectorRegistry

from controller.aws import AWSClientPool, AWSSettings, parse_throttle
from controller.deploy import DeployerSettings, StackDeployer
from controller.standins import AWSFaultProxy, AwsSeed, RequestRecord
from tests.integration.controller.deploy.stacks import (
    alb_stack,
    assert_no_duplicates,
    inventory,
    nlb_stack,
)

# (operation regex, rate per second, burst): the client-side limits under test. Slow enough
# that a stall of the test's event loop (moto shares the process) bunches only a request or
# two at the proxy; at 40/s a 0.15 s stall looked like a burst of six.
CLASSES = {
    "describe": (r"Describe.*", 20.0, 4),
    "mutate": (r"Create.*|Modify.*|Set.*|Delete.*|Add.*|Remove.*", 20.0, 4),
}
THROTTLE = ",".join(f"Elastic Load Balancing v2:{regex}={rate}:{burst}"
                    for regex, rate, burst in CLASSES.values())


# A request reaches the proxy a little after its call took the token: the HTTP round trip,
# the pool's connection queue and, after an injected throttle, the immediate retry.
LATENESS = 0.1


class LoopStalls:
    """The longest time the event loop was late to wake a 10 ms sleeper during the test. The
    proxy shares the loop: requests released on time by the limiter but held by a stall reach it
    together, so a window of the proxy's log can only be judged after widening it by the longest
    stall seen, which the machine's load and not the limiter decides."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            self.longest = max(self.longest, loop.time() - before - 0.01)

    def __enter__(self) -> LoopStalls:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def _worst_excess(times: list[float], rate: float, burst: int, stall: float) -> float:
    """max over windows [t_i, t_j] of (requests in it) - (tokens the bucket could have given
    out in the window, widened by LATENESS and the longest loop stall)."""
    worst = float("-inf")
    for i in range(len(times)):
        for j in range(i, len(times)):
            allowed = burst + rate * (times[j] - times[i] + LATENESS + stall)
            worst = max(worst, (j - i + 1) - allowed)
    return worst


def _calls_of(log: list[RequestRecord], regex: str) -> list[float]:
    # Each call reaches moto exactly once (its injected throttles are answered by the proxy
    # and retried under the same client-side token), so moto-answered requests count calls.
    pattern = re.compile(regex)
    return sorted(r.time for r in log if r.service == "elbv2" and r.source == "upstream"
                  and pattern.fullmatch(r.operation))


async def test_ten_concurrent_stacks_converge_under_throttling_within_client_limits(
        aws_proxy: AWSFaultProxy, aws_seed: AwsSeed, no_retry_backoff: None,
        elbv2: Any) -> None:
    settings = AWSSettings(region=aws_seed.region, endpoint_url=aws_proxy.url,
                           access_key="testing", secret_key="testing",
                           throttle=parse_throttle(THROTTLE))
    stacks = [alb_stack(aws_seed, f"web{i}") if i % 2 else nlb_stack(aws_seed, f"svc{i}")
              for i in range(10)]
    async with AWSClientPool(settings, registry=CollectorRegistry()) as pool:
        deployer = StackDeployer(pool, DeployerSettings(cluster_name="test-cluster"))
        throttling = aws_proxy.inject("Throttling", service="elbv2", rate=0.3)
        with LoopStalls() as stalls:
            results = await asyncio.gather(*(deployer.deploy(s) for s in stacks))
        assert throttling.fired > 20
        log = aws_proxy.log

        inv = inventory(elbv2)
        assert_no_duplicates(inv)
        assert len(inv["lbs"]) == 10
        assert len(inv["tgs"]) == sum(len(s.target_groups) for s in stacks)
        assert all(r.load_balancer is not None for r in results)

        for name, (regex, rate, burst) in CLASSES.items():
            times = _calls_of(log, regex)
            assert len(times) > 3 * burst, name
            assert _worst_excess(times, rate, burst, stalls.longest) <= 1, (name, stalls.longest)
            # The limiter was binding: the class could not finish faster than its rate allows.
            assert times[-1] - times[0] >= (len(times) - burst) / rate * 0.9, name

        aws_proxy.clear_log()
        again = await asyncio.gather(*(deployer.deploy(s) for s in stacks))
        assert [r for r in aws_proxy.log if r.mutating] == []
        assert sum(r.mutating_calls for r in again) == 0
