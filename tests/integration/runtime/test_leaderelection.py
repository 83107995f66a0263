"""Leader election against the local API server, with real (short) timings.

Each elector has its own KubeClient; the one that gets cut off talks through a small proxy in
this module that can stop answering, so only that replica loses the API server while both still
share one Lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.envtest import EnvTestServer
from runtime.leaderelection import LeaderElectionLost, LeaderElector
from runtime.resources import LEASES

NS = "kube-system"
LEASE = "aiolbc-leader"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.0, 0.2
MAX_RETRY_WAIT = RETRY_PERIOD * 2.2  # jittered acquire period
SLACK = 0.3  # scheduling and request latency on a loaded 2-core machine


class CutOffProxy:
    """Forwards HTTP to the API server until `cut_off` is set; then requests hang unanswered,
    as over a partitioned network."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.cut_off = False
        self._closing = asyncio.Event()
        self._upstream_http: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        self._upstream_http = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._upstream_http is not None:
            await self._upstream_http.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if self.cut_off:
            await self._closing.wait()
            raise web.HTTPServiceUnavailable
        assert self._upstream_http is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length")}
        async with self._upstream_http.request(request.method, self.upstream + request.rel_url.path,
                                         params=request.rel_url.query, data=body,
                                         headers=headers) as upstream:
            payload = await upstream.read()
            return web.Response(body=payload, status=upstream.status, headers={
                "Content-Type": upstream.headers.get("Content-Type", "application/json")})


def kubeconfig_for(server: EnvTestServer, url: str, path: Path) -> Path:
    server.write_kubeconfig(path)
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["server"] = url
    path.write_text(yaml.safe_dump(config))
    return path


Intervals = list[tuple[str, float, float]]


def leading(who: str, intervals: Intervals,
            started: set[str] | None = None) -> Callable[[asyncio.Event], Awaitable[None]]:
    """The guarded work: records when it ran. `is_leader` turns true while the winning request
    is answered, a moment before the work starts; a test that stops the elector and then
    expects an interval waits for `who in started` first (stopped in that moment, the elector
    hands the lease back without running the work at all)."""
    async def work(stop: asyncio.Event) -> None:
        start = time.monotonic()
        if started is not None:
            started.add(who)
        try:
            await stop.wait()
        finally:
            intervals.append((who, start, time.monotonic()))
    return work


class Cluster:
    """Creates clients (direct or through a proxy) and electors sharing one Lease."""

    def __init__(self, server: EnvTestServer, tmp: Path) -> None:
        self.server = server
        self.tmp = tmp
        self.clients: list[KubeClient] = []
        self.proxies: list[CutOffProxy] = []

    async def client(self, *, proxied: bool = False) -> tuple[KubeClient, CutOffProxy | None]:
        proxy = None
        url = self.server.url
        if proxied:
            proxy = CutOffProxy(self.server.url)
            await proxy.start()
            self.proxies.append(proxy)
            url = proxy.url
        path = kubeconfig_for(self.server, url, self.tmp / f"kubeconfig-{len(self.clients)}")
        client = await KubeClient.from_kubeconfig(
            path, settings=ClientSettings(retry_initial_delay=0.01, retry_max_delay=0.05),
            registry=CollectorRegistry())
        self.clients.append(client)
        return client, proxy

    def elector(self, client: KubeClient, identity: str, **kwargs: Any) -> LeaderElector:
        return LeaderElector(client, name=LEASE, namespace=NS, identity=identity,
                             lease_duration=LEASE_DURATION, renew_deadline=RENEW_DEADLINE,
                             retry_period=RETRY_PERIOD, **kwargs)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        for proxy in self.proxies:
            await proxy.stop()


@pytest.fixture
async def cluster(envtest: EnvTestServer, tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(envtest, tmp_path)
    yield c
    await c.close()


async def wait_for(predicate: Callable[[], bool], timeout: float) -> float:
    """Poll until `predicate()`; returns the elapsed seconds."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.01)
    return time.monotonic() - start


async def finish(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError, LeaderElectionLost):
        await asyncio.wait_for(task, 5)


async def test_two_electors_exactly_one_leads(cluster: Cluster) -> None:
    (ca, _), (cb, _), (reader, _) = [await cluster.client() for _ in range(3)]
    reg_a, reg_b = CollectorRegistry(), CollectorRegistry()
    a = cluster.elector(ca, "a", registry=reg_a)
    b = cluster.elector(cb, "b", registry=reg_b)
    intervals: Intervals = []
    # Start both at once: both see no Lease, both create, one gets 409 AlreadyExists.
    ta = asyncio.create_task(a.run(leading("a", intervals)))
    tb = asyncio.create_task(b.run(leading("b", intervals)))
    await wait_for(lambda: a.is_leader or b.is_leader, 2.0)
    for _ in range(10):
        await asyncio.sleep(0.1)
        assert a.is_leader != b.is_leader
    leader = "a" if a.is_leader else "b"
    lease = await reader.get(LEASES, LEASE, NS)
    assert lease["spec"]["holderIdentity"] == leader
    assert lease["spec"]["leaseDurationSeconds"] == 2
    assert a.leader_identity == b.leader_identity == leader
    status = {name: reg.get_sample_value("leader_election_master_status", {"name": LEASE})
              for name, reg in (("a", reg_a), ("b", reg_b))}
    assert status == {"a": 1.0 if leader == "a" else 0.0, "b": 1.0 if leader == "b" else 0.0}
    a.stop()
    b.stop()
    await asyncio.wait_for(asyncio.gather(ta, tb), 5)
    assert [who for who, _, _ in intervals] == [leader]


async def test_leader_gone_without_release_is_replaced_after_the_lease(cluster: Cluster) -> None:
    (ca, _), (cb, _) = [await cluster.client() for _ in range(2)]
    a = cluster.elector(ca, "a", registry=CollectorRegistry(), release_on_cancel=False)
    b = cluster.elector(cb, "b", registry=CollectorRegistry())
    intervals: Intervals = []
    ta = asyncio.create_task(a.run(leading("a", intervals)))
    await wait_for(lambda: a.is_leader, 2.0)
    started: set[str] = set()
    tb = asyncio.create_task(b.run(leading("b", intervals, started)))
    await wait_for(lambda: b.leader_identity == "a", 2.0)  # b is polling a's lease
    ta.cancel()  # a dies: no release
    await finish(ta)
    gone = time.monotonic()
    takeover = await wait_for(lambda: b.is_leader,
                              LEASE_DURATION + 2 * MAX_RETRY_WAIT + 2 * SLACK)
    # b sees a's last renewal (made at most one period before `gone`) at its next poll, waits
    # out the lease from then on its own clock, and acquires at the poll after that.
    assert takeover >= LEASE_DURATION - RETRY_PERIOD - SLACK
    assert takeover <= LEASE_DURATION + 2 * MAX_RETRY_WAIT + SLACK
    await wait_for(lambda: "b" in started, 1.0)
    b.stop()
    await finish(tb)
    (_, _, end_a), (_, start_b, _) = intervals
    assert end_a <= gone < start_b


async def test_graceful_release_lets_the_successor_in_within_a_retry_period(
        cluster: Cluster) -> None:
    (ca, _), (cb, _), (reader, _) = [await cluster.client() for _ in range(3)]
    a = cluster.elector(ca, "a", registry=CollectorRegistry())
    b = cluster.elector(cb, "b", registry=CollectorRegistry())
    intervals: Intervals = []
    ta = asyncio.create_task(a.run(leading("a", intervals)))
    await wait_for(lambda: a.is_leader, 2.0)
    started: set[str] = set()
    tb = asyncio.create_task(b.run(leading("b", intervals, started)))
    await wait_for(lambda: b.leader_identity == "a", 2.0)  # b is polling a's lease
    a.stop()
    await asyncio.wait_for(ta, 5)
    released = time.monotonic()
    takeover = await wait_for(lambda: b.is_leader, 2.0)
    assert takeover <= MAX_RETRY_WAIT + SLACK
    lease = await reader.get(LEASES, LEASE, NS)
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    await wait_for(lambda: "b" in started, 1.0)
    b.stop()
    await finish(tb)
    (_, _, end_a), (_, start_b, _) = intervals
    assert end_a <= released < start_b


async def test_cut_off_leader_steps_down_before_the_other_takes_over(cluster: Cluster) -> None:
    (ca, proxy), (cb, _) = await cluster.client(proxied=True), await cluster.client()
    assert proxy is not None
    reg_a = CollectorRegistry()
    a = cluster.elector(ca, "a", registry=reg_a)
    b = cluster.elector(cb, "b", registry=CollectorRegistry())
    intervals: Intervals = []
    ta = asyncio.create_task(a.run(leading("a", intervals)))
    await wait_for(lambda: a.is_leader, 2.0)
    started: set[str] = set()
    tb = asyncio.create_task(b.run(leading("b", intervals, started)))
    await wait_for(lambda: b.leader_identity == "a", 2.0)  # b is polling a's lease
    proxy.cut_off = True
    cut = time.monotonic()
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(ta, RENEW_DEADLINE + RETRY_PERIOD + 2.0)
    lost = time.monotonic() - cut
    assert lost <= RENEW_DEADLINE + RETRY_PERIOD + SLACK
    assert reg_a.get_sample_value("leader_election_master_status", {"name": LEASE}) == 0
    await wait_for(lambda: b.is_leader, LEASE_DURATION + MAX_RETRY_WAIT + 2 * SLACK)
    await wait_for(lambda: "b" in started, 1.0)
    b.stop()
    await finish(tb)
    (who_a, _, end_a), (who_b, start_b, _) = intervals
    assert (who_a, who_b) == ("a", "b")
    assert end_a < start_b, f"two leaders at once: {intervals}"


async def test_a_conflict_on_renew_is_retried_and_leadership_kept(
        cluster: Cluster, envtest: EnvTestServer) -> None:
    (ca, _), = [await cluster.client()]
    a = cluster.elector(ca, "a", registry=CollectorRegistry())
    intervals: Intervals = []
    ta = asyncio.create_task(a.run(leading("a", intervals)))
    await wait_for(lambda: a.is_leader, 2.0)
    envtest.clear_request_log()
    envtest.faults.fail_next(1, verb="update", resource="leases", status=409)

    def lease_statuses() -> list[int]:
        return [r.status for r in envtest.request_log if "/leases/" in r.path]

    # Until a renewal after the conflict was answered.
    await wait_for(lambda: 409 in (got := lease_statuses()) and 200 in got[got.index(409):],
                   RETRY_PERIOD * 10)
    assert a.is_leader
    assert intervals == []  # never stopped leading
    statuses = lease_statuses()
    assert 409 in statuses
    assert statuses[statuses.index(409) + 1:].count(200) >= 1
    a.stop()
    await asyncio.wait_for(ta, 5)
