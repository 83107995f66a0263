"""Backoff that cannot be bypassed: a deploy error whose text changes every time (a request id in
it) is retried with the per-key exponential backoff, and the status condition, which carries the
stable part of the message, is written once — so our own status writes wake nobody."""

from __future__ import annotations

import asyncio
import uuid

from controller.service.status import CONDITION_TYPE
from controller.standins import AWSFaultProxy
from runtime.resources import SERVICES
from tests.support.cluster import Cluster
from tests.support.objects import condition
from tests.support.waiting import eventually


async def test_changing_error_text_does_not_defeat_backoff(cluster: Cluster,
                                                           aws_proxy: AWSFaultProxy) -> None:
    def fault() -> object:
        return aws_proxy.inject("InternalFailure", operation="CreateLoadBalancer",
                                message=f"try again (RequestId: {uuid.uuid4()})")

    current = fault()

    async def rotate() -> None:
        nonlocal current
        while True:
            await asyncio.sleep(0.05)
            aws_proxy.remove(current)  # type: ignore[arg-type]
            current = fault()

    rotating = asyncio.create_task(rotate())
    try:
        await cluster.nlb_service("web")
        await cluster.start()
        await eventually(lambda: _failed(cluster))
        await asyncio.sleep(0.5)  # the first retries; the cache has seen our condition write
        start = cluster.reconciles()
        cluster.server.clear_request_log()
        await asyncio.sleep(4.0)
        runs = cluster.reconciles() - start
        status_writes = [r for r in cluster.server.request_log
                         if r.verb == "patch" and r.path.endswith("/web/status")]
    finally:
        rotating.cancel()
        await asyncio.gather(rotating, return_exceptions=True)
    # Exponential backoff from 5 ms: from 0.5 s on, retries come at about 0.64, 1.3, 2.6 s, ...
    # later the longer each failing run takes; where the window falls in the sequence moves the
    # count by a couple on a loaded machine. Unbounded, a status write per failure woke the
    # Service hundreds of times.
    assert 1 <= runs <= 10, runs
    assert status_writes == []  # the condition's message did not change
    cond = condition(await cluster.get(SERVICES, "web"), CONDITION_TYPE)
    assert cond is not None
    assert cond["message"] == "CreateLoadBalancer: InternalFailure: try again (…)"


async def _failed(cluster: Cluster) -> bool:
    cond = condition(await cluster.get(SERVICES, "web"), CONDITION_TYPE)
    return cond is not None and cond["status"] == "False"
