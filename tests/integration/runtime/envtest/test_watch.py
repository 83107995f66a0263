"""Watch: resume, 410 after compaction, bookmarks, timeouts, initial events, selectors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from runtime.envtest import EnvTestServer
from runtime.envtest.patch import MERGE_PATCH
from tests.integration.runtime.envtest.rawhttp import CM, SVC, Http
from tests.support.objects import service


class Stream:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 2.0) -> dict[str, Any]:
        line = await asyncio.wait_for(self.resp.content.readline(), timeout)
        if not line:
            raise EOFError("stream ended")
        event: dict[str, Any] = json.loads(line)
        return event

    async def take(self, n: int, *, skip_bookmarks: bool = True) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while len(events) < n:
            event = await self.next()
            if skip_bookmarks and event["type"] == "BOOKMARK":
                continue
            events.append(event)
        return events

    async def ended(self, timeout: float = 3.0) -> bool:
        rest = await asyncio.wait_for(self.resp.content.read(), timeout)
        return all(json.loads(line)["type"] == "BOOKMARK" for line in rest.splitlines())


@asynccontextmanager
async def watching(http: Http, path: str, **params: str) -> AsyncIterator[Stream]:
    query = {"watch": "true", **params}
    async with http.session.get(path, params=query) as resp:
        assert resp.status == 200
        yield Stream(resp)


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


async def test_typed_watch_stream(envtest_client: client.ApiClient, http: Http) -> None:
    v1 = client.CoreV1Api(envtest_client)
    listed = await v1.list_namespaced_service("default")
    seen: list[tuple[str, str]] = []

    async def writer() -> None:
        await http.post(SVC, service("a"))
        await http.patch(f"{SVC}/a", {"metadata": {"labels": {"x": "y"}}}, MERGE_PATCH)
        await http.delete(f"{SVC}/a")

    task = asyncio.create_task(writer())
    async with watch.Watch() as w:
        async for event in w.stream(v1.list_namespaced_service, "default",
                                    resource_version=listed.metadata.resource_version,
                                    timeout_seconds=2):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                break
    await task
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_resume_delivers_exactly_the_missed_events(http: Http) -> None:
    _, listed = await http.get(SVC)
    start = listed["metadata"]["resourceVersion"]
    await http.post(SVC, service("a"))
    await http.post(CM, {"metadata": {"name": "other-kind"}})
    await http.post(SVC, service("b"))
    await http.patch(f"{SVC}/a", {"metadata": {"labels": {"v": "2"}}}, MERGE_PATCH)
    await http.delete(f"{SVC}/b")
    async with watching(http, SVC, resourceVersion=start) as stream:
        events = await stream.take(4)
        assert summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"),
                                   ("DELETED", "b")]
        revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert revisions == sorted(revisions)
        await http.post(SVC, service("c"))
        assert summary(await stream.take(1)) == [("ADDED", "c")]
        middle = str(revisions[1])
    async with watching(http, SVC, resourceVersion=middle) as stream:
        assert summary(await stream.take(3)) == [("MODIFIED", "a"), ("DELETED", "b"),
                                                 ("ADDED", "c")]


async def test_compaction_yields_410(http: Http, envtest: EnvTestServer,
                                     envtest_client: client.ApiClient) -> None:
    _, listed = await http.get(SVC)
    old = listed["metadata"]["resourceVersion"]
    await http.post(SVC, service("a"))
    envtest.compact()
    async with watching(http, SVC, resourceVersion=old) as stream:
        event = await stream.next()
        assert event["type"] == "ERROR"
        assert event["object"]["kind"] == "Status"
        assert event["object"]["code"] == 410
        assert event["object"]["reason"] == "Expired"
        assert event["object"]["message"] == (f"too old resource version: {old} "
                                              f"({envtest.revision})")
        assert await stream.ended()
    v1 = client.CoreV1Api(envtest_client)

    async def consume() -> None:
        async with watch.Watch() as w:
            async for _ in w.stream(v1.list_namespaced_service, "default",
                                    resource_version=old, timeout_seconds=2):
                pass

    with pytest.raises(ApiException) as info:
        await consume()
    assert info.value.status == 410
    # Watching from now on works again.
    async with watching(http, SVC, resourceVersion=str(envtest.revision)) as stream:
        await http.post(SVC, service("b"))
        assert summary(await stream.take(1)) == [("ADDED", "b")]


async def test_history_overflow_yields_410(http: Http) -> None:
    async with EnvTestServer(history_size=5) as small, \
            aiohttp.ClientSession(base_url=small.url) as session:
        start = small.revision
        for i in range(8):
            async with session.post(SVC, json={"metadata": {"name": f"s{i}"}}) as resp:
                assert resp.status == 201
        async with session.get(SVC, params={"watch": "1", "resourceVersion": str(start)}
                               ) as resp:
            event = json.loads(await resp.content.readline())
            assert event["object"]["code"] == 410
        async with session.get(SVC, params={"watch": "1",
                                            "resourceVersion": str(small.revision - 2)}
                               ) as resp:
            lines = [json.loads(await resp.content.readline()) for _ in range(2)]
            assert [e["object"]["metadata"]["name"] for e in lines] == ["s6", "s7"]


async def test_bookmarks_arrive(http: Http, envtest: EnvTestServer) -> None:
    envtest.bookmark_interval = 0.2
    async with watching(http, SVC, resourceVersion=str(envtest.revision),
                        allowWatchBookmarks="true") as stream:
        await http.post(CM, {"metadata": {"name": "elsewhere"}})
        event = await stream.next()
        assert event["type"] == "BOOKMARK"
        assert event["object"]["kind"] == "Service"
        assert event["object"]["apiVersion"] == "v1"
        assert event["object"]["metadata"] == {"resourceVersion": str(envtest.revision)}


async def test_timeout_seconds_ends_stream(http: Http) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with watching(http, SVC, timeoutSeconds="1") as stream:
        assert await stream.ended(timeout=3)
    assert 0.9 <= loop.time() - started < 2.5


async def test_initial_events_then_live(http: Http, envtest: EnvTestServer) -> None:
    await http.post(SVC, service("a"))
    await http.post(SVC, service("b"))
    async with watching(http, SVC) as stream:
        assert summary(await stream.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    async with watching(http, SVC, resourceVersion="0") as stream:
        assert summary(await stream.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
        await http.post(SVC, service("c"))
        assert summary(await stream.take(1)) == [("ADDED", "c")]
    async with watching(http, SVC, sendInitialEvents="true",
                        resourceVersionMatch="NotOlderThan",
                        allowWatchBookmarks="true") as stream:
        events = await stream.take(4, skip_bookmarks=False)
        assert summary(events[:3]) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
        assert events[3]["type"] == "BOOKMARK"
        assert events[3]["object"]["metadata"]["annotations"] == {
            "k8s.io/initial-events-end": "true"}
        assert events[3]["object"]["metadata"]["resourceVersion"] == str(envtest.revision)
        await http.post(SVC, service("d"))
        assert summary(await stream.take(1)) == [("ADDED", "d")]
    status, _err = await http.get(SVC, watch="true", sendInitialEvents="true")
    assert status == 422


async def test_selectors_turn_modifications_into_add_and_delete(http: Http,
                                                                envtest: EnvTestServer) -> None:
    await http.post(SVC, service("a", labels={"app": "web"}))
    async with watching(http, SVC, resourceVersion=str(envtest.revision),
                        labelSelector="app=web") as stream:
        await http.post(SVC, service("b", labels={"app": "db"}))
        await http.patch(f"{SVC}/b", {"metadata": {"labels": {"app": "web"}}}, MERGE_PATCH)
        await http.patch(f"{SVC}/a", {"metadata": {"labels": {"app": "db"}}}, MERGE_PATCH)
        await http.patch(f"{SVC}/b", {"metadata": {"annotations": {"x": "y"}}}, MERGE_PATCH)
        events = await stream.take(3)
        assert summary(events) == [("ADDED", "b"), ("DELETED", "a"), ("MODIFIED", "b")]
        assert events[1]["object"]["metadata"]["labels"] == {"app": "db"}


async def test_namespace_and_all_namespaces(http: Http, envtest: EnvTestServer) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    rv = str(envtest.revision)
    async with watching(http, SVC, resourceVersion=rv) as one, \
            watching(http, "/api/v1/services", resourceVersion=rv) as every, \
            watching(http, "/api/v1/watch/namespaces/other/services",
                     resourceVersion=rv, watch="") as legacy:
        await http.post("/api/v1/namespaces/other/services", service("x"))
        await http.post(SVC, service("y"))
        assert summary(await one.take(1)) == [("ADDED", "y")]
        assert summary(await every.take(2)) == [("ADDED", "x"), ("ADDED", "y")]
        assert summary(await legacy.take(1)) == [("ADDED", "x")]


@pytest.mark.parametrize("flag", ["true", "True", "1"])
async def test_watch_flag_spellings(http: Http, envtest: EnvTestServer, flag: str) -> None:
    async with http.session.get(SVC, params={"watch": flag,
                                             "resourceVersion": str(envtest.revision)}) as resp:
        await http.post(SVC, service("a"))
        event = json.loads(await asyncio.wait_for(resp.content.readline(), 2))
        assert event["type"] == "ADDED"


async def test_close_watches_ends_streams(http: Http, envtest: EnvTestServer) -> None:
    async with watching(http, SVC) as first, watching(http, CM) as second:
        assert envtest.watch_count == 2
        await envtest.close_watches()
        assert envtest.watch_count == 0
        assert await first.ended()
        assert await second.ended()


async def test_many_watchers_see_every_event_in_order(http: Http,
                                                      envtest: EnvTestServer) -> None:
    rv = str(envtest.revision)
    watchers, writes = 50, 200
    async with aiohttp.ClientSession(base_url=envtest.url) as session:
        responses = [await session.get(SVC, params={"watch": "1", "resourceVersion": rv})
                     for _ in range(watchers)]

        async def collect(resp: aiohttp.ClientResponse) -> list[str]:
            names: list[str] = []
            while len(names) < writes:
                names.append(json.loads(await resp.content.readline())["object"]["metadata"]
                             ["name"])
            return names

        readers = [asyncio.create_task(collect(r)) for r in responses]
        await asyncio.gather(*(http.post(SVC, service(f"s{i:03d}")) for i in range(writes)))
        results = await asyncio.wait_for(asyncio.gather(*readers), 20)
        _, listed = await http.get(SVC)
        order = sorted((int(i["metadata"]["resourceVersion"]), i["metadata"]["name"])
                       for i in listed["items"])
        expected = [name for _, name in order]
        assert all(result == expected for result in results)
        for resp in responses:
            resp.close()
