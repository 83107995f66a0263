"""Fault injection, latency, pause/resume and the request log, in-process and over HTTP."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from runtime.envtest import EnvTestServer
from tests.integration.runtime.envtest.rawhttp import CM, SVC, Http
from tests.support.objects import service
from tests.support.waiting import eventually


async def _answers(url: str, expected: bool) -> bool:
    """Whether the server's answering (a 200 for /version) is `expected`."""
    try:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/version") as r:
            assert r.status == 200
            return expected
    except aiohttp.ClientConnectionError:
        return not expected


async def test_429_carries_retry_after(http: Http, envtest: EnvTestServer) -> None:
    envtest.faults.fail_next(2, verb="list", resource="services", status=429, retry_after=3)
    async with http.session.get(SVC) as resp:
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "3"
        body = await resp.json()
    assert body["kind"] == "Status"
    assert body["reason"] == "TooManyRequests"
    assert body["details"]["retryAfterSeconds"] == 3
    status, _ = await http.get(CM)  # other resources are unaffected
    assert status == 200
    status, _ = await http.get(SVC)
    assert status == 429
    status, _ = await http.get(SVC)
    assert status == 200


async def test_5xx_by_verb(http: Http, envtest: EnvTestServer,
                           envtest_client: client.ApiClient) -> None:
    envtest.faults.fail_next(1, verb="create", status=503)
    status, body = await http.post(CM, {"metadata": {"name": "c"}})
    assert (status, body["reason"]) == (503, "ServiceUnavailable")
    status, _ = await http.post(CM, {"metadata": {"name": "c"}})
    assert status == 201
    envtest.faults.fail_next(1, status=500)
    with pytest.raises(ApiException) as info:
        await client.CoreV1Api(envtest_client).read_namespaced_config_map("c", "default")
    assert info.value.status == 500
    with pytest.raises(ValueError, match="unknown verb"):
        envtest.faults.fail_next(1, verb="explode")


async def test_latency(http: Http, envtest: EnvTestServer) -> None:
    envtest.faults.set_latency(0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await http.get(SVC)
    assert loop.time() - started >= 0.2
    envtest.faults.set_latency(0)


async def test_request_log(http: Http, envtest: EnvTestServer) -> None:
    envtest.clear_request_log()
    await http.post(SVC, service("a"))
    await http.get(f"{SVC}/a")
    await http.get(SVC, labelSelector="x=y")
    await http.get(f"{SVC}/missing")
    log = envtest.request_log
    assert [(r.verb, r.status) for r in log] == [("create", 201), ("get", 200),
                                                 ("list", 200), ("get", 404)]
    assert log[2].query == {"labelSelector": "x=y"}
    assert log[1].path == f"{SVC}/a"


async def test_pause_refuses_connections_and_resume_serves(envtest: EnvTestServer) -> None:
    port = envtest.port
    await envtest.pause()
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as session, session.get(f"{envtest.url}/version"):
            pass
    await envtest.resume()
    assert envtest.port == port
    async with aiohttp.ClientSession() as session, session.get(f"{envtest.url}/version") as r:
        assert r.status == 200


async def test_pause_ends_open_watches(http: Http, envtest: EnvTestServer) -> None:
    async with http.session.get(SVC, params={"watch": "true"}) as resp:
        assert envtest.watch_count == 1  # counted before the response headers go out
        await envtest.pause()
        await asyncio.wait_for(resp.content.read(), 2)
    assert envtest.watch_count == 0
    await envtest.resume()


async def test_admin_endpoints(http: Http, envtest: EnvTestServer) -> None:
    status, _ = await http.post("/_envtest/faults", {"n": 1, "verb": "get", "status": 429,
                                                     "retry_after": 2})
    assert status == 200
    async with http.session.get("/version") as resp:
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "2"
    status, _err = await http.post("/_envtest/faults", {"verb": "nope"})
    assert status == 400
    status, _ = await http.request("PUT", "/_envtest/latency", {"seconds": 0})
    assert status == 200
    status, _ = await http.request("PUT", "/_envtest/bookmark-interval", {"seconds": 0.3})
    assert envtest.bookmark_interval == 0.3
    await http.post(SVC, service("a"))
    status, requests = await http.get("/_envtest/requests")
    assert status == 200
    assert any(r["verb"] == "create" and r["status"] == 201 for r in requests)
    assert not any(r["path"].startswith("/_envtest") for r in requests)
    await http.request("DELETE", "/_envtest/requests")
    assert envtest.request_log == []
    before = envtest.revision
    await http.post(SVC, service("b"))
    status, _ = await http.post("/_envtest/compact", {})
    async with http.session.get(SVC, params={"watch": "1", "resourceVersion": str(before)}
                                ) as resp:
        assert b'"code":410' in await resp.content.readline()
    status, state = await http.get("/_envtest/state")
    assert state["revision"] == envtest.revision
    status, _body = await http.post("/_envtest/pause", {"seconds": 0.3})
    assert status == 202
    await eventually(lambda: _answers(envtest.url, False), interval=0.02)  # paused
    await eventually(lambda: _answers(envtest.url, True), interval=0.02)  # resumed by itself
    status, _ = await http.post("/_envtest/close-watches", {})
    assert status == 200


async def test_watch_faults_and_port_in_use(http: Http, envtest: EnvTestServer) -> None:
    envtest.faults.fail_next(1, verb="watch", status=500)
    status, body = await http.get(SVC, watch="true")
    assert (status, body["reason"]) == (500, "InternalError")
    assert envtest.watch_count == 0
    busy = EnvTestServer(port=envtest.port)
    with pytest.raises(OSError):
        await busy.start()
