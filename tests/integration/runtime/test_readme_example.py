"""The example controller in runtime/README.md, run as written against the local API server,
through a full Manager: it converges, serves metrics and probes, and stops cleanly."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.manager import Manager, ManagerOptions
from runtime.resources import CONFIGMAPS
from tests.support.paths import REPO

README = REPO / "runtime" / "README.md"


def _example() -> ModuleType:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "runtime/README.md has no python example"
    module = ModuleType("readme_example")
    exec(compile(blocks[0], str(README), "exec"), module.__dict__)
    return module


async def _eventually(check: Any, timeout: float = 10.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.text()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_readme_controller_converges_and_serves_metrics(
        envtest: EnvTestServer, envtest_kubeconfig: Path) -> None:
    example = _example()
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig) as client:
        await client.create(CONFIGMAPS, {"metadata": {"name": "before", "labels": {
            example.LABEL: "red"}}}, "default")
        manager = Manager(client, options=ManagerOptions(
            metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0"))
        example.build(manager)
        await envtest.pause()  # the caches cannot sync yet
        running = asyncio.create_task(manager.run())
        await _eventually(lambda: asyncio.sleep(0, manager.probes.port is not None))
        probes = f"http://127.0.0.1:{manager.probes.port}"
        status, body = await _get(probes + "/readyz?verbose")
        assert status == 500
        assert "[-]informers failed" in body
        assert (await _get(probes + "/healthz"))[0] == 200
        await envtest.resume()
        await _eventually(lambda: _ok(probes + "/readyz"))

        async def owned_by(name: str, team: str) -> bool:
            cm = await client.get(CONFIGMAPS, name, "default")
            return bool((cm["metadata"].get("annotations") or {}).get(example.ANNOTATION) == team)

        await _eventually(lambda: owned_by("before", "red"))
        await client.create(CONFIGMAPS, {"metadata": {"name": "after", "labels": {
            example.LABEL: "blue"}}}, "default")
        await _eventually(lambda: owned_by("after", "blue"))
        await client.patch(CONFIGMAPS, "after", {"metadata": {"labels": {example.LABEL: "green"}}},
                           "default")
        await _eventually(lambda: owned_by("after", "green"))

        metrics_url = f"http://127.0.0.1:{manager.metrics_server.port}/metrics"
        samples = _samples((await _get(metrics_url))[1])
        ctrl = (("controller", "configmap-mirror"),)
        assert samples[("controller_runtime_reconcile_total",
                        (("controller", "configmap-mirror"), ("result", "success")))] >= 3
        assert samples[("controller_runtime_max_concurrent_reconciles", ctrl)] == 2
        assert ("controller_runtime_reconcile_time_seconds_count", ctrl) in samples
        assert any(name == "workqueue_adds_total" and dict(labels).get("name") ==
                   "configmap-mirror" for name, labels in samples)
        assert any(name == "rest_client_requests_total" and dict(labels).get("method") ==
                   "PATCH" for name, labels in samples)

        manager.stop()
        assert await asyncio.wait_for(running, 10) == 0


async def _ok(url: str) -> bool:
    return (await _get(url))[0] == 200
