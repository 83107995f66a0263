"""The admin endpoints under `/_envtest/`: fault injection and inspection over HTTP, for the
standalone server (in-process users call the `EnvTestServer` methods directly)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, Protocol

from aiohttp import web

from runtime.envtest.faults import Faults, RequestRecord
from runtime.envtest.rbac import Denial
from runtime.envtest.routes import json_response, method_not_allowed, not_found_path
from runtime.envtest.status import bad_request

ADMIN_PREFIX = "/_envtest/"


class AdminTarget(Protocol):
    """The parts of `EnvTestServer` the endpoints drive. Named here, rather than importing the
    server, so that the server can own its admin handlers without an import cycle."""

    faults: Faults
    bookmark_interval: float

    @property
    def revision(self) -> int: ...
    @property
    def watch_count(self) -> int: ...
    @property
    def rbac(self) -> bool: ...
    @property
    def denials(self) -> list[Denial]: ...
    @property
    def request_log(self) -> list[RequestRecord]: ...
    def clear_request_log(self) -> None: ...
    def clear_denials(self) -> None: ...
    def compact(self) -> None: ...
    async def close_watches(self, *, timeout: float = 2.0) -> None: ...
    async def pause(self) -> None: ...
    async def resume(self) -> None: ...


class AdminHandlers:
    """`POST /_envtest/faults` {n, verb, resource, status, retry_after}; `DELETE` clears;
    `PUT /_envtest/latency` {seconds}; `POST /_envtest/close-watches`;
    `POST /_envtest/compact`; `POST /_envtest/pause` {seconds} (resumes by itself);
    `GET|DELETE /_envtest/requests`; `GET|DELETE /_envtest/denials` (403s, with RBAC on);
    `PUT /_envtest/bookmark-interval` {seconds};
    `GET /_envtest/state`."""

    def __init__(self, server: AdminTarget) -> None:
        self._server = server
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        name = request.path[len(ADMIN_PREFIX):].strip("/")
        method = request.method
        server = self._server
        body = await _body(request)
        if name == "state" and method == "GET":
            return json_response({"revision": server.revision, "watches": server.watch_count,
                                  "bookmarkInterval": server.bookmark_interval,
                                  "faults": server.faults.to_dict(),
                                  "rbac": server.rbac, "denials": len(server.denials)})
        if name == "faults":
            if method == "POST":
                try:
                    server.faults.fail_next(
                        int(body.get("n", 1)), verb=body.get("verb"),
                        resource=body.get("resource"), status=int(body.get("status", 500)),
                        retry_after=_float(body.get("retry_after")))
                except (TypeError, ValueError) as exc:
                    raise bad_request(f"invalid fault: {exc}") from None
                return json_response(server.faults.to_dict())
            if method == "DELETE":
                server.faults.clear()
                return json_response(server.faults.to_dict())
            if method == "GET":
                return json_response(server.faults.to_dict())
        if name == "latency" and method in ("PUT", "POST"):
            try:
                server.faults.set_latency(float(body.get("seconds", 0)))
            except (TypeError, ValueError) as exc:
                raise bad_request(f"invalid latency: {exc}") from None
            return json_response(server.faults.to_dict())
        if name == "bookmark-interval" and method in ("PUT", "POST"):
            seconds = _float(body.get("seconds"))
            if seconds is None or seconds <= 0:
                raise bad_request("seconds must be a positive number")
            server.bookmark_interval = seconds
            return json_response({"bookmarkInterval": seconds})
        if name == "close-watches" and method == "POST":
            count = server.watch_count
            await server.close_watches()
            return json_response({"closed": count})
        if name == "compact" and method == "POST":
            server.compact()
            return json_response({"compacted": server.revision})
        if name == "pause" and method == "POST":
            seconds = _float(body.get("seconds", 1.0))
            if seconds is None or seconds <= 0:
                raise bad_request("seconds must be a positive number")
            task = asyncio.create_task(self._pause_for(seconds))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return json_response({"pausedFor": seconds}, status=202)
        if name == "requests":
            if method == "GET":
                return json_response([dataclasses.asdict(r) for r in server.request_log])
            if method == "DELETE":
                server.clear_request_log()
                return json_response([])
        if name == "denials":
            if method == "GET":
                return json_response([dataclasses.asdict(d) for d in server.denials])
            if method == "DELETE":
                server.clear_denials()
                return json_response([])
        if name in ("state", "faults", "latency", "bookmark-interval", "close-watches",
                    "compact", "pause", "requests", "denials"):
            raise method_not_allowed(method, request.path)
        raise not_found_path()

    async def cancel(self) -> None:
        """Stop pending timed pauses (the server is stopping)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _pause_for(self, seconds: float) -> None:
        # Let the 202 reach the client before the connection is dropped.
        await asyncio.sleep(0.05)
        await self._server.pause()
        await asyncio.sleep(seconds)
        await self._server.resume()


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise bad_request("admin request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise bad_request("admin request body must be a JSON object")
    return body


def _float(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise bad_request(f"not a number: {value!r}") from None
