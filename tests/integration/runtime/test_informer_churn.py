"""Informers under a randomized churn with an unreliable server.

2,000 creates, updates and deletes over three namespaces, while the server closes watches,
compacts its history (410 on re-watch), answers 429 and 500 storms and pauses. Afterwards every
informer's cache must equal a fresh list of its scope, and every handler must have seen a
consistent story per key: no add of a present key, no update or delete of an absent one, and a
final view equal to the cache (so no delete was lost: missed ones arrive as tombstones).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from runtime.client import KubeClient
from runtime.envtest import EnvTestServer
from runtime.informer import InformerSettings, SharedInformerFactory
from runtime.resources import CONFIGMAPS, NAMESPACES
from tests.integration.runtime.test_informer import (
    FAST_CLIENT,
    FAST_REFLECTOR,
    View,
    configmap,
    converged,
)

NAMESPACES_USED = ("churn-a", "churn-b", "churn-c")
WORKERS = 4
ROUNDS = 20
OPS_PER_ROUND = 100


@pytest.fixture
async def clients(envtest_kubeconfig: Path) -> AsyncIterator[tuple[KubeClient, KubeClient]]:
    async with (
        await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                         registry=CollectorRegistry()) as informer_client,
        await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST_CLIENT,
                                         registry=CollectorRegistry()) as writer,
    ):
        yield informer_client, writer


class ChurnWorker:
    """Random operations on this worker's own names (no cross-worker conflicts)."""

    def __init__(self, writer: KubeClient, worker: int, rng: random.Random) -> None:
        self.writer = writer
        self.worker = worker
        self.rng = rng
        self.live: dict[str, str] = {}  # name -> namespace
        self.serial = 0
        self.done = 0

    async def run(self, ops: int) -> None:
        rng, live = self.rng, self.live
        for _ in range(ops):
            choice = rng.random()
            if len(live) < 8 or choice < 0.4:
                self.serial += 1
                name = f"w{self.worker}-{self.serial}"
                namespace = rng.choice(NAMESPACES_USED)
                await self.writer.create(CONFIGMAPS, configmap(
                    name, namespace, tier=rng.choice(("gold", "silver"))))
                live[name] = namespace
            elif choice < 0.75:
                name = rng.choice(sorted(live))
                await self.writer.patch(CONFIGMAPS, name, {
                    "metadata": {"labels": {"tier": rng.choice(("gold", "silver"))}},
                    "data": {"v": str(rng.random())}}, live[name])
            else:
                name = rng.choice(sorted(live))
                await self.writer.delete(CONFIGMAPS, name, live.pop(name))
            self.done += 1


async def disrupt(server: EnvTestServer, kind: str) -> None:
    """One server misbehaviour; fault rules stay armed into the next round of writes."""
    if kind == "close":
        await server.close_watches()
    elif kind == "compact":
        server.compact()
        await server.close_watches()  # the re-watch now meets 410 Gone
    elif kind == "429":
        server.faults.fail_next(12, verb="watch", status=429, retry_after=1)
        await server.close_watches()
    elif kind == "500":
        server.faults.fail_next(6, verb="list", status=500)
        server.faults.fail_next(4, verb="watch", status=500)
        server.compact()
        await server.close_watches()
    else:
        await server.pause()  # connections refused and dropped
        await asyncio.sleep(0.1)
        await server.resume()


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "list-watch"])
async def test_informers_converge_through_churn_and_faults(
        envtest: EnvTestServer, clients: tuple[KubeClient, KubeClient], streaming: bool) -> None:
    informer_client, writer = clients
    for namespace in NAMESPACES_USED:
        await writer.create(NAMESPACES, {"metadata": {"name": namespace}})
    rng = random.Random(20261129)

    reflector = dataclasses.replace(FAST_REFLECTOR, streaming_list=streaming, page_size=50)
    factory = SharedInformerFactory(informer_client,
                                    settings=InformerSettings(reflector=reflector))
    everything = factory.informer(CONFIGMAPS)
    one_namespace = factory.informer(CONFIGMAPS, namespace="churn-b")
    gold = factory.informer(CONFIGMAPS, label_selector="tier=gold")
    views = {inf.name + str(inf.label_selector): View() for inf in factory.informers}
    for inf in factory.informers:
        inf.add_handler(views[inf.name + str(inf.label_selector)])
    factory.start()
    try:
        assert await factory.wait_for_sync(timeout=5)
        workers = [ChurnWorker(writer, w, random.Random(rng.random())) for w in range(WORKERS)]
        kinds = ("close", "compact", "429", "500", "pause")
        for round_ in range(ROUNDS):
            await asyncio.gather(*(w.run(OPS_PER_ROUND // WORKERS) for w in workers))
            await disrupt(envtest, kinds[round_ % len(kinds)])
        envtest.faults.clear()
        assert sum(w.done for w in workers) == ROUNDS * OPS_PER_ROUND == 2000

        # A last outage that certainly loses deletes: watches refused, objects deleted,
        # history compacted. The relist must turn the missed deletes into tombstones.
        envtest.faults.fail_next(10_000, verb="watch", status=429)
        await envtest.close_watches()
        victims = (await writer.list(CONFIGMAPS, "churn-b"))["items"][:3]
        for obj in victims:
            await writer.delete(CONFIGMAPS, obj["metadata"]["name"], "churn-b")
        envtest.compact()
        envtest.faults.clear()

        for inf in factory.informers:
            await converged(writer, inf, views[inf.name + str(inf.label_selector)],
                            timeout=15)
        for key, view in views.items():
            assert view.violations == [], key
        assert len(victims) == 3
        assert views[everything.name + "None"].tombstones >= 3
        assert views[one_namespace.name + "None"].tombstones >= 3
        for inf in (everything, one_namespace, gold):
            assert inf.reflector.lists + inf.reflector.streamed_lists >= 2  # relisted
            assert inf.reflector.streaming_supported is streaming
    finally:
        await factory.stop()
