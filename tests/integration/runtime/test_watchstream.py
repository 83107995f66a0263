"""Watch streams read off their own connection (runtime/watchstream.py), through KubeClient:
events pushed to a handler or pulled, however the response is framed and cut; every malformed
byte ends the stream with one error; errors in answers and events typed as for any request;
HTTP proxies; uvloop, which production runs."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import uvloop
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from runtime.client import ClientSettings, KubeClient
from runtime.envtest import EnvTestServer
from runtime.errors import Gone, ServerError, TooManyRequests
from runtime.kubeconfig import Credentials, ServerEndpoint
from runtime.resources import CONFIGMAPS
from runtime.watchstream import MAX_HEAD, EventStream
from tests.support.loopback import forward_proxy, raw_serving
from tests.support.waiting import eventually

FAST = ClientSettings(retry_initial_delay=0.005, retry_max_delay=0.02, max_retry_after=0.02)
Writer = asyncio.StreamWriter


def client_for(url: str, settings: ClientSettings = FAST, proxy: str | None = None
               ) -> KubeClient:
    endpoint = ServerEndpoint(host=url, ssl=None, server_hostname=None, proxy=proxy)
    return KubeClient(endpoint, Credentials(Configuration()), settings=settings,
                      registry=CollectorRegistry())


def event(i: int, kind: str = "ADDED", size: int = 10) -> dict[str, Any]:
    return {"type": kind, "object": {"metadata": {"name": f"cm-{i}", "resourceVersion": str(i)},
                                     "data": {"k": "v" * size}}}


def line(e: dict[str, Any]) -> bytes:
    return json.dumps(e).encode() + b"\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


OK_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" \
             b"Transfer-Encoding: chunked\r\n\r\n"


def answering(pieces: list[bytes], pause: float = 0.01,
              then: Callable[[Writer], Awaitable[None]] | None = None,
              ) -> Callable[[asyncio.StreamReader, Writer], Awaitable[None]]:
    """A responder writing `pieces` one by one (each its own read, as far as timing allows)."""

    async def respond(reader: asyncio.StreamReader, writer: Writer) -> None:
        await reader.readuntil(b"\r\n\r\n")
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(pause)
        if then is not None:
            await then(writer)

    return respond


async def watch_all(url: str, *, push: bool, **kwargs: Any) -> list[dict[str, Any]]:
    client = client_for(url, **kwargs)
    try:
        stream = await client.open_watch(CONFIGMAPS, "default", resource_version="1")
        try:
            if push:
                got: list[dict[str, Any]] = []
                await stream.deliver(got.append)
                return got
            return [e async for e in stream]
        finally:
            stream.close()
    finally:
        await client.close()


@pytest.mark.parametrize("push", [True, False], ids=["pushed", "pulled"])
async def test_chunked_body_cut_anywhere_gives_each_event_once(push: bool) -> None:
    events = [event(i, size=i * 3000) for i in range(5)]
    body = b"".join(chunk(line(e)) for e in events[:2])  # one event a chunk
    body += chunk(line(events[2])[:5]) + chunk(line(events[2])[5:] + line(events[3]))
    body += chunk(b"\n") + chunk(line(events[4])) + b"0\r\n\r\n"  # a blank line, the end
    # cut every 7 bytes, across chunk sizes, data and CRLFs; the rest in one piece
    cuts = [0, *range(3, 200, 7), len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(cuts)]
    pieces[0] = OK_CHUNKED + pieces[0]
    async with raw_serving(answering(pieces, pause=0.001)) as url:
        assert await watch_all(url, push=push) == events


@pytest.mark.parametrize("push", [True, False], ids=["pushed", "pulled"])
async def test_length_and_close_delimited_bodies(push: bool) -> None:
    events = [event(i) for i in range(3)]
    lines = b"".join(line(e) for e in events)
    with_length = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(lines) + lines
    async with raw_serving(answering([with_length[:40], with_length[40:]])) as url:
        assert await watch_all(url, push=push) == events
    # Until the server closes; a last line without its newline is an event at a clean end.
    close_delimited = b"HTTP/1.0 200 OK\r\n\r\n" + lines[:-1]
    async with raw_serving(answering([close_delimited])) as url:
        assert await watch_all(url, push=push) == events


async def test_a_stream_cut_mid_chunk_ends_without_its_fragment() -> None:
    events = [event(0), event(1)]
    pieces = [OK_CHUNKED + chunk(line(events[0])) + b"400\r\n" + line(events[1])[:20]]
    async with raw_serving(answering(pieces)) as url:
        assert await watch_all(url, push=True) == [events[0]]


@pytest.mark.parametrize(("response", "says"), [
    (b"SPDY/3 200 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", "status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "content-length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "transfer-encoding"),
    (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (MAX_HEAD + 10), "no end of headers"),
    (OK_CHUNKED + b"zz\r\n{}\n\r\n", "chunk size"),
    (OK_CHUNKED + b"fffffffffffffffff\r\n", "chunk size"),
    (OK_CHUNKED + b"3\r\nabc and more\r\n", "longer than its size"),
    (OK_CHUNKED + b"1" * 2000, "chunk-size line too long"),
], ids=["protocol", "status", "header", "length", "encoding", "huge-head", "hex", "size",
        "overrun", "size-line"])
async def test_malformed_responses_are_one_error_each(response: bytes, says: str) -> None:
    given_up = asyncio.Event()

    async def hold_open(writer: Writer) -> None:
        await given_up.wait()  # the client must not wait for more

    async with raw_serving(answering([response], then=hold_open)) as url:
        try:
            async with asyncio.timeout(3):
                with pytest.raises(ServerError, match="malformed watch response") as raised:
                    await watch_all(url, push=True, settings=ClientSettings(read_attempts=1))
        finally:
            given_up.set()
    assert says in raised.value.message
    assert raised.value.code == 0


async def test_error_answers_are_typed_and_retried_like_any_read() -> None:
    answers = [b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 2\r\n\r\n{}",
               b"HTTP/1.1 410 Gone\r\nTransfer-Encoding: chunked\r\n\r\n"
               + chunk(json.dumps({"kind": "Status", "code": 410, "reason": "Expired",
                                   "message": "too old resource version"}).encode())
               + b"0\r\n\r\n"]
    served: list[int] = []

    async def respond(reader: asyncio.StreamReader, writer: Writer) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answers[min(len(served), 1)])
        served.append(1)
        await writer.drain()

    async with raw_serving(respond) as url:
        client = client_for(url)
        try:
            with pytest.raises(Gone, match="too old resource version"):
                await client.open_watch(CONFIGMAPS, "default", resource_version="1")
        finally:
            await client.close()
    assert len(served) == 2  # the 429 was retried, the 410 was not

    async with raw_serving(answering([answers[0]] * 1)) as url:
        client = client_for(url, ClientSettings(read_attempts=1))
        try:
            with pytest.raises(TooManyRequests):
                await client.open_watch(CONFIGMAPS, "default")
        finally:
            await client.close()


async def test_an_error_event_or_a_failing_handler_ends_delivery_with_its_error() -> None:
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "expired"}}
    pieces = [OK_CHUNKED + chunk(line(event(0)) + line(error) + line(event(1)))]
    given_up = asyncio.Event()

    async def hold_open(writer: Writer) -> None:
        await given_up.wait()

    async with raw_serving(answering(pieces, then=hold_open)) as url:
        client = client_for(url)
        try:
            stream = await client.open_watch(CONFIGMAPS, "default")
            got: list[dict[str, Any]] = []
            async with asyncio.timeout(3):
                with pytest.raises(Gone, match="expired"):
                    await stream.deliver(got.append)
            assert got == [event(0)]  # nothing after the error
            assert stream.ended

            stream = await client.open_watch(CONFIGMAPS, "default")

            def fails(e: dict[str, Any]) -> None:
                raise RuntimeError("the consumer's own failure")

            async with asyncio.timeout(3):
                with pytest.raises(RuntimeError, match="own failure"):
                    await stream.deliver(fails)
        finally:
            given_up.set()
            await client.close()
    # An ERROR event whose code is not a number is still one typed error.
    hostile = {"type": "ERROR", "object": {"code": "lots", "message": "odd"}}
    async with raw_serving(answering([OK_CHUNKED + chunk(line(hostile))])) as url:
        with pytest.raises(ServerError, match="odd"):
            await watch_all(url, push=True)
    # A line that is not JSON at all ends the stream with one error, no traceback of its own.
    async with raw_serving(answering([OK_CHUNKED + chunk(b"{not json\n")])) as url:
        with pytest.raises(ServerError, match="malformed watch event"):
            await watch_all(url, push=False)


async def test_a_consumer_that_does_not_pull_pauses_the_socket() -> None:
    big = [event(i, size=100_000) for i in range(80)]  # ~8 MiB, more than the queue holds
    pieces = [OK_CHUNKED] + [chunk(line(e)) for e in big] + [b"0\r\n\r\n"]
    async with raw_serving(answering(pieces, pause=0)) as url:
        # Silent for longer than the idle timeout, because the client stopped reading: that
        # is no reason to give the stream up.
        idle = 0.2
        client = client_for(url, ClientSettings(watch_idle_timeout=idle))
        try:
            stream = await client.open_watch(CONFIGMAPS, "default")
            # The server writes as fast as the client reads, until the reading pauses past the
            # mark; then nothing more comes for twice the idle timeout.
            loop = asyncio.get_running_loop()
            last = (-1, loop.time())  # the queued size, and since when

            async def paused() -> bool:
                nonlocal last
                if stream._queued != last[0]:
                    last = (stream._queued, loop.time())
                return last[0] > 4 * 2**20 and loop.time() - last[1] > 2 * idle

            await eventually(paused, interval=0.05)
            queued = stream._queued
            assert 4 * 2**20 < queued < 6 * 2**20, queued  # paused just past the mark
            got = [e async for e in stream]
        finally:
            await client.close()
    assert got == big


async def test_watch_through_an_http_proxy(envtest_kubeconfig: Path,
                                           envtest: EnvTestServer) -> None:
    direct = client_for(envtest.url)
    async with forward_proxy() as (proxy, asked):
        client = client_for(envtest.url, proxy=proxy)
        try:
            rv = (await direct.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
            stream = await client.open_watch(CONFIGMAPS, "default", resource_version=rv,
                                             allow_bookmarks=False)
            names: list[str] = []

            def seen(e: dict[str, Any]) -> None:
                names.append(e["object"]["metadata"]["name"])
                if len(names) == 2:
                    stream.close()

            delivering = asyncio.create_task(stream.deliver(seen))
            for name in ("via-proxy-a", "via-proxy-b"):
                await direct.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
            await asyncio.wait_for(delivering, 5)
        finally:
            await client.close()
            await direct.close()
    assert names == ["via-proxy-a", "via-proxy-b"]
    assert len(asked) == 1  # the watch, and nothing else, went through the proxy
    assert asked[0].startswith(f"{envtest.url}/api/v1/namespaces/default/configmaps?")
    assert "watch=true" in asked[0]


def test_watch_under_uvloop() -> None:
    """Production runs uvloop, whose transports are its own classes."""
    events = [event(i) for i in range(3)]

    async def scenario() -> list[dict[str, Any]]:
        pieces = [OK_CHUNKED + chunk(line(events[0])), chunk(line(events[1]) + line(events[2])),
                  b"0\r\n\r\n"]
        async with raw_serving(answering(pieces)) as url:
            return await watch_all(url, push=True)

    assert uvloop.run(scenario()) == events


async def test_an_event_stream_needs_no_connection_to_be_read() -> None:
    """What carries the bytes is the caller's: the stream only splits, decodes and hands out."""
    closed: list[bool] = []
    stream = EventStream(decode=json.loads, idle_timeout=None, close=lambda: closed.append(True))
    stream.feed(line(event(0)) + line(event(1))[:10])
    stream.feed(line(event(1))[10:])
    stream.end(clean=True)
    assert [e async for e in stream] == [event(0), event(1)]
    assert closed == [True]


async def test_a_line_without_end_stops_at_the_bound() -> None:
    """A stream that never ends its line is given up at `max_line` bytes, not held forever."""
    closed: list[bool] = []
    stream = EventStream(decode=json.loads, idle_timeout=None, close=lambda: closed.append(True),
                         max_line=100)
    stream.feed(line(event(0)) + b'{"type": "ADDED", ')
    stream.feed(b"x" * 60)
    assert closed == []  # 60 bytes of it so far: still read
    stream.feed(b"x" * 60)
    assert stream.ended
    assert closed == [True]
    assert await anext(stream) == event(0)  # what came whole before it is still read
    with pytest.raises(ServerError, match="a line longer than 100 bytes"):
        await anext(stream)
    # ... and one that came whole in a read past the bound likewise
    stream = EventStream(decode=json.loads, idle_timeout=None, close=lambda: None, max_line=100)
    stream.feed(line(event(1)) + b"y" * 200)
    with pytest.raises(ServerError, match="longer than"):
        await stream.deliver(lambda e: None)
