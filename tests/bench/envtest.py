"""Benchmark of the local API server: concurrent creates, a full list, watch fan-out latency.

Runs the server as `python -m runtime.envtest` in its own process (as the demo does) and drives
it over HTTP from this one. `--quick`: 1,000 Services and 10 watchers; default 10,000 and 50.
The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

NS = "/api/v1/namespaces/default/services"


async def _start_server(workdir: Path) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime.envtest", "--port", "0", "--kubeconfig",
        str(workdir / "kubeconfig"), "--history-size", "50000",
        stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
    return proc, url


def _service(i: int) -> dict[str, object]:
    return {"metadata": {"name": f"svc-{i:05d}", "labels": {"app": f"a{i % 10}"}},
            "spec": {"selector": {"app": f"a{i % 10}"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}


async def _create_all(session: aiohttp.ClientSession, n: int, concurrency: int) -> float:
    sem = asyncio.Semaphore(concurrency)

    async def create(i: int) -> None:
        async with sem, session.post(NS, json=_service(i)) as resp:
            if resp.status != 201:
                raise RuntimeError(f"create failed: {resp.status} {await resp.text()}")
            await resp.read()

    started = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(n)))
    return time.perf_counter() - started


async def _list_all(session: aiohttp.ClientSession, n: int) -> tuple[float, str]:
    started = time.perf_counter()
    async with session.get(NS) as resp:
        body = json.loads(await resp.read())
    elapsed = time.perf_counter() - started
    if len(body["items"]) != n:
        raise RuntimeError(f"listed {len(body['items'])} of {n}")
    return elapsed, body["metadata"]["resourceVersion"]


async def _fanout(session: aiohttp.ClientSession, url: str, watchers: int, rv: str,
                  rounds: int) -> list[float]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base_url=url, connector=connector) as watch_session:
        streams = [await watch_session.get(NS, params={"watch": "1", "resourceVersion": rv},
                                           timeout=aiohttp.ClientTimeout(total=None))
                   for _ in range(watchers)]
        latencies: list[float] = []
        for r in range(rounds):
            patch = {"metadata": {"annotations": {"round": str(r)}}}
            started = time.perf_counter()
            receipts = [asyncio.create_task(_next_line(s)) for s in streams]
            async with session.patch(f"{NS}/svc-00000", json=patch, headers={
                    "Content-Type": "application/merge-patch+json"}) as resp:
                await resp.read()
            for done in await asyncio.gather(*receipts):
                latencies.append((done - started) * 1000)
        for stream in streams:
            stream.close()
    return latencies


async def _next_line(resp: aiohttp.ClientResponse) -> float:
    line = await asyncio.wait_for(resp.content.readline(), 30)
    if not line:
        raise RuntimeError("watch ended early")
    return time.perf_counter()


def _p99(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[98]


async def main(quick: bool) -> dict[str, object]:
    n, watchers = (1_000, 10) if quick else (10_000, 50)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = await _start_server(Path(tmp))
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                create_s = await _create_all(session, n, concurrency=64)
                list_s, rv = await _list_all(session, n)
                latencies = await _fanout(session, url, watchers, rv, rounds=20)
        finally:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
    result: dict[str, object] = {
        "n": n, "watchers": watchers,
        "create_per_s": round(n / create_s, 1),
        "list_10k_s": round(list_s * (10_000 / n), 4),
        "list_s": round(list_s, 4),
        "watch_fanout_p99_ms": round(_p99(latencies), 2),
        "watch_fanout_median_ms": round(statistics.median(latencies), 2),
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small run for CI (seconds)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.quick))))
