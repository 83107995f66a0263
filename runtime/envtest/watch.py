"""Watch streams: newline-delimited JSON events, one flush per batch of ready events.

A stream subscribes to the store before its first await, so no event can fall between its
starting point and its live feed. Each event's line is serialized once and shared by every
stream that sends it unchanged; selectors turn MODIFIED into ADDED/DELETED when an object
enters or leaves the selection, as the watch cache does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from runtime.envtest.api import encode_for
from runtime.envtest.registry import ResourceType
from runtime.envtest.status import status_body
from runtime.envtest.store import Entry, Event, dumps

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# How often an idle stream checks that its client is still there.
_LIVENESS_PERIOD = 0.5

Match = Callable[[Mapping[str, Any]], bool]


def error_line(code: int, message: str, reason: str) -> bytes:
    return dumps({"type": "ERROR", "object": status_body(code, message, reason=reason)}) + b"\n"


class WatchStream:
    """One open watch. `push` is the store listener; `serve` writes to the client."""

    def __init__(self, *, rt: ResourceType, namespace: str | None, match: Match | None,
                 bookmarks: bool, timeout: float | None,
                 bookmark_interval: Callable[[], float], revision: Callable[[], int],
                 as_table: Callable[[Entry], Any] | None = None) -> None:
        self.rt = rt
        # Set when the client asked for Table objects (kubectl get -w).
        self._as_table = as_table
        self.namespace = namespace
        self._match = match
        self._bookmarks = bookmarks
        self._timeout = timeout
        self._interval = bookmark_interval
        self._revision = revision
        self._pending: deque[Event | bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    # -- feeding ---------------------------------------------------------------------------

    def push(self, event: Event) -> None:
        if self.namespace is not None and event.namespace != self.namespace:
            return
        self._pending.append(event)
        self._wake()

    def push_line(self, line: bytes) -> None:
        self._pending.append(line)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def initial_line(self, entry: Entry) -> bytes | None:
        if self._match is not None and not self._match(entry.obj):
            return None
        return self._encode("ADDED", entry)

    def _encode(self, kind: str, entry: Entry) -> bytes:
        if self._as_table is not None:
            return dumps({"type": kind, "object": self._as_table(entry)}) + b"\n"
        return b'{"type":"' + kind.encode() + b'","object":' + encode_for(entry, self.rt) + b"}\n"

    def bookmark_line(self, *, initial_events_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(self._revision())}
        if initial_events_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return dumps({"type": "BOOKMARK", "object": {
            "kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}}) + b"\n"

    def render(self, event: Event) -> bytes | None:
        kind = event.type
        if self._match is not None:
            now = self._match(event.entry.obj)
            if kind == "MODIFIED":
                before = event.old is not None and self._match(event.old.obj)
                if now and not before:
                    kind = "ADDED"
                elif before and not now:
                    kind = "DELETED"
                elif not now:
                    return None
            elif not now:
                return None
        if self._as_table is not None or \
                event.entry.obj.get("apiVersion") != self.rt.api_version:
            return self._encode(kind, event.entry)
        return event.line(kind)

    # -- serving ---------------------------------------------------------------------------

    async def serve(self, request: web.Request, first: list[bytes]) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        deadline = loop.time() + self._timeout if self._timeout is not None else None
        last_bookmark = loop.time()
        try:
            if first:
                await response.write(b"".join(first))
            while not self._closed:
                if self._pending:
                    lines: list[bytes] = []
                    while self._pending:
                        item = self._pending.popleft()
                        line = item if isinstance(item, bytes) else self.render(item)
                        if line is not None:
                            lines.append(line)
                    if lines:
                        await response.write(b"".join(lines))
                    continue
                now = loop.time()
                if deadline is not None and now >= deadline:
                    break
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                if self._bookmarks and now - last_bookmark >= self._interval():
                    last_bookmark = now
                    await response.write(self.bookmark_line())
                    continue
                wait = _LIVENESS_PERIOD
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if self._bookmarks:
                    wait = min(wait, last_bookmark + self._interval() - now)
                await self._sleep(loop, max(wait, 0.0))
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        return response

    async def _sleep(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
