"""A watch's events, read straight off its connection.

Between the socket and a cache, a watch event used to pass through aiohttp's parser callbacks,
its stream reader, a future waking the reader's task, and two async generators. At a hundred
events a second the process is idle between events and every one of those layers runs cold;
they cost more than the event's own work. Here one protocol object reads the HTTP response
(status, headers, chunked body), splits the body into lines, and hands each decoded event to
the consumer within the same callback (`deliver`); the consumer that wants to wait for events
instead (`async for`) gets them through a queue, with the socket paused while the queue is full.

`EventStream` is the stream of one watch whatever carries its bytes: this module's protocol, or
aiohttp's reader when the client goes through an HTTP proxy (runtime/client.py). The protocol
reads what a Kubernetes API server answers to a watch (HTTP/1.1; chunked, Content-Length or
close-delimited body) and takes every byte of it as untrusted: a malformed status line, header
block or chunk ends the stream with one `ServerError`, never more memory than the limits below.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any, cast

from multidict import CIMultiDict

from runtime.errors import ServerError, error_from_status
from runtime.objects import strip_managed_fields

log = logging.getLogger(__name__)

Event = dict[str, Any]
Handler = Callable[[Event], None]

# What the protocol accepts before it gives up on a response: a status line and headers of at
# most 64 KiB (the API server's are a few hundred bytes), a chunk-size line of at most 1 KiB,
# and an error answer's body kept up to 1 MiB for its message.
MAX_HEAD = 64 * 1024
_MAX_CHUNK_LINE = 1024
_MAX_ERROR_BODY = 1024 * 1024
# One event's line: far above what an API server sends (its objects are limited to a few MiB),
# far below what would exhaust the process.
MAX_LINE = 64 * 1024 * 1024
# Lines waiting for a consumer that pulls (`async for`): reading pauses above the first figure
# and resumes below the second, as aiohttp's own reader does with its buffer.
_PAUSE_AT = 4 * 1024 * 1024
_RESUME_AT = 1024 * 1024
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _malformed(what: str) -> ServerError:
    return ServerError(f"malformed watch response: {what}", code=0)


def watch_event(event: Any) -> Event:
    """A decoded watch line as the event it must be; an ERROR event raises its typed error."""
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise ServerError(f"malformed watch event: {str(event)[:200]}", code=0)
    obj = event["object"]
    if event.get("type") == "ERROR":
        code = obj.get("code")
        raise error_from_status(code if type(code) is int and code > 0 else 500, obj)
    strip_managed_fields(obj)
    return event


class EventStream:
    """The events of one open watch, until the server ends it, it goes silent for
    `idle_timeout` seconds, or the connection drops (each an end, not an error: the caller
    re-watches from its last resourceVersion). An ERROR event or a malformed response raises
    its error to whoever consumes the stream. `close` releases what carries the bytes."""

    def __init__(self, *, decode: Callable[[bytes], Any], idle_timeout: float | None,
                 close: Callable[[], None], pause: Callable[[bool], None] | None = None,
                 max_line: int = MAX_LINE) -> None:
        self._decode = decode
        self._max_line = max_line
        self._parts_size = 0
        self._close_source = close
        self._pause = pause
        self._loop = asyncio.get_running_loop()
        self._parts: list[bytes] = []  # the start of a line whose end has not come yet
        self._lines: collections.deque[bytes] = collections.deque()  # pulled, not yet taken
        self._queued = 0
        self._paused = False
        self._handler: Handler | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._error: BaseException | None = None
        self._finished: asyncio.Future[None] = self._loop.create_future()
        self.idle_timeout = idle_timeout
        self._last = self._loop.time()
        self._watchdog: asyncio.TimerHandle | None = None
        if idle_timeout is not None:
            self._watchdog = self._loop.call_at(self._last + idle_timeout, self._check_idle)

    # ---- what the source calls ---------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Body bytes, in order, however the connection cut them."""
        if self._ended:
            return
        self._last = self._loop.time()
        end = data.find(b"\n")
        if end < 0:
            if data:
                self._parts.append(data)
                self._parts_size += len(data)
                if self._parts_size > self._max_line:
                    self.fail(ServerError(f"malformed watch response: a line longer than "
                                          f"{self._max_line} bytes", code=0))
            return
        if end == len(data) - 1 and not self._parts:
            # The usual read: one whole event, decoded as it came (its newline is whitespace
            # to JSON) instead of copied out of the read first.
            if not data.isspace():
                self._line(data)
            return
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        lines = data.split(b"\n")
        tail = lines.pop()
        self._parts_size = len(tail)
        if tail:
            self._parts.append(tail)
        if self._parts_size > self._max_line:
            self.fail(ServerError(f"malformed watch response: a line longer than "
                                  f"{self._max_line} bytes", code=0))
            return
        for line in lines:
            if self.ended:  # an ERROR event, or the consumer's error, ended it
                return
            if line and not line.isspace():
                self._line(line)

    def end(self, *, clean: bool) -> None:
        """The body is over. After a clean end a last line without its newline is an event
        too; after a cut one it is a fragment, dropped."""
        if self._ended:
            return
        rest = b"".join(self._parts)
        self._parts, self._parts_size = [], 0
        if clean and rest.strip():
            self._line(rest)
        self._finish(None)

    def fail(self, error: BaseException) -> None:
        """The response cannot be read on (malformed): the consumer gets `error`."""
        self._finish(error)

    # ---- what the consumer calls -------------------------------------------------------------

    async def deliver(self, handler: Handler) -> None:
        """Hand every event to `handler` as it is read, until the stream ends. The events
        already read and not yet taken go first."""
        while self._lines:
            line = self._lines.popleft()
            self._queued -= len(line)
            try:
                handler(self._event(line))
            except Exception:
                self.close()
                raise
        self._resume()
        if not self._ended:
            self._handler = handler
            try:
                await asyncio.shield(self._finished)
            finally:
                self._handler = None
        if self._error is not None:
            raise self._error

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        while not self._lines:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        line = self._lines.popleft()
        self._queued -= len(line)
        if self._paused and self._queued < _RESUME_AT:
            self._resume()
        try:
            return self._event(line)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Stop reading and release the connection; events not yet taken are dropped."""
        if not self._ended:
            self._finish(None)
        self._lines.clear()
        self._queued = 0

    @property
    def ended(self) -> bool:
        return self._ended

    # ---- inside ------------------------------------------------------------------------------

    def _event(self, line: bytes) -> Event:
        try:
            decoded = self._decode(line)
        except Exception as exc:
            raise ServerError(f"malformed watch event: {exc}"[:300], code=0) from None
        return watch_event(decoded)

    def _line(self, line: bytes) -> None:
        handler = self._handler
        if handler is None:
            self._lines.append(line)
            self._queued += len(line)
            if not self._paused and self._queued > _PAUSE_AT and self._pause is not None:
                self._paused = True
                self._pause(True)
            self._wake()
            return
        try:
            handler(self._event(line))
        except Exception as exc:  # the consumer's error (or the event's), raised to it
            self._finish(exc)

    def _resume(self) -> None:
        if self._paused and self._pause is not None:
            self._paused = False
            self._pause(False)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _finish(self, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._error = error
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._close_source()
        if not self._finished.done():
            self._finished.set_result(None)
        self._wake()

    def _check_idle(self) -> None:
        assert self.idle_timeout is not None
        if self._paused:  # silent because we stopped reading, not the server
            self._last = self._loop.time()
        due = self._last + self.idle_timeout
        if self._loop.time() < due:  # data arrived meanwhile: wait for the rest of the silence
            self._watchdog = self._loop.call_at(due, self._check_idle)
            return
        self._watchdog = None
        log.debug("watch ended: silent for %gs", self.idle_timeout)
        self._finish(None)


class ResponseHead:
    """A response's status and headers."""

    def __init__(self, status: int, headers: CIMultiDict[str]) -> None:
        self.status = status
        self.headers = headers


class WatchProtocol(asyncio.Protocol):
    """Reads one HTTP/1.1 response to a watch request. `head` resolves with the status and
    headers; a 200's body then goes to `stream` (set by the opener once the head is in), any
    other status's body (up to 1 MiB) to `error_body`."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.head: asyncio.Future[ResponseHead] = loop.create_future()
        self.error_body: asyncio.Future[bytes] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.stream: EventStream | None = None
        self._buffer = b""
        self._status = 0
        self._chunked = False
        self._length: int | None = None  # bytes of body left, when the length is known
        self._chunk_left = 0  # bytes of the current chunk not yet read (chunked)
        self._chunk_crlf = False  # the CRLF after a chunk's data is due
        self._trailers = False  # the last chunk came: trailers until the empty line
        self._in_body = False
        self._done = False
        self._clean = False  # how the body ended, once it did
        self._failure: ServerError | None = None
        self._pending: list[bytes] = []  # body bytes read before the stream was set
        self._error_parts: list[bytes] = []
        self._error_size = 0

    # ---- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not registered as asyncio.Transport: no isinstance check.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        if not self._in_body:
            data = self._read_head(data)
            if not self._in_body:
                return
        if self._chunked:
            self._read_chunked(data)
        elif self._length is not None:
            take = data[:self._length]
            self._length -= len(take)
            self._body(take)
            if self._length == 0:
                self._end(clean=True)
        else:
            self._body(data)

    def eof_received(self) -> bool | None:
        # A close-delimited body ends cleanly here; any other body was cut short.
        self._end(clean=self._in_body and not self._chunked and self._length is None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.head.done():
            self.head.set_exception(ServerError(
                f"connection closed before the response: {exc or 'EOF'}", code=0))
        self._end(clean=exc is None and self._in_body and not self._chunked
                  and self._length is None)

    # ---- the opener --------------------------------------------------------------------------

    def attach(self, stream: EventStream) -> None:
        """Start handing the body to `stream` (what came with the head first)."""
        self.stream = stream
        pending, self._pending = self._pending, []
        for data in pending:
            stream.feed(data)
        if self._failure is not None:
            stream.fail(self._failure)
        elif self._done:
            stream.end(clean=self._clean)

    def pause(self, paused: bool) -> None:
        if self.transport is not None and not self.transport.is_closing():
            if paused:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    def close(self) -> None:
        self._done = True
        if self.transport is not None:
            self.transport.close()

    # ---- inside ------------------------------------------------------------------------------

    def _read_head(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEAD:
                self._fail(_malformed(f"no end of headers in {MAX_HEAD} bytes"))
            else:
                self._buffer = buffer
            return b""
        if end > MAX_HEAD:
            self._fail(_malformed(f"headers longer than {MAX_HEAD} bytes"))
            return b""
        self._buffer = b""
        lines = buffer[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if (len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0")
                or len(parts[1]) != 3 or not parts[1].isdigit()):
            self._fail(_malformed(f"status line {lines[0][:100]!r}"))
            return b""
        headers: CIMultiDict[str] = CIMultiDict()
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                self._fail(_malformed(f"header line {line[:100]!r}"))
                return b""
            headers.add(name, value.strip())
        self._status = int(parts[1])
        encoding = headers.get("transfer-encoding", "").lower()
        if encoding:
            if encoding != "chunked":
                self._fail(_malformed(f"transfer-encoding {encoding[:50]!r}"))
                return b""
            self._chunked = True
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit() or len(length) > 18:
                self._fail(_malformed(f"content-length {length[:50]!r}"))
                return b""
            self._length = int(length)
        self._in_body = True
        self.head.set_result(ResponseHead(self._status, headers))
        rest = buffer[end + 4:]
        if self._length == 0:
            self._end(clean=True)
        return rest

    def _read_chunked(self, data: bytes) -> None:
        if self._buffer:
            data = self._buffer + data
            self._buffer = b""
        pos, size = 0, len(data)
        while pos < size and not self._done:
            if self._chunk_left:
                take = min(self._chunk_left, size - pos)
                self._body(data[pos:pos + take] if (pos or take < size) else data)
                self._chunk_left -= take
                pos += take
                self._chunk_crlf = self._chunk_left == 0
                continue
            line_end = data.find(b"\r\n", pos)
            if line_end < 0:
                if size - pos > _MAX_CHUNK_LINE:
                    self._fail(_malformed("chunk-size line too long"))
                else:
                    self._buffer = data[pos:]
                return
            line = data[pos:line_end]
            pos = line_end + 2
            if self._chunk_crlf:  # the CRLF that closes a chunk's data
                if line:
                    self._fail(_malformed("chunk data longer than its size"))
                    return
                self._chunk_crlf = False
                continue
            if self._trailers:
                if not line:  # the empty line after the trailers: the body is complete
                    self._end(clean=True)
                    return
                continue
            digits = line.split(b";", 1)[0].strip()
            if not digits or len(digits) > 15 or not _HEX.issuperset(digits):
                self._fail(_malformed(f"chunk size {bytes(digits[:20])!r}"))
                return
            self._chunk_left = int(digits, 16)
            if self._chunk_left == 0:
                self._trailers = True

    def _body(self, data: bytes) -> None:
        if not data:
            return
        if self._status != 200:
            if self._error_size < _MAX_ERROR_BODY:
                self._error_parts.append(data[:_MAX_ERROR_BODY - self._error_size])
                self._error_size += len(data)
            return
        if self.stream is None:
            self._pending.append(data)
        else:
            self.stream.feed(data)

    def _end(self, *, clean: bool) -> None:
        if self._done:
            return
        self._done = True
        self._clean = clean
        if not self.error_body.done():
            self.error_body.set_result(b"".join(self._error_parts))
        if self.stream is not None:
            self.stream.end(clean=clean)
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: ServerError) -> None:
        if self._done:
            return
        self._done = True
        self._failure = error
        if not self.head.done():
            self.head.set_exception(error)
        if not self.error_body.done():
            self.error_body.set_exception(error)
            self.error_body.exception()  # retrieved: nobody may wait for it
        if self.stream is not None:
            self.stream.fail(error)
        if self.transport is not None:
            self.transport.close()


def request_bytes(method: str, target: str, host: str, headers: dict[str, str]) -> bytes:
    """The request line and headers of a bodiless HTTP/1.1 request."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} holds a line break")
        lines.append(f"{name}: {value}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


__all__ = ["MAX_HEAD", "MAX_LINE", "EventStream", "Handler", "ResponseHead", "WatchProtocol",
           "request_bytes", "watch_event"]
