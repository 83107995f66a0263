"""The verification budget: paced LOW-lane reconciles of several controllers share one rate of
AWS calls, and a real change is not held back by them (real controllers, queues, pool, moto)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from controller.aws import ELBV2, AWSClientPool, AWSSettings, parse_throttle
from controller.reconcilers import LaneSettings, Workers, controller_options
from controller.standins import AWSFaultProxy
from runtime.client import KubeClient
from runtime.controller import Controller
from runtime.manager import Manager
from runtime.reconcile import LOW, NORMAL, Request, Result, reconcile_priority
from runtime.workqueue import PriorityQueue
from tests.support.waiting import eventually

CALLS_PER_RECONCILE = 3
RATE, BURST = 10.0, 3


class Verifier:
    """Makes three Describe calls per reconcile, as a small verification would."""

    def __init__(self, pool: AWSClientPool, log: list[tuple[str, int, float]]) -> None:
        self.pool, self.log = pool, log

    async def reconcile(self, request: Request) -> Result:
        for _ in range(CALLS_PER_RECONCILE):
            await self.pool.call("elbv2", "DescribeLoadBalancers")
            self.log.append((request.key, reconcile_priority(), time.monotonic()))
        return Result()


def controller(manager: Manager, name: str, pool: AWSClientPool,
               log: list[tuple[str, int, float]]) -> Controller:
    # As the three controllers build theirs; the reconcile pace is high, so that the budget is
    # what limits.
    options = controller_options(LaneSettings(verify_qps=50.0, verify_burst=5,
                                              verify_max_wait=None),
                                 Workers(max_concurrent_reconciles=3),
                                 gate=pool.verification_budget)
    queue: PriorityQueue[Request] = PriorityQueue(name, clock=manager.clock,
                                                  registry=manager.registry,
                                                  options=options.queue)
    return Controller(name, Verifier(pool, log), max_concurrent_reconciles=3, queue=queue,
                      clock=manager.clock, registry=manager.registry)


async def test_low_lanes_of_two_controllers_share_the_budget_and_a_change_goes_first(
        aws_proxy: AWSFaultProxy, no_retry_backoff: None, envtest_kubeconfig: Path) -> None:
    registry = CollectorRegistry()
    settings = AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url,
                           access_key="testing", secret_key="testing",
                           throttle=parse_throttle("Elastic Load Balancing v2:^Describe.*=100:100"),
                           verify_calls_qps=RATE, verify_calls_burst=BURST)
    log: list[tuple[str, int, float]] = []
    async with AWSClientPool(settings, registry=registry) as pool, \
            await KubeClient.from_kubeconfig(envtest_kubeconfig) as client:
        await pool.call("elbv2", "DescribeLoadBalancers")  # the client exists before timing
        manager = Manager(client, registry=registry)
        controllers = [controller(manager, f"c{i}", pool, log) for i in range(2)]
        for c in controllers:
            for j in range(6):
                c.enqueue(Request("", f"{c.name}-{j}"), priority=LOW)
            c.start()
        start = time.monotonic()
        # The verifications are under way: the burst is spent, 2+ s of them still owed.
        await eventually(lambda: asyncio.sleep(0, sum(p == LOW for _, p, _ in log) > 2 * BURST),
                         interval=0.01)
        controllers[0].enqueue(Request("", "change"), priority=NORMAL)
        changed_at = time.monotonic()
        while sum(1 for _, p, _ in log if p == LOW) < 12 * CALLS_PER_RECONCILE:
            await asyncio.sleep(0.05)
            assert time.monotonic() - start < 30, "verifications did not finish"
        for c in controllers:
            await c.stop()

    low = sorted(t - start for _, p, t in log if p == LOW)
    # 36 calls at 10/s with a burst of 3, for both controllers together: the k-th call (from 0)
    # is not made before (k + 1 - burst) / rate, and all of them not much later either.
    for k, t in enumerate(low):
        assert t >= (k + 1 - BURST) / RATE - 0.05, (k, t)
    assert low[-1] <= (len(low) - BURST) / RATE + 2.0
    change = [t - changed_at for key, p, t in log if key == "change"]
    assert len(change) == CALLS_PER_RECONCILE
    assert max(change) < 1.0  # not behind the 2+ s of verifications still owed to the budget
    assert registry.get_sample_value("aiolbc_aws_verification_calls_total", {
        "service": ELBV2, "operation": "DescribeLoadBalancers"}) == 12 * CALLS_PER_RECONCILE


async def test_a_real_change_promotes_its_keys_verification_in_flight(
        aws_proxy: AWSFaultProxy, no_retry_backoff: None, envtest_kubeconfig: Path) -> None:
    # The budget lets one call through, then owes 100 s: a verification of "k" is started and
    # stuck. A real change to "k" cannot be handed to a second worker while "k" runs; it
    # promotes the running reconcile instead, whose remaining calls no longer wait.
    registry = CollectorRegistry()
    settings = AWSSettings(region="us-west-2", endpoint_url=aws_proxy.url,
                           access_key="testing", secret_key="testing",
                           verify_calls_qps=0.01, verify_calls_burst=1)
    log: list[tuple[str, int, float]] = []
    async with AWSClientPool(settings, registry=registry) as pool, \
            await KubeClient.from_kubeconfig(envtest_kubeconfig) as client:
        manager = Manager(client, registry=registry)
        c = controller(manager, "c", pool, log)
        c.enqueue(Request("", "k"), priority=LOW)
        c.start()
        await eventually(lambda: asyncio.sleep(0, log))
        await asyncio.sleep(0.2)
        assert [p for _, p, _ in log] == [LOW]  # the second call waits for the budget
        changed_at = time.monotonic()
        c.enqueue(Request("", "k"), priority=NORMAL)
        while len(log) < 2 * CALLS_PER_RECONCILE:
            await asyncio.sleep(0.01)
            assert time.monotonic() - changed_at < 5, "the promoted reconcile still waits"
        await c.stop()
    # The promoted verification finishes at NORMAL, then the change's own reconcile runs.
    assert [p for _, p, _ in log] == [LOW, *[NORMAL] * (2 * CALLS_PER_RECONCILE - 1)]
