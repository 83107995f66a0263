"""The Manager's probes and informer metrics against the local API server: `/readyz` fails while
an informer cannot list or watch and recovers by itself, `/healthz` stays up meanwhile (a
restart would not help), and `aiolbc_informer_*` say which informer and how often."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.envtest import EnvTestServer
from runtime.informer import InformerSettings
from runtime.manager import Manager, ManagerOptions
from runtime.reflector import ReflectorSettings
from runtime.resources import CONFIGMAPS, SERVICES
from tests.support.waiting import eventually

FAST_CLIENT = ClientSettings(retry_initial_delay=0.005, retry_max_delay=0.02,
                             max_retry_after=0.02)
FAST_REFLECTOR = ReflectorSettings(min_watch_timeout=1, backoff_initial=0.02, backoff_max=0.2,
                                   initial_events_timeout=2.0)
FOREVER = 1_000_000  # injected failures that last until cleared


@pytest.fixture
async def manager(envtest: EnvTestServer, tmp_path: Path) -> AsyncIterator[Manager]:
    kubeconfig = envtest.write_kubeconfig(tmp_path / "kubeconfig")
    registry = CollectorRegistry()
    async with await KubeClient.from_kubeconfig(kubeconfig, settings=FAST_CLIENT,
                                                registry=registry) as client:
        manager = Manager(client, registry=registry, options=ManagerOptions(
            metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0",
            informer_settings=InformerSettings(reflector=FAST_REFLECTOR)))
        manager.informer(CONFIGMAPS)
        manager.informer(SERVICES)
        task = asyncio.create_task(manager.run())
        try:
            await eventually(lambda: asyncio.sleep(0, manager.probes.port is not None))
            yield manager
        finally:
            manager.stop()
            await asyncio.wait_for(task, 15)


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.text()


async def _sample(manager: Manager, name: str, resource: str) -> float | None:
    _, text = await _get(f"{manager.metrics_server.url}/metrics")
    for line in text.splitlines():
        if line.startswith(f'{name}{{resource="{resource}"}} '):
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_readyz_fails_while_an_informer_cannot_list_or_watch(
        envtest: EnvTestServer, manager: Manager) -> None:
    probes = manager.probes.url

    async def ready() -> bool:
        return (await _get(f"{probes}/readyz"))[0] == 200

    await eventually(ready, message="never ready")
    assert await _sample(manager, "aiolbc_informer_synced", "configmaps") == 1
    assert await _sample(manager, "aiolbc_informer_healthy", "configmaps") == 1
    assert await _sample(manager, "aiolbc_informer_list_watch_failures_total",
                         "configmaps") == 0

    # ConfigMaps can no longer be listed or watched; their open watch is cut.
    envtest.faults.fail_next(FOREVER, verb="list", resource="configmaps", status=500)
    envtest.faults.fail_next(FOREVER, verb="watch", resource="configmaps", status=500)
    await envtest.close_watches()

    async def not_ready() -> bool:
        return (await _get(f"{probes}/readyz"))[0] == 500

    await eventually(not_ready, message="/readyz stayed ready")
    status, body = await _get(f"{probes}/readyz?verbose")
    assert (status, body.splitlines()[0]) == (500, "[-]informers failed: reason withheld")
    # Nothing a restart would mend: liveness stays up.
    assert await _get(f"{probes}/healthz") == (200, "ok")
    assert await _sample(manager, "aiolbc_informer_healthy", "configmaps") == 0
    assert await _sample(manager, "aiolbc_informer_healthy", "services") == 1
    failures = await _sample(manager, "aiolbc_informer_list_watch_failures_total", "configmaps")
    assert failures is not None
    assert failures >= 1
    # Synced once is synced: the cache is stale, not missing.
    assert await _sample(manager, "aiolbc_informer_synced", "configmaps") == 1

    envtest.faults.clear()
    await eventually(ready, message="/readyz did not recover")
    assert await _sample(manager, "aiolbc_informer_healthy", "configmaps") == 1


async def test_readyz_fails_while_the_api_server_is_unreachable(envtest: EnvTestServer,
                                                                manager: Manager) -> None:
    async def readyz_is(code: int) -> bool:
        return (await _get(f"{manager.probes.url}/readyz"))[0] == code

    await eventually(lambda: readyz_is(200), message="never ready")
    await envtest.pause()
    try:
        await eventually(lambda: readyz_is(500), message="/readyz stayed ready")
        assert (await _get(f"{manager.probes.url}/healthz"))[0] == 200
    finally:
        await envtest.resume()
    await eventually(lambda: readyz_is(200), timeout=30, message="/readyz did not recover")


async def test_readyz_names_nothing_until_the_caches_are_synced(envtest: EnvTestServer,
                                                                tmp_path: Path) -> None:
    # Services can never be listed: the cache never syncs, /readyz never passes.
    envtest.faults.fail_next(FOREVER, resource="services", status=500)
    kubeconfig = envtest.write_kubeconfig(tmp_path / "kubeconfig")
    registry = CollectorRegistry()
    async with await KubeClient.from_kubeconfig(kubeconfig, settings=FAST_CLIENT,
                                                registry=registry) as client:
        manager = Manager(client, registry=registry, options=ManagerOptions(
            metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0",
            informer_settings=InformerSettings(reflector=FAST_REFLECTOR)))
        informer = manager.informer(SERVICES)
        task = asyncio.create_task(manager.run())
        try:
            await eventually(lambda: asyncio.sleep(0, informer.reflector.failures >= 2))
            assert (await _get(f"{manager.probes.url}/readyz"))[0] == 500
            assert await _sample(manager, "aiolbc_informer_synced", "services") == 0
            assert (await _get(f"{manager.probes.url}/healthz"))[0] == 200
        finally:
            manager.stop()
            await asyncio.wait_for(task, 15)
