"""What one client may hold of a server: every server of the process (the webhook server,
metrics, probes) accepts its connections through a `ConnectionGuard`, which gives them Go's
`http.Server` timeouts, which aiohttp lacks, and bounds how many are open.

aiohttp keeps a connection that has not sent a complete request for its keep-alive timeout
(3630 s by default) and accepts any number of them: 2,000 sockets that each sent half a request
header held 2,000 file descriptors (and, over TLS, 60 MiB on uvloop, 550 MiB on asyncio's loop)
for an hour. Here every accepted socket is in one of three phases:

- *waiting for a request*: from accept, TLS handshake included, until the request's headers
  are in: at most `header_timeout` (Go's ReadHeaderTimeout, which covers the handshake too);
- *in a request*: from its headers until the handler returns; the server bounds that itself
  (the webhook server's body timeout and handler deadline);
- *idle*: between the requests of a keep-alive connection: at most `idle_timeout` (Go's
  IdleTimeout); the first byte of the next request starts a new `header_timeout`.

A socket past its phase's time is aborted, without TLS's close_notify exchange (a peer that
reads nothing would hold the socket through it). The request line and headers are bounded by
aiohttp's parser (8 KiB a line, 128 headers: about Go's 1 MiB MaxHeaderBytes).

**At `max_connections`** a new connection neither waits nor is refused outright: it takes the
place of the oldest connection that is not in a request (waiting for one, or idle), which is
aborted. Waiting would hold the new socket anyway, and refusing it would let whoever holds the
slots with slow connections keep the API server out; a connection that is not in a request
has cost the server nothing yet and is the nearest its timeout. A new connection is refused
(closed at once) only when every open one is in a request, which the handlers' deadlines
bound. One warning a minute says how many were dropped.

Deadlines are socket timeouts, on the event loop's clock (they are not decisions a test would
drive with a fake clock: the tests use short timeouts).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import structlog
from aiohttp import web

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "ConnectionGuard",
    "ConnectionLimits",
    "GuardedSite",
]

log = structlog.get_logger("connections")

# Go's ReadHeaderTimeout, shorter than controller-runtime's 32 s: every caller of these servers
# (the API server, the kubelet, a scraper) sends its request at once, and the API server's
# longest webhook timeout is 30 s, so a header that takes longer answers nobody.
DEFAULT_HEADER_TIMEOUT: Final = 10.0
# The body once the headers are in, for servers that read one (the webhook server): the API
# server sends it right after them.
DEFAULT_BODY_TIMEOUT: Final = 10.0
# controller-runtime's IdleTimeout, the keep-alive of Go's http.DefaultTransport: the API
# server keeps its idle connections to a webhook that long.
DEFAULT_IDLE_TIMEOUT: Final = 90.0
# A TLS connection held open costs about 30 KiB on uvloop (what `aiolbc run` uses) and 280 KiB on
# asyncio's own loop (a 256 KiB read buffer each): 256 hold at most about 70 MiB, and are far
# more than the API servers' calls in flight (one connection each: the server speaks HTTP/1.1).
DEFAULT_MAX_CONNECTIONS: Final = 256
# How long a TLS close waits for the peer's close_notify (asyncio's default is 30 s): a peer
# that has read the answer sends it at once.
_TLS_SHUTDOWN_TIMEOUT: Final = 5.0
_REPORT_INTERVAL: Final = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout", "idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"connection {name} must be positive")
        if self.max_connections < 1:
            raise ValueError("connection limit must be at least 1")


class _Connection(asyncio.Protocol):
    """One accepted socket, in front of aiohttp's protocol for it (`handler`): TLS when the
    guard has a context, and the phases of the module's docstring.

    Under TLS this object is first the socket's protocol, then the application protocol of
    the loop's TLS layer (`loop.start_tls`). Both ends of that switch may see data early:
    uvloop starts reading a socket once `connection_made` returns, so the client's hello can
    reach this object before `start_tls` takes the socket over (it is handed to the TLS layer
    then), and the TLS layer delivers what follows the handshake possibly before `start_tls`
    returns (it is kept until the handler is connected)."""

    def __init__(self, guard: ConnectionGuard, handler: asyncio.Protocol) -> None:
        self._guard = guard
        self.handler = handler
        self._socket: asyncio.Transport | None = None
        self._connected: asyncio.Transport | None = None  # what the handler uses
        self._switched = False  # the TLS layer is the socket's protocol now
        self._raw_early: list[bytes] = []  # the socket's bytes before that
        self._early: list[bytes] = []  # decrypted bytes before the handler is connected
        self._early_eof = False
        self._timer: asyncio.TimerHandle | None = None
        self.idle = False
        self.in_request = False
        self.released = False

    # ---- phases -----------------------------------------------------------------------------

    def _expire_in(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._expired)

    def _expired(self) -> None:
        self._timer = None
        self._guard.expired += 1
        self.abort()

    def request_started(self) -> None:
        self.in_request, self.idle = True, False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._guard.stop_waiting(self)

    def request_ended(self) -> None:
        if self.released:
            return
        self.in_request, self.idle = False, True
        self._guard.start_waiting(self)
        self._expire_in(self._guard.limits.idle_timeout)

    def abort(self) -> None:
        """Close the socket now (TLS included, no close_notify)."""
        if self._socket is not None:
            self._socket.abort()
        self.release()

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._guard.forget(self)

    # ---- the socket -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not registered as asyncio.Transport: no isinstance check.
        self._socket = cast(asyncio.Transport, transport)
        socket = self._socket
        if not self._guard.admit(self):
            socket.abort()
            self.released = True
            return
        self._expire_in(self._guard.limits.header_timeout)
        tls = self._guard.tls
        if tls is None:
            self._connect(socket)
            return
        socket.pause_reading()  # asyncio's loop then reads nothing until the TLS layer does
        self._guard.spawn(self._handshake(socket, tls))

    async def _handshake(self, transport: asyncio.Transport, tls: ssl.SSLContext) -> None:
        loop = asyncio.get_running_loop()
        starting = asyncio.ensure_future(loop.start_tls(
            transport, self, tls, server_side=True,
            ssl_handshake_timeout=self._guard.limits.header_timeout,
            ssl_shutdown_timeout=_TLS_SHUTDOWN_TIMEOUT))
        # One turn: `start_tls` makes its TLS protocol the socket's and queues that protocol's
        # start; what the socket gave this object before goes to it right after that start.
        await asyncio.sleep(0)
        self._switched = True
        early, self._raw_early = self._raw_early, []
        if early and transport.get_protocol() is not self:
            loop.call_soon(_feed, transport.get_protocol(), early)
        try:
            wrapped = await starting
        except Exception as exc:  # a failed handshake, a peer gone, a timeout: its loss alone
            log.debug("TLS handshake failed", server=self._guard.kind,
                      error=str(exc) or type(exc).__name__)
            self.abort()
            return
        if wrapped is None or self.released:  # closed during the handshake
            self.abort()
            return
        self._connect(wrapped)

    def _connect(self, transport: asyncio.Transport) -> None:
        self._connected = transport
        self.handler.connection_made(transport)
        early, self._early = self._early, []
        for data in early:
            self.handler.data_received(data)
        if self._early_eof:
            self.handler.eof_received()

    def data_received(self, data: bytes) -> None:
        if self._connected is None:
            (self._early if self._switched else self._raw_early).append(data)
            return
        if self.idle:
            # The next request has begun: its headers get their own time.
            self.idle = False
            self._expire_in(self._guard.limits.header_timeout)
        self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        if self._connected is not None:
            return self.handler.eof_received()
        if not self._switched:
            return None  # gone before its handshake: close
        self._early_eof = True
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.release()
        if self._connected is not None:
            self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._connected is not None:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self._connected is not None:
            self.handler.resume_writing()


def _feed(protocol: Any, chunks: list[bytes]) -> None:
    """Hand `chunks`, read off the socket, to the TLS layer that has taken it over (a
    BufferedProtocol in asyncio and in uvloop)."""
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                buffer = protocol.get_buffer(len(view))
                size = min(len(buffer), len(view))
                buffer[:size] = view[:size]
                protocol.buffer_updated(size)
                view = view[size:]
    except Exception as exc:  # the connection failed meanwhile: its own loss
        log.debug("TLS handshake failed", error=str(exc) or type(exc).__name__)


class ConnectionGuard:
    """The connections of one listening site. `middleware` goes on the aiohttp Application
    (it tells the guard when a request is in), `site(...)` listens."""

    def __init__(self, limits: ConnectionLimits | None = None, *, kind: str,
                 tls: ssl.SSLContext | None = None) -> None:
        self.limits = limits or ConnectionLimits()
        self.kind = kind
        self.tls = tls
        self._open: dict[_Connection, None] = {}
        # Those not in a request, oldest first: the ones a new connection may replace.
        self._waiting: dict[_Connection, None] = {}
        self._by_handler: dict[Any, _Connection] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.peak = 0
        self.expired = 0
        self.evicted = 0
        self.refused = 0
        self._reported = (0, 0)
        self._report_at = 0.0

    @property
    def open(self) -> int:
        """Sockets open now, TLS handshakes included."""
        return len(self._open)

    # ---- what the connections call ----------------------------------------------------------

    def accept(self, handler: asyncio.Protocol) -> _Connection:
        return _Connection(self, handler)

    def admit(self, conn: _Connection) -> bool:
        if len(self._open) >= self.limits.max_connections:
            if self._waiting:
                self.evicted += 1
                next(iter(self._waiting)).abort()
            else:
                self.refused += 1
                self._report()
                return False
            self._report()
        self._open[conn] = None
        self._waiting[conn] = None
        self._by_handler[conn.handler] = conn
        self.peak = max(self.peak, len(self._open))
        return True

    def start_waiting(self, conn: _Connection) -> None:
        self._waiting.pop(conn, None)
        self._waiting[conn] = None

    def stop_waiting(self, conn: _Connection) -> None:
        self._waiting.pop(conn, None)

    def forget(self, conn: _Connection) -> None:
        self._open.pop(conn, None)
        self._waiting.pop(conn, None)
        if self._by_handler.get(conn.handler) is conn:
            del self._by_handler[conn.handler]

    def spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _report(self) -> None:
        """At most one line a minute: a flood of connections must not become a flood of logs."""
        now = asyncio.get_running_loop().time()
        if now < self._report_at:
            return
        self._report_at = now + _REPORT_INTERVAL
        evicted, refused = self.evicted - self._reported[0], self.refused - self._reported[1]
        self._reported = (self.evicted, self.refused)
        log.warning("connection limit reached", server=self.kind,
                    max_connections=self.limits.max_connections,
                    waiting_connections_closed=evicted, connections_refused=refused)

    # ---- the application side ---------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
        conn = self._by_handler.get(request.protocol)
        if conn is not None:
            conn.request_started()
        try:
            return await handler(request)
        finally:
            if conn is not None:
                conn.request_ended()

    def site(self, runner: web.BaseRunner, *, host: str | None, port: int,
             backlog: int = 128) -> GuardedSite:
        return GuardedSite(runner, self, host=host, port=port, backlog=backlog)

    async def close(self) -> None:
        """Abort every connection not in a request (aiohttp lets those in one finish)."""
        for conn in list(self._open):
            if not conn.in_request:
                conn.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class GuardedSite(web.BaseSite):
    """aiohttp's TCPSite, with every accepted socket going through the guard (which does the
    TLS handshake itself, under its header timeout)."""

    __slots__ = ("_bound_port", "_guard", "_host", "_port")

    def __init__(self, runner: web.BaseRunner, guard: ConnectionGuard, *, host: str | None,
                 port: int, backlog: int = 128) -> None:
        super().__init__(runner, ssl_context=guard.tls, backlog=backlog)
        self._guard = guard
        self._host = host
        self._port = port
        self._bound_port: int | None = None

    @property
    def name(self) -> str:
        scheme = "https" if self._guard.tls else "http"
        return f"{scheme}://{self._host or '0.0.0.0'}:{self._bound_port or self._port}"

    @property
    def port(self) -> int | None:
        return self._bound_port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: self._guard.accept(server()),
                                                self._host, self._port, backlog=self._backlog)
        sockets = self._server.sockets
        self._bound_port = int(sockets[0].getsockname()[1]) if sockets else self._port

    async def stop(self) -> None:
        await super().stop()
        with contextlib.suppress(RuntimeError):  # no loop any more: nothing left to close
            await self._guard.close()
