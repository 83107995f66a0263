"""A Manager given heap settings (as `aiolbc run` gives them): once its caches are synced it
hands the C allocator's free memory back on a schedule (runtime/heap.py), and stops doing so
when it stops. The settings are process-wide: the test restores the collector after."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.heap import HeapSettings
from runtime.manager import Manager, ManagerOptions
from runtime.resources import CONFIGMAPS
from tests.support.waiting import eventually


def scavengers() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "heap-scavenger"]


@pytest.mark.usefixtures("gc_restored")
async def test_the_scavenger_runs_from_the_sync_until_the_manager_stops(
        envtest: EnvTestServer, tmp_path: Path) -> None:
    kubeconfig = envtest.write_kubeconfig(tmp_path / "kubeconfig")
    registry = CollectorRegistry()
    async with await KubeClient.from_kubeconfig(kubeconfig, registry=registry) as client:
        manager = Manager(client, registry=registry, options=ManagerOptions(
            metrics_bind_address="0", health_probe_bind_address="0",
            heap=HeapSettings(trim_interval=0.05)))
        informer = manager.informer(CONFIGMAPS)
        task = asyncio.create_task(manager.run())
        try:
            await eventually(lambda: asyncio.sleep(0, informer.has_synced and bool(scavengers())),
                             message="no scavenger after the sync")
            await asyncio.sleep(0.2)  # several trims: it keeps running
            running = scavengers()
            assert len(running) == 1
            assert not running[0].done()
        finally:
            manager.stop()
            assert await asyncio.wait_for(task, 15) == 0
    assert scavengers() == []
