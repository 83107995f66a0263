"""Informer sync vs kubernetes_asyncio's typed list, on N Services in an in-process API server.

Usage: python tests/bench/informer.py [--quick] [--n N]

Creates N Services (default 10,000; --quick: 1,000), then measures
- the time for a SharedInformer to sync them (streaming list, as by default) and, separately,
  with streaming turned off (paginated list + watch);
- the time for kubernetes_asyncio's typed `list_service_for_all_namespaces` of the same objects;
- peak RSS growth while the informer syncs: `resource.getrusage(RUSAGE_SELF).ru_maxrss` after
  minus before. The server runs in this process, so its serialization buffers count too.

The last stdout line is one JSON object: sync_10k_s (the sync time, whatever N),
typed_list_10k_s, rss_mb, n, and extras.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.informer import InformerSettings, SharedInformer
from runtime.reflector import ReflectorSettings
from runtime.resources import NAMESPACES, SERVICES


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _service(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"svc-{i}", "labels": {"app": f"app-{i % 50}", "bench": "1"},
                         "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type":
                                         "external"}},
            "spec": {"type": "ClusterIP", "selector": {"app": f"app-{i % 50}"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                "protocol": "TCP"},
                               {"name": "https", "port": 443, "targetPort": 8443,
                                "protocol": "TCP"}]}}


async def _populate(client: KubeClient, n: int, namespaces: int = 10) -> None:
    for j in range(namespaces):
        await client.create(NAMESPACES, {"metadata": {"name": f"bench-{j}"}})
    semaphore = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with semaphore:
            await client.create(SERVICES, _service(i), f"bench-{i % namespaces}")

    await asyncio.gather(*(one(i) for i in range(n)))


async def _sync_time(client: KubeClient, *, streaming: bool) -> tuple[float, int]:
    informer = SharedInformer(client, SERVICES, settings=InformerSettings(
        reflector=ReflectorSettings(streaming_list=streaming)))
    started = time.perf_counter()
    informer.start()
    try:
        if not await informer.wait_for_sync(timeout=600):
            raise RuntimeError("informer did not sync")
        return time.perf_counter() - started, len(informer.store)
    finally:
        await informer.stop()


async def _typed_list_time(kubeconfig: Path) -> tuple[float, int]:
    configuration = type.__call__(k8s_client.Configuration)
    await k8s_config.load_kube_config(config_file=str(kubeconfig),
                                      client_configuration=configuration)
    async with k8s_client.ApiClient(configuration) as api_client:
        v1 = k8s_client.CoreV1Api(api_client)
        started = time.perf_counter()
        result = await v1.list_service_for_all_namespaces()
        return time.perf_counter() - started, len(result.items)


async def main(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with EnvTestServer(port=0) as server:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with await KubeClient.from_kubeconfig(kubeconfig,
                                                        registry=CollectorRegistry()) as client:
                started = time.perf_counter()
                await _populate(client, n)
                populate_s = time.perf_counter() - started

                rss_before = _maxrss_mb()
                sync_s, synced = await _sync_time(client, streaming=True)
                rss_mb = _maxrss_mb() - rss_before
                sync_list_s, synced_list = await _sync_time(client, streaming=False)
            typed_s, typed_n = await _typed_list_time(kubeconfig)
    if not synced == synced_list == typed_n == n:
        raise RuntimeError(f"object counts differ: {synced}, {synced_list}, {typed_n}, {n}")
    return {"sync_10k_s": round(sync_s, 3), "typed_list_10k_s": round(typed_s, 3),
            "rss_mb": round(rss_mb, 1), "n": n,
            "sync_list_watch_s": round(sync_list_s, 3), "populate_s": round(populate_s, 2),
            "rss_method": "ru_maxrss delta during the streaming sync",
            "peak_rss_mb": round(_maxrss_mb(), 1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 objects instead of 10,000")
    parser.add_argument("--n", type=int, default=None, help="number of Services")
    args = parser.parse_args()
    count = args.n if args.n is not None else (1000 if args.quick else 10_000)
    if count < 1:
        parser.error("--n must be at least 1")
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(main(count))
    print(f"informer sync of {count} Services: {result['sync_10k_s']} s "
          f"(list+watch {result['sync_list_watch_s']} s); typed list "
          f"{result['typed_list_10k_s']} s", file=sys.stderr)
    print(json.dumps(result))
