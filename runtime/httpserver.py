"""The metrics endpoint and the health probes, as controller-runtime serves them.

`MetricsServer` serves `/metrics` (Prometheus text, or OpenMetrics when asked) from a registry on
every replica, leader or not; when secured, over HTTPS behind a request filter (controller-
runtime's secure metrics: runtime/delegatedauth.py authenticates and authorizes each caller).

`ProbeServer` serves `/healthz` and `/readyz` from named checks with controller-runtime's
output: `ok`, or on failure (or `?verbose`) one `[+]name ok` / `[-]name failed: reason
withheld` line per check, `?exclude=<name>` to skip one, and
`/healthz/<name>` for a single check; any failure answers HTTP 500.

Both accept connections through a `ConnectionGuard` (runtime/connections.py): a connection
that has not sent its request within 10 s, or stays idle 90 s, is closed, and at most 64 are
open (a kubelet and a few scrapers need a handful), so nobody who can reach the port holds the
process's memory or file descriptors with slow or idle connections.

Bind addresses use the Go form: `host:port`, `:port` (all interfaces), `[::1]:port`; `"0"` or ""
disables the server. Port 0 picks a free port (tests). A failed bind raises `BindError`, naming
the server and the address.
"""

from __future__ import annotations

import inspect
import os
import re
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from runtime.connections import ConnectionGuard, ConnectionLimits

__all__ = [
    "BindAddress",
    "BindAddressError",
    "BindError",
    "Check",
    "MetricsServer",
    "ProbeServer",
    "RequestFilter",
    "parse_bind_address",
]

DEFAULT_METRICS_BIND_ADDRESS = ":8080"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS = ":61779"
# The kubelet's probes and a few scrapers: far fewer connections than the webhook server's.
DEFAULT_LIMITS: Final = ConnectionLimits(max_connections=64)

# A check passes when it returns True or None and fails when it returns False or raises.
Check = Callable[[], bool | Awaitable[bool | None] | None]
# Runs before a handler: a response to send instead (401, 403), or None to go on.
RequestFilter = Callable[[web.Request], Awaitable[web.StreamResponse | None]]

log = structlog.get_logger("httpserver")

_BIND = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\[\]]*)):(?P<port>\d{1,5})$")


class BindAddressError(ValueError):
    """A bind address that is not `host:port`, `:port` or `0`."""


class BindError(OSError):
    """A server could not listen on its address (taken, not local, unresolvable)."""

    def __init__(self, kind: str, address: str, reason: str, errno: int | None) -> None:
        super().__init__(errno, f"cannot serve {kind} on {address}: {reason}")
        self.kind = kind
        self.address = address
        self.reason = reason

    def __str__(self) -> str:
        return str(self.strerror)


def bind_failure(err: OSError, host: str | None) -> str:
    if isinstance(err, socket.gaierror):
        return f"cannot resolve {host!r} ({err.strerror})"
    if err.errno:
        return os.strerror(err.errno).lower()
    return str(err)


@dataclass(frozen=True, slots=True)
class BindAddress:
    host: str | None  # None: every interface
    port: int


def parse_bind_address(address: str) -> BindAddress | None:
    """Parse a Go-style listen address; None means the server is disabled."""
    address = address.strip()
    if address in ("", "0"):
        return None
    match = _BIND.match(address)
    if match is None:
        raise BindAddressError(
            f"invalid bind address {address!r}: expected host:port, :port, or 0 to disable")
    port = int(match["port"])
    if port > 65535:
        raise BindAddressError(f"invalid bind address {address!r}: port {port} is out of range")
    host = match["v6"] or match["host"] or None
    return BindAddress(host=host, port=port)


class _Server:
    """An aiohttp app on one address, started and stopped with the process."""

    def __init__(self, *, bind_address: str, kind: str, tls: ssl.SSLContext | None = None,
                 limits: ConnectionLimits = DEFAULT_LIMITS) -> None:
        self._address = parse_bind_address(bind_address)
        self._kind = kind
        self._tls = tls
        self._limits = limits
        self._runner: web.AppRunner | None = None
        self._guard: ConnectionGuard | None = None
        self._port: int | None = None

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def port(self) -> int | None:
        """The bound port once started (the real one when 0 was asked for)."""
        return self._port

    @property
    def connections(self) -> ConnectionGuard | None:
        """The open connections' guard while serving (its counts, for tests)."""
        return self._guard

    @property
    def url(self) -> str:
        if self._address is None or self._port is None:
            raise RuntimeError(f"{self._kind} server is not serving")
        host = self._address.host or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{'https' if self._tls else 'http'}://{host}:{self._port}"

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        if self._address is None or self._runner is not None:
            return
        guard = ConnectionGuard(self._limits, kind=self._kind, tls=self._tls)
        app = web.Application(middlewares=[guard.middleware])
        self._routes(app)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               keepalive_timeout=self._limits.idle_timeout)
        await runner.setup()
        site = guard.site(runner, host=self._address.host, port=self._address.port)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            host = self._address.host
            shown = f"[{host}]" if host and ":" in host else (host or "")
            raise BindError(self._kind, f"{shown}:{self._address.port}",
                            bind_failure(err, host), err.errno) from err
        self._runner = runner
        self._guard = guard
        self._port = int(runner.addresses[0][1])
        # Debug only: the Manager logs its servers once all of them are up, so that a process
        # whose second bind fails prints nothing but that failure.
        log.debug(f"serving {self._kind}", address=self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._guard = None
            self._port = None

    async def __aenter__(self) -> _Server:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class MetricsServer(_Server):
    """`/metrics`; with `tls` over HTTPS, and with `request_filter` only for the callers it lets
    through (controller-runtime's `SecureServing` and `FilterProvider`)."""

    def __init__(self, registry: CollectorRegistry, *,
                 bind_address: str = DEFAULT_METRICS_BIND_ADDRESS,
                 tls: ssl.SSLContext | None = None,
                 request_filter: RequestFilter | None = None,
                 limits: ConnectionLimits = DEFAULT_LIMITS) -> None:
        super().__init__(bind_address=bind_address, kind="metrics", tls=tls, limits=limits)
        self._registry = registry
        self._filter = request_filter

    @property
    def secure(self) -> bool:
        return self._tls is not None

    def _routes(self, app: web.Application) -> None:
        app.router.add_get("/metrics", self._metrics)

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        if self._filter is not None:
            refused = await self._filter(request)
            if refused is not None:
                return refused
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        body = encoder(self._registry)
        return web.Response(body=body, headers={"Content-Type": content_type})


class ProbeServer(_Server):
    def __init__(self, *, bind_address: str = DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
                 limits: ConnectionLimits = DEFAULT_LIMITS) -> None:
        super().__init__(bind_address=bind_address, kind="health probes", limits=limits)
        self._checks: dict[str, dict[str, Check]] = {"healthz": {}, "readyz": {}}

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._add("healthz", name, check)

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._add("readyz", name, check)

    def _add(self, endpoint: str, name: str, check: Check) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid {endpoint} check name {name!r}")
        if name in self._checks[endpoint]:
            raise ValueError(f"{endpoint} check {name!r} already exists")
        self._checks[endpoint][name] = check

    def _routes(self, app: web.Application) -> None:
        for endpoint in ("healthz", "readyz"):
            handler = self._aggregated(endpoint)
            app.router.add_get(f"/{endpoint}", handler)
            app.router.add_get(f"/{endpoint}/", handler)
            app.router.add_get(f"/{endpoint}/{{name}}", self._single(endpoint))

    @staticmethod
    async def _run(name: str, check: Check) -> bool:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
        except Exception as err:
            log.info("health check failed", checker=name, error=str(err))
            return False
        if result is False:
            log.info("health check failed", checker=name)
            return False
        return True

    def _aggregated(self, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            checks = self._checks[endpoint]
            excluded = set(request.query.getall("exclude", []))
            lines: list[tuple[str, str]] = []
            failed = False
            for name, check in checks.items():
                if name in excluded:
                    excluded.discard(name)
                    lines.append((name, f"[+]{name} excluded: ok"))
                elif await self._run(name, check):
                    lines.append((name, f"[+]{name} ok"))
                else:
                    lines.append((name, f"[-]{name} failed: reason withheld"))
                    failed = True
            if not checks:
                lines.append(("ping", "[+]ping ok"))
            status = 500 if failed else 200
            if not failed and "verbose" not in request.query:
                return _text("ok", status)
            # Check errors stay in the log: this endpoint is unauthenticated.
            body = [line for _, line in sorted(lines)]
            if excluded:
                names = ",".join(f'"{name}"' for name in sorted(excluded))
                body.append(f"warn: some health checks cannot be excluded: no matches for {names}")
            # controller-runtime prints "healthz" for /readyz too; kept for scripts that grep.
            body.append("healthz check failed" if failed else "healthz check passed")
            return _text("\n".join(body) + "\n", status)
        return handler

    def _single(self, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            name = request.match_info["name"]
            checks = self._checks[endpoint]
            if not checks and name == "ping":
                return _text("ok", 200)
            check = checks.get(name)
            if check is None:
                return _text("404 page not found\n", 404)
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
            except Exception as err:
                # The per-check path names its reason, as controller-runtime's CheckHandler.
                return _text(f"internal server error: {err}\n", 500)
            if result is False:
                return _text(f"internal server error: check {name} failed\n", 500)
            return _text("ok", 200)
        return handler


def _text(body: str, status: int) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})
