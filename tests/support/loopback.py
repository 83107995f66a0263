"""Hand-written servers for a test on loopback ports: an aiohttp app, a raw TCP responder, a
forward HTTP proxy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 (a free port) until the block ends; yields its URL."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


Respond = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_serving(respond: Respond) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 whose every connection `respond` answers byte by byte (for
    responses no HTTP server library would write); yields its URL. The connection is closed
    after `respond` returns."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await respond(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def forward_proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """A plain-HTTP forward proxy on 127.0.0.1 (absolute-form requests to loopback servers
    only); yields its URL and the request targets it was asked for."""
    asked: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target, version = head.split(b"\r\n", 1)[0].decode().split(" ")
        asked.append(target)
        url = urlsplit(target)
        if url.hostname != "127.0.0.1" or url.port is None:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        upstream_reader, upstream = await asyncio.open_connection(url.hostname, url.port)
        origin = url.path + (f"?{url.query}" if url.query else "")
        upstream.write(f"{method} {origin} {version}\r\n".encode() + head.split(b"\r\n", 1)[1])
        await asyncio.gather(pipe(reader, upstream), pipe(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", asked
    finally:
        server.close()
        await server.wait_closed()
