"""KubeClient against the local API server: verbs, typed errors, read retries, limiter, metrics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import certifi
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.clock import FakeClock
from runtime.envtest import EnvTestServer
from runtime.errors import (
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
)
from runtime.kubeconfig import (
    Credentials,
    KubeConfigError,
    ServerEndpoint,
    load_in_cluster,
    load_kubeconfig,
)
from runtime.resources import CONFIGMAPS, NAMESPACES, SERVICES
from tests.support.loopback import serving
from tests.support.objects import service

FAST = ClientSettings(retry_initial_delay=0.005, retry_max_delay=0.02, max_retry_after=0.02)


@pytest.fixture
async def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
async def client(envtest_kubeconfig: Path,
                 registry: CollectorRegistry) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=FAST,
                                                registry=registry) as c:
        yield c


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
            "data": dict(data)}


def verbs_logged(server: EnvTestServer, verb: str) -> int:
    return sum(1 for r in server.request_log if r.verb == verb)


async def test_crud_round_trip(client: KubeClient) -> None:
    created = await client.create(CONFIGMAPS, configmap("one", a="1"))
    assert created["metadata"]["uid"]
    assert "managedFields" not in created["metadata"]

    got = await client.get(CONFIGMAPS, "one", "default")
    assert got["data"] == {"a": "1"}

    got["data"]["a"] = "2"
    updated = await client.update(CONFIGMAPS, got)
    assert updated["data"] == {"a": "2"}
    assert updated["metadata"]["resourceVersion"] != got["metadata"]["resourceVersion"]

    merged = await client.patch(CONFIGMAPS, "one", {"data": {"b": "3"}}, "default")
    assert merged["data"] == {"a": "2", "b": "3"}
    jsonp = await client.patch(CONFIGMAPS, "one", [{"op": "remove", "path": "/data/a"}],
                               "default", patch_type="json")
    assert jsonp["data"] == {"b": "3"}
    strategic = await client.patch(CONFIGMAPS, "one", {"metadata": {"labels": {"x": "y"}}},
                                   "default", patch_type="strategic")
    assert strategic["metadata"]["labels"] == {"app": "web", "x": "y"}

    listed = await client.list(CONFIGMAPS, "default", label_selector="x=y")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one"]
    assert listed["items"][0]["kind"] == "ConfigMap"  # filled in, as on watch objects
    assert listed["metadata"]["resourceVersion"]

    assert await client.delete(CONFIGMAPS, "one", "default",
                               propagation_policy="Background") is None
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "one", "default")


async def test_status_subresource_and_cluster_scope(client: KubeClient) -> None:
    ns = await client.create(NAMESPACES, {"metadata": {"name": "client-status"}})
    assert ns["metadata"]["name"] == "client-status"
    lb = service("lb", selector={"app": "lb"}, ports=[{"port": 80, "targetPort": 8080}])
    svc = await client.create(SERVICES, lb, "client-status")
    svc["status"] = {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}
    svc["spec"]["ports"][0]["port"] = 81  # ignored by a status update
    after = await client.update_status(SERVICES, svc)
    assert after["status"]["loadBalancer"]["ingress"][0]["hostname"] == "lb.example.com"
    assert after["spec"]["ports"][0]["port"] == 80
    patched = await client.patch(SERVICES, "lb", {"status": {"loadBalancer": {"ingress": None}}},
                                 "client-status", subresource="status")
    assert patched["status"]["loadBalancer"] == {}
    names = [n["metadata"]["name"] for n in (await client.list(NAMESPACES))["items"]]
    assert "client-status" in names


async def test_typed_errors_carry_the_server_message(client: KubeClient) -> None:
    with pytest.raises(NotFound) as not_found:
        await client.get(CONFIGMAPS, "missing", "default")
    assert "missing" in not_found.value.message
    assert not_found.value.code == 404

    await client.create(CONFIGMAPS, configmap("dup"))
    with pytest.raises(AlreadyExists) as exists:
        await client.create(CONFIGMAPS, configmap("dup"))
    assert "already exists" in exists.value.message
    assert exists.value.reason == "AlreadyExists"

    stale = await client.get(CONFIGMAPS, "dup", "default")
    await client.update(CONFIGMAPS, {**stale, "data": {"changed": "yes"}})
    with pytest.raises(Conflict) as conflict:
        await client.update(CONFIGMAPS, stale)
    assert not isinstance(conflict.value, AlreadyExists)
    assert conflict.value.reason == "Conflict"
    assert conflict.value.message

    with pytest.raises(Invalid) as invalid:
        await client.create(CONFIGMAPS, configmap("Not_A_Valid_Name"))
    assert "Not_A_Valid_Name" in invalid.value.message
    assert invalid.value.code == 422

    with pytest.raises(ValueError, match="needs a namespace"):
        await client.create(CONFIGMAPS, {"metadata": {"name": "x"}})


async def test_reads_are_retried_on_5xx_and_429(client: KubeClient,
                                                envtest: EnvTestServer) -> None:
    await client.create(CONFIGMAPS, configmap("retry"))
    envtest.clear_request_log()
    envtest.faults.fail_next(2, verb="get", status=500)
    got = await client.get(CONFIGMAPS, "retry", "default")
    assert got["metadata"]["name"] == "retry"
    assert verbs_logged(envtest, "get") == 3

    envtest.clear_request_log()
    envtest.faults.fail_next(2, verb="list", status=429, retry_after=1)
    started = time.monotonic()
    listed = await client.list(CONFIGMAPS, "default")
    assert any(i["metadata"]["name"] == "retry" for i in listed["items"])
    assert verbs_logged(envtest, "list") == 3
    assert time.monotonic() - started < 0.9  # Retry-After capped by max_retry_after here

    envtest.faults.fail_next(10, verb="get", status=503)
    with pytest.raises(ServerError) as exhausted:
        await client.get(CONFIGMAPS, "retry", "default")
    assert exhausted.value.code == 503
    envtest.faults.clear()


async def test_retry_after_is_honoured(envtest: EnvTestServer, envtest_kubeconfig: Path) -> None:
    clock = FakeClock()
    settings = ClientSettings(max_retry_after=30.0)
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=settings,
                                                registry=CollectorRegistry(), clock=clock) as c:
        envtest.faults.fail_next(1, verb="list", status=429, retry_after=2)
        task = asyncio.create_task(c.list(CONFIGMAPS, "default"))
        await _until(lambda: clock.sleepers == 1)
        await clock.advance(1.9)
        await asyncio.sleep(0.05)
        assert not task.done()
        await clock.advance(0.2)
        listed = await asyncio.wait_for(task, 5)
        assert "items" in listed


async def test_writes_are_not_retried(client: KubeClient, envtest: EnvTestServer) -> None:
    envtest.clear_request_log()
    envtest.faults.fail_next(1, verb="create", status=500)
    with pytest.raises(ServerError):
        await client.create(CONFIGMAPS, configmap("once"))
    assert verbs_logged(envtest, "create") == 1
    envtest.faults.fail_next(1, verb="patch", status=429)
    with pytest.raises(TooManyRequests):
        await client.patch(CONFIGMAPS, "once", {"data": {"a": "b"}}, "default")
    assert verbs_logged(envtest, "patch") == 1


async def test_metrics(client: KubeClient, registry: CollectorRegistry,
                       envtest: EnvTestServer) -> None:
    host = client.endpoint.netloc
    await client.create(CONFIGMAPS, configmap("metrics"))
    await client.get(CONFIGMAPS, "metrics", "default")
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "nope", "default")

    def requests(code: str, method: str) -> float:
        value = registry.get_sample_value(
            "rest_client_requests_total", {"code": code, "method": method, "host": host})
        return value or 0.0

    assert requests("201", "POST") == 1
    assert requests("200", "GET") == 1
    assert requests("404", "GET") == 1
    count = registry.get_sample_value("rest_client_request_duration_seconds_count",
                                      {"verb": "GET", "host": host})
    assert count == 2
    bucket = registry.get_sample_value("rest_client_request_duration_seconds_bucket",
                                       {"verb": "GET", "host": host, "le": "60.0"})
    assert bucket == 2


async def test_qps_limiter_paces_requests(envtest: EnvTestServer,
                                          envtest_kubeconfig: Path) -> None:
    clock = FakeClock()
    settings = ClientSettings(qps=10.0, burst=2)
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=settings,
                                                registry=CollectorRegistry(), clock=clock) as c:
        envtest.clear_request_log()
        tasks = [asyncio.create_task(c.list(CONFIGMAPS, "default")) for _ in range(5)]
        await _until(lambda: verbs_logged(envtest, "list") == 2 and clock.sleepers == 3)
        await clock.advance(0.1)
        await _until(lambda: verbs_logged(envtest, "list") == 3)
        await asyncio.sleep(0.05)
        assert verbs_logged(envtest, "list") == 3
        await clock.advance(0.2)
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert verbs_logged(envtest, "list") == 5


async def test_per_call_timeout(client: KubeClient, envtest: EnvTestServer) -> None:
    envtest.faults.set_latency(0.5)
    started = time.monotonic()
    with pytest.raises(ServerError, match="timed out") as timed_out:
        await client.get(CONFIGMAPS, "whatever", "default", timeout=0.1)
    assert timed_out.value.code == 0
    assert time.monotonic() - started < 0.45
    envtest.faults.set_latency(0.0)


async def test_watch_events_and_big_lines(client: KubeClient) -> None:
    start = await client.list(CONFIGMAPS, "default")
    rv = start["metadata"]["resourceVersion"]
    big = "x" * (3 * 2**20 // 2)  # 1.5 MiB on one watch line
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in client.watch(CONFIGMAPS, "default", resource_version=rv,
                                        timeout_seconds=30):
            obj = event["object"]
            if event["type"] == "BOOKMARK":
                continue
            assert "managedFields" not in obj["metadata"]
            events.append((event["type"], obj["metadata"]["name"]))
            if event["type"] == "MODIFIED":
                assert len(obj["data"]["big"]) == len(big)
            if event["type"] == "DELETED":
                return

    watcher = asyncio.create_task(consume())
    await client.create(CONFIGMAPS, configmap("watched"))
    await client.patch(CONFIGMAPS, "watched", {"data": {"big": big}}, "default")
    await client.delete(CONFIGMAPS, "watched", "default")
    await asyncio.wait_for(watcher, 10)
    assert events == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]


async def test_watch_from_compacted_revision_raises_gone(client: KubeClient,
                                                         envtest: EnvTestServer) -> None:
    rv = (await client.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
    await client.create(CONFIGMAPS, configmap("compacted"))
    envtest.compact()
    with pytest.raises(Gone):
        async for _ in client.watch(CONFIGMAPS, "default", resource_version=rv,
                                    timeout_seconds=5):
            pass


async def test_watch_ends_cleanly_when_server_closes(client: KubeClient,
                                                     envtest: EnvTestServer) -> None:
    rv = (await client.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
    seen: list[str] = []

    async def consume() -> None:
        async for event in client.watch(CONFIGMAPS, "default", resource_version=rv,
                                        timeout_seconds=60):
            seen.append(event["type"])

    task = asyncio.create_task(consume())
    await _until(lambda: envtest.watch_count >= 1)
    await envtest.close_watches()
    await asyncio.wait_for(task, 5)  # returns without raising


async def test_a_silent_watch_ends_after_the_idle_timeout_and_not_before(
        envtest_kubeconfig: Path, envtest: EnvTestServer) -> None:
    """No event and no bookmark for `watch_idle_timeout`: the stream is given up (the caller
    watches again); a stream with traffic stays open however long it lasts."""
    settings = ClientSettings(watch_idle_timeout=0.6)
    async with await KubeClient.from_kubeconfig(envtest_kubeconfig, settings=settings,
                                                registry=CollectorRegistry()) as c:
        rv = (await c.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
        seen: list[str] = []

        async def consume() -> None:
            async for event in c.watch(CONFIGMAPS, "default", resource_version=rv,
                                       timeout_seconds=60, allow_bookmarks=False):
                seen.append(event["object"]["metadata"]["name"])

        loop = asyncio.get_running_loop()
        started = loop.time()
        task = asyncio.create_task(consume())
        for i in range(6):  # 1.2 s of traffic, never 0.6 s apart
            await asyncio.sleep(0.2)
            await c.create(CONFIGMAPS, configmap(f"busy-{i}"))
        await _until(lambda: len(seen) == 6)
        assert not task.done()
        traffic_ended = loop.time()
        await asyncio.wait_for(task, 5)  # ends without raising
        silent_for = loop.time() - traffic_ended
        assert 0.4 <= silent_for < 3.0, silent_for
        assert loop.time() - started > 1.2
        assert seen == [f"busy-{i}" for i in range(6)]


async def test_bad_kubeconfig_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="does not exist"):
        await KubeClient.from_kubeconfig(tmp_path / "absent")
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with pytest.raises(KubeConfigError, match="kubeconfig"):
        await KubeClient.from_kubeconfig(broken)
    with pytest.raises(ValueError, match="qps"):
        ClientSettings(qps=0)


async def test_kubeconfig_token_and_in_cluster_credentials(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1/'}}]\n"
        "users: [{name: u, user: {token: abc123}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    endpoint, credentials = await load_kubeconfig(kubeconfig)
    assert endpoint.host == "http://127.0.0.1:1"
    assert endpoint.netloc == "127.0.0.1:1"
    assert endpoint.ssl is None
    assert await credentials.headers() == {"Authorization": "Bearer abc123"}

    token = tmp_path / "token"
    token.write_text("service-account-token")
    endpoint, credentials = load_in_cluster(
        token_file=str(token), ca_file=certifi.where(),
        environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"})
    assert endpoint.host == "https://127.0.0.1:6443"
    assert endpoint.ssl is not None
    assert await credentials.headers() == {"Authorization": "Bearer service-account-token"}
    with pytest.raises(KubeConfigError, match="in-cluster"):
        load_in_cluster(token_file=str(token), ca_file=certifi.where(), environ={})


async def _until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


async def test_watch_lines_are_found_however_the_stream_is_cut() -> None:
    """A watch body arriving in pieces cut anywhere (one whole line per read, several lines
    in one, a line over several reads, blank lines between) gives each event once, whole."""
    events = [{"type": "ADDED", "object": {"metadata": {"name": f"cm-{i}"},
                                           "data": {"k": "v" * (i * 5000)}}} for i in range(6)]
    lines = [json.dumps(e).encode() + b"\n" for e in events]
    cuts = [lines[0], lines[1] + lines[2][:7], lines[2][7:-1], b"\n", b"\n",  # blank line
            lines[3][:1], lines[3][1:] + lines[4], lines[5]]
    assert b"".join(cuts) == b"".join([*lines[:3], b"\n", *lines[3:]])

    async def serve(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for piece in cuts:
            await response.write(piece)
            await asyncio.sleep(0.02)  # each piece its own read, as far as timing allows
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/configmaps", serve)
    async with serving(app) as url:
        endpoint = ServerEndpoint(host=url, ssl=None, server_hostname=None, proxy=None)
        client = KubeClient(endpoint, Credentials(Configuration()), registry=CollectorRegistry())
        try:
            got = [event async for event in client.watch(CONFIGMAPS, "default",
                                                         resource_version="1")]
        finally:
            await client.close()
    assert got == events


async def test_the_ca_bundle_given_replaces_the_kubeconfigs(tmp_path: Path) -> None:
    """`--kube-ca-pem-filepath`: the API server's certificate is checked against this file,
    whatever the kubeconfig says (client-go's CAFile)."""
    async with EnvTestServer(tls=True) as srv:
        assert srv.ca_pem is not None
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        config = yaml.safe_load(kubeconfig.read_text())
        del config["clusters"][0]["cluster"]["certificate-authority-data"]
        kubeconfig.write_text(yaml.safe_dump(config))
        ca = tmp_path / "ca.pem"
        ca.write_bytes(srv.ca_pem)
        async with await KubeClient.from_kubeconfig(kubeconfig, ca_file=str(ca)) as client:
            assert "items" in await client.list(NAMESPACES)
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            with pytest.raises(Exception, match=r"(?i)certificate"):
                await client.list(NAMESPACES)
        (tmp_path / "other.pem").write_text("not a certificate\n")
        with pytest.raises(KubeConfigError, match="cannot load TLS material"):
            await KubeClient.from_kubeconfig(kubeconfig, ca_file=str(tmp_path / "other.pem"))
