"""EventRecorder against the local API server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.clock import RealClock
from runtime.envtest import EnvTestServer
from runtime.events import EventRecorder
from runtime.resources import CONFIGMAPS, EVENTS, NODES
from tests.support.waiting import eventually


@pytest.fixture
async def client(envtest_kubeconfig: Path) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(
            envtest_kubeconfig, registry=CollectorRegistry(),
            settings=ClientSettings(retry_initial_delay=0.01, retry_max_delay=0.05,
                                    timeout=2.0)) as c:
        yield c


@pytest.fixture
async def configmap(client: KubeClient) -> dict[str, Any]:
    return await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "targets"},
                                            "data": {"a": "1"}}, "default")


class RetryCountingClock(RealClock):
    """Real time that counts the recorder's waits between attempts."""

    def __init__(self) -> None:
        self.sleeps = 0

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        await super().sleep(seconds)


def recorder_for(client: KubeClient, **kwargs: Any) -> EventRecorder:
    return EventRecorder(client, component="aiolbc", host="node-a",
                         registry=CollectorRegistry(), **kwargs)


async def events(client: KubeClient, namespace: str = "default") -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, namespace)
    return sorted(listed["items"], key=lambda e: (e["reason"], e["message"]))


async def test_repeated_event_is_aggregated_into_one_with_count(
        client: KubeClient, configmap: dict[str, Any]) -> None:
    async with recorder_for(client) as recorder:
        recorder.event(configmap, "Normal", "Synced", "targets recorded")
        await asyncio.sleep(0.05)
        recorder.event(configmap, "Normal", "Synced", "targets recorded")
    (event,) = await events(client)
    assert event["count"] == 2
    assert event["type"] == "Normal"
    assert event["metadata"]["name"].startswith("targets.")
    assert event["involvedObject"] == {
        "kind": "ConfigMap", "apiVersion": "v1", "name": "targets", "namespace": "default",
        "uid": configmap["metadata"]["uid"],
        "resourceVersion": configmap["metadata"]["resourceVersion"]}
    assert event["source"] == {"component": "aiolbc", "host": "node-a"}
    assert event["firstTimestamp"] <= event["lastTimestamp"]


async def test_different_reasons_are_separate_events_and_warnings_are_kept(
        client: KubeClient, configmap: dict[str, Any]) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    async with recorder_for(client) as recorder:
        recorder.event(configmap, "Normal", "Synced", "ok")
        recorder.event(configmap, "Warning", "FailedDeploy", "AccessDenied on CreateTargetGroup")
        recorder.event(node, "Warning", "NodeNotReady", "not ready", resource=NODES)
    got = [(e["reason"], e["type"], e["count"]) for e in await events(client)]
    assert got == [("FailedDeploy", "Warning", 1), ("NodeNotReady", "Warning", 1),
                   ("Synced", "Normal", 1)]
    # The cluster-scoped Node's event went to "default" (listed above), not elsewhere.
    everywhere = await client.list(EVENTS)
    assert len(everywhere["items"]) == 3


async def test_recording_does_not_block_while_the_server_is_down_and_stop_flushes(
        client: KubeClient, configmap: dict[str, Any], envtest: EnvTestServer) -> None:
    clock = RetryCountingClock()
    recorder = recorder_for(client, retry_delay=0.05, max_attempts=100, clock=clock)
    recorder.start()
    await envtest.pause()
    start = time.monotonic()
    for i in range(50):
        recorder.event(configmap, "Normal", f"Reason{i}", "m")
    elapsed = time.monotonic() - start
    assert elapsed < 0.05, f"recording took {elapsed:.3f}s"
    # The writer keeps retrying against the dead server.
    await eventually(lambda: asyncio.sleep(0, clock.sleeps >= 3))
    await envtest.resume()
    await recorder.stop(timeout=10.0)
    assert len(await events(client)) == 25  # the spam filter's burst for one object


async def test_stop_flushes_everything_buffered(
        client: KubeClient, configmap: dict[str, Any]) -> None:
    recorder = recorder_for(client, spam_filter=False)
    recorder.start()
    for i in range(40):
        recorder.event(configmap, "Normal", f"Reason{i}", "m")
    await recorder.stop()
    assert len(await events(client)) == 40
