"""Metrics and probe servers over real HTTP on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from runtime import metrics
from runtime.httpserver import (
    BindAddress,
    BindAddressError,
    MetricsServer,
    ProbeServer,
    parse_bind_address,
)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def fetch(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as resp:
        return resp.status, await resp.text()


@pytest.mark.parametrize(("address", "expected"), [
    (":8080", BindAddress(None, 8080)),
    ("127.0.0.1:61779", BindAddress("127.0.0.1", 61779)),
    ("localhost:0", BindAddress("localhost", 0)),
    ("[::1]:9000", BindAddress("::1", 9000)),
    ("0", None),
    ("", None),
])
def test_bind_addresses(address: str, expected: BindAddress | None) -> None:
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:", ":port", "a:b:80", ":70000", "[::1]"])
def test_bad_bind_addresses_get_one_clear_message(address: str) -> None:
    with pytest.raises(BindAddressError, match=r"invalid bind address"):
        parse_bind_address(address)


async def test_metrics_endpoint_serves_the_registry(http: aiohttp.ClientSession) -> None:
    registry = metrics.new_registry()
    metrics.gauge(registry, "leader_election_master_status", "leader", ["name"]).labels(
        name="aiolbc").set(1)
    requests = metrics.counter(registry, "rest_client_requests_total", "requests",
                               ["code", "method", "host"])
    requests.labels(code="200", method="GET", host="127.0.0.1").inc(3)
    async with MetricsServer(registry, bind_address="127.0.0.1:0") as server:
        status, body = await fetch(http, f"{server.url}/metrics")
        async with http.get(f"{server.url}/metrics",
                            headers={"Accept": "application/openmetrics-text"}) as resp:
            openmetrics = resp.headers["Content-Type"]
            assert (await resp.text()).endswith("# EOF\n")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert families["leader_election_master_status"].samples[0].labels == {"name": "aiolbc"}
    assert families["leader_election_master_status"].samples[0].value == 1
    sample = next(s for s in families["rest_client_requests"].samples
                  if s.name == "rest_client_requests_total")
    assert sample.value == 3
    assert "process_cpu_seconds" in families  # the process collector is registered
    assert "python_info" in families
    assert openmetrics.startswith("application/openmetrics-text")


def test_get_or_create_shares_families_and_rejects_mismatches() -> None:
    registry = CollectorRegistry()
    a = metrics.counter(registry, "x_total", "x", ["name"])
    assert metrics.counter(registry, "x_total", "x", ["name"]) is a
    with pytest.raises(ValueError, match="already registered as a Counter"):
        metrics.gauge(registry, "x_total", "x", ["name"])
    with pytest.raises(ValueError, match="labels"):
        metrics.counter(registry, "x_total", "x", ["other"])
    h = metrics.histogram(registry, "d_seconds", "d", buckets=(0.1, 1.0))
    assert metrics.histogram(registry, "d_seconds", "d") is h
    assert metrics.default_registry() is metrics.default_registry()


async def test_probes_ok_verbose_exclude_and_sub_paths(http: aiohttp.ClientSession) -> None:
    probes = ProbeServer(bind_address="127.0.0.1:0")
    healthy = True

    async def informers_synced() -> bool:
        await asyncio.sleep(0)
        return healthy

    def leader_election() -> None:
        if not healthy:
            raise RuntimeError("failed election to renew leadership")

    probes.add_healthz_check("ping", lambda: True)
    probes.add_healthz_check("leaderElection", leader_election)
    probes.add_readyz_check("informers", informers_synced)
    with pytest.raises(ValueError, match="already exists"):
        probes.add_readyz_check("informers", informers_synced)
    async with probes:
        base = probes.url
        assert await fetch(http, f"{base}/healthz") == (200, "ok")
        assert await fetch(http, f"{base}/readyz/") == (200, "ok")
        assert await fetch(http, f"{base}/healthz?verbose") == (
            200, "[+]leaderElection ok\n[+]ping ok\nhealthz check passed\n")

        healthy = False
        assert await fetch(http, f"{base}/healthz") == (
            500, "[-]leaderElection failed: reason withheld\n[+]ping ok\nhealthz check failed\n")
        assert await fetch(http, f"{base}/readyz") == (
            500, "[-]informers failed: reason withheld\nhealthz check failed\n")
        assert await fetch(http, f"{base}/healthz?exclude=leaderElection") == (200, "ok")
        assert await fetch(http, f"{base}/healthz?exclude=leaderElection&exclude=nope"
                                 f"&verbose=1") == (
            200, '[+]leaderElection excluded: ok\n[+]ping ok\n'
                 'warn: some health checks cannot be excluded: no matches for "nope"\n'
                 'healthz check passed\n')
        assert await fetch(http, f"{base}/healthz/ping") == (200, "ok")
        status, body = await fetch(http, f"{base}/healthz/leaderElection")
        assert status == 500
        assert "failed election to renew leadership" in body
        assert (await fetch(http, f"{base}/readyz/unknown"))[0] == 404
    assert probes.port is None


async def test_no_checks_means_ping(http: aiohttp.ClientSession) -> None:
    async with ProbeServer(bind_address="127.0.0.1:0") as probes:
        assert await fetch(http, f"{probes.url}/readyz?verbose") == (
            200, "[+]ping ok\nhealthz check passed\n")
        assert await fetch(http, f"{probes.url}/readyz/ping") == (200, "ok")


async def test_zero_disables_and_a_taken_port_is_a_clear_error() -> None:
    disabled = ProbeServer(bind_address="0")
    await disabled.start()
    assert not disabled.enabled
    assert disabled.port is None
    async with ProbeServer(bind_address="127.0.0.1:0") as first:
        clash = MetricsServer(CollectorRegistry(), bind_address=f"127.0.0.1:{first.port}")
        with pytest.raises(OSError, match=r"cannot serve metrics on 127\.0\.0\.1:\d+"):
            await clash.start()
