"""What a client may hold of a server (runtime/connections.py), over real sockets on loopback
with short timeouts: slow headers, silent TLS handshakes, idle keep-alive, and the bound."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import uvloop
from aiohttp import web

from runtime.connections import ConnectionGuard, ConnectionLimits
from runtime.webhook.certs import issue_ca, issue_serving

HALF_HEADER = b"GET /ok HTTP/1.1\r\nHost: x\r\nAcc"
REQUEST = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
NAME = "guarded.test"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def ok(request: web.Request) -> web.Response:
    if request.path == "/slow":
        await asyncio.sleep(float(request.query.get("for", "0")))
    return web.Response(text="ok")


@contextlib.asynccontextmanager
async def guarded(limits: ConnectionLimits, *, tls: ssl.SSLContext | None = None,
                  handler: Handler = ok) -> AsyncIterator[tuple[ConnectionGuard, int]]:
    guard = ConnectionGuard(limits, kind="test", tls=tls)
    app = web.Application(middlewares=[guard.middleware])
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           keepalive_timeout=limits.idle_timeout)
    await runner.setup()
    site = guard.site(runner, host="127.0.0.1", port=0)
    await site.start()
    try:
        assert site.port is not None
        yield guard, site.port
    finally:
        await runner.cleanup()


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts for NAME."""
    ca = issue_ca("test-ca", now=time.time(), validity=3600)
    pair = issue_serving(ca, (NAME,), now=time.time(), validity=3600)
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    return server, client


async def closed_after(reader: asyncio.StreamReader) -> float:
    """Seconds until the server closes the connection."""
    started = time.monotonic()
    with contextlib.suppress(OSError, ssl.SSLError):
        while await reader.read(65536):
            pass
    return time.monotonic() - started


async def get(port: int, path: str = "/ok", *, client: ssl.SSLContext | None = None) -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client, server_hostname=NAME if client else None)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    answer = await reader.read()
    writer.close()
    return answer


async def test_a_header_that_does_not_arrive_in_time_costs_its_connection() -> None:
    async with guarded(ConnectionLimits(header_timeout=0.3)) as (guard, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(HALF_HEADER)
        held = await asyncio.wait_for(closed_after(reader), 5)
        assert 0.25 <= held < 1.5
        assert guard.open == 0
        assert guard.expired == 1
        writer.close()


async def test_a_silent_tls_client_is_closed_within_the_header_timeout(
        tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    async with guarded(ConnectionLimits(header_timeout=0.3), tls=tls[0]) as (guard, port):
        # A socket that never starts its handshake, and one that stops after the handshake.
        silent, silent_writer = await asyncio.open_connection("127.0.0.1", port)
        half, half_writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls[1],
                                                          server_hostname=NAME)
        half_writer.write(HALF_HEADER)
        held = await asyncio.wait_for(asyncio.gather(closed_after(silent), closed_after(half)),
                                      5)
        assert all(seconds < 1.5 for seconds in held)
        assert guard.open == 0
        # A client that sends its request at once is answered over TLS.
        assert (await get(port, client=tls[1])).endswith(b"ok")
        silent_writer.close()
        half_writer.close()


async def test_a_request_in_progress_outlives_the_header_timeout() -> None:
    async with guarded(ConnectionLimits(header_timeout=0.2)) as (_, port):
        answer = await asyncio.wait_for(get(port, "/slow?for=0.6"), 5)
        assert answer.startswith(b"HTTP/1.1 200")
        assert answer.endswith(b"ok")


async def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() -> None:
    limits = ConnectionLimits(header_timeout=0.2, idle_timeout=0.6)
    async with guarded(limits) as (guard, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(2):
            # Idle longer than the header timeout, shorter than the idle one: still served.
            writer.write(REQUEST)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            assert await reader.readexactly(2) == b"ok"
            await asyncio.sleep(0.35)
        held = await asyncio.wait_for(closed_after(reader), 5)
        assert held < 1.0
        assert guard.open == 0
        writer.close()


async def test_the_next_request_on_a_kept_connection_gets_the_header_timeout() -> None:
    limits = ConnectionLimits(header_timeout=0.3, idle_timeout=30)
    async with guarded(limits) as (_, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(REQUEST)
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(2)
        writer.write(HALF_HEADER)
        held = await asyncio.wait_for(closed_after(reader), 5)
        assert held < 1.5  # not the 30 s of an idle connection
        writer.close()


async def test_at_the_bound_a_new_connection_replaces_the_oldest_waiting_one() -> None:
    limits = ConnectionLimits(header_timeout=30, max_connections=3)
    async with guarded(limits) as (guard, port):
        held = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(HALF_HEADER)
            held.append((reader, writer))
        await asyncio.sleep(0.05)
        assert guard.open == 3
        # A fourth caller is served; the first slow connection made room for it.
        assert (await asyncio.wait_for(get(port), 5)).endswith(b"ok")
        assert await asyncio.wait_for(closed_after(held[0][0]), 5) < 1.0
        assert guard.open == 2
        assert (guard.evicted, guard.refused, guard.peak) == (1, 0, 3)
        for _, writer in held:
            writer.close()


async def test_when_every_connection_is_in_a_request_a_new_one_is_refused() -> None:
    limits = ConnectionLimits(max_connections=2)
    release, both_in = asyncio.Event(), asyncio.Event()
    entered = 0

    async def busy(request: web.Request) -> web.Response:
        nonlocal entered
        entered += 1
        if entered == 2:
            both_in.set()
        await release.wait()
        return web.Response(text="ok")

    async with guarded(limits, handler=busy) as (guard, port):
        calls = [asyncio.create_task(get(port)) for _ in range(2)]
        await asyncio.wait_for(both_in.wait(), 5)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(REQUEST)
        assert await asyncio.wait_for(closed_after(reader), 5) < 1.0
        assert guard.refused == 1
        release.set()
        assert all(answer.endswith(b"ok") for answer in await asyncio.gather(*calls))
        writer.close()


async def test_a_flood_of_slow_tls_clients_stays_within_the_bound(
        tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    limits = ConnectionLimits(header_timeout=0.5, max_connections=50)
    connecting = asyncio.Semaphore(20)  # handshakes in flight, fewer than the bound
    async with guarded(limits, tls=tls[0]) as (guard, port):
        async def slow() -> float:
            started = time.monotonic()
            try:
                async with connecting:
                    reader, writer = await asyncio.open_connection(
                        "127.0.0.1", port, ssl=tls[1], server_hostname=NAME)
                    writer.write(HALF_HEADER)
            except (OSError, ssl.SSLError):  # made room for a newer one during its handshake
                return time.monotonic() - started
            try:
                return await closed_after(reader)
            finally:
                writer.close()

        flood = [asyncio.create_task(slow()) for _ in range(300)]
        assert (await asyncio.wait_for(get(port, client=tls[1]), 10)).endswith(b"ok")
        held = await asyncio.wait_for(asyncio.gather(*flood), 30)
        assert max(held) < 2.5
        assert guard.peak <= 50
        assert guard.open == 0


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="header_timeout must be positive"):
        ConnectionLimits(header_timeout=0)
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionLimits(max_connections=0)


def test_the_same_under_uvloop(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    """Production runs uvloop, whose transports (and TLS layer) are its own."""
    async def scenarios() -> None:
        await test_a_header_that_does_not_arrive_in_time_costs_its_connection()
        await test_a_silent_tls_client_is_closed_within_the_header_timeout(tls)
        await test_a_request_in_progress_outlives_the_header_timeout()
        await test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout()
        await test_at_the_bound_a_new_connection_replaces_the_oldest_waiting_one()
        await test_when_every_connection_is_in_a_request_a_new_one_is_refused()
        await test_a_flood_of_slow_tls_clients_stays_within_the_bound(tls)

    uvloop.run(scenarios())
