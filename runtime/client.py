"""Raw-JSON Kubernetes REST client.

One aiohttp session (one connection pool) per client; bodies are decoded (jsonbody.py) straight
into dicts, never into generated model classes (5-6x slower on big lists). Error answers become the
typed exceptions of runtime/errors.py carrying the server's Status message.

Watches are read off their own connection, each event handed to its consumer within the read's
callback (runtime/watchstream.py); through an HTTP proxy, aiohttp carries their bytes instead.

Reads (get, list, opening a watch) are retried on 429 (honouring Retry-After, capped), 5xx and
connection failures with capped, jittered exponential backoff; writes are never retried, since
the caller must decide whether a write that may have landed can be repeated. Every HTTP attempt
first passes a client-side token bucket (QPS/burst).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
from prometheus_client import CollectorRegistry

from runtime import jsonbody
from runtime.client_metrics import RestClientMetrics
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, ServerError, TooManyRequests, Unauthorized, error_from_status
from runtime.kubeconfig import (
    Credentials,
    ServerEndpoint,
    in_cluster_available,
    load_in_cluster,
    load_kubeconfig,
)
from runtime.objects import strip_managed_fields
from runtime.resources import Resource
from runtime.tokenbucket import TokenBucket
from runtime.watchstream import EventStream, WatchProtocol, request_bytes

log = logging.getLogger(__name__)

PatchType = Literal["merge", "json", "strategic"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"

# aiohttp's read buffer. Watches read lines themselves (runtime/watchstream.py), also those
# that go through aiohttp (behind an HTTP proxy), so this bounds no line's length.
_READ_BUFSIZE = 2**21


class ApiServerUnavailable(Exception):
    """Start-up could not talk to the API server: unreachable until the deadline, or it refused
    the credentials. One line, naming the server."""


# A single start-up attempt gets at least this long, even when the deadline is nearer.
_MIN_PROBE_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSettings:
    """REST client options. The QPS/burst defaults are effectively unlimited, like upstream LBC
    (which hard-codes 1e6); set them lower to protect a shared API server."""

    qps: float = 1e6
    burst: int = 1_000_000
    timeout: float = 30.0  # per HTTP attempt, for everything but watch streams
    user_agent: str = "aiolbc"
    read_attempts: int = 4  # HTTP attempts for a read, the first included
    retry_initial_delay: float = 0.2
    retry_max_delay: float = 5.0
    max_retry_after: float = 30.0  # a server's Retry-After is honoured up to this many seconds
    watch_idle_timeout: float | None = 150.0  # a silent watch is dropped (and re-opened) after this
    connection_limit: int = 100

    def __post_init__(self) -> None:
        checks = [
            (self.qps > 0, f"qps must be > 0, got {self.qps!r}"),
            (self.burst >= 1, f"burst must be >= 1, got {self.burst!r}"),
            (self.timeout > 0, f"timeout must be > 0, got {self.timeout!r}"),
            (self.read_attempts >= 1, f"read_attempts must be >= 1, got {self.read_attempts!r}"),
            (self.retry_initial_delay >= 0 and self.retry_max_delay >= 0,
             "retry delays must be >= 0"),
            (self.max_retry_after >= 0, "max_retry_after must be >= 0"),
            (self.watch_idle_timeout is None or self.watch_idle_timeout > 0,
             "watch_idle_timeout must be > 0 or None"),
            (self.connection_limit >= 1, "connection_limit must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"invalid client settings: {message}")


def _query(**params: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # the HTTP-date form is never sent by the API server


def _decode_error(code: int, body: bytes, retry_after: float | None) -> ApiError:
    status: dict[str, Any] | None = None
    try:
        parsed = jsonbody.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        status = parsed
    else:
        text = body.decode("utf-8", "replace").strip()[:500]
        status = {"message": text or f"HTTP {code}"}
    return error_from_status(code, status, retry_after)


def _namespace_name(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ValueError("object has no metadata.name")
    namespace = meta.get("namespace")
    return (namespace if isinstance(namespace, str) and namespace else None), meta["name"]



class KubeClient:
    """The Kubernetes API as plain dicts. Use `async with` or `await close()`."""

    def __init__(self, endpoint: ServerEndpoint, credentials: Credentials, *,
                 settings: ClientSettings | None = None,
                 registry: CollectorRegistry | None = None,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.endpoint = endpoint
        self.settings = settings or ClientSettings()
        self._credentials = credentials
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._bucket = TokenBucket(rate=self.settings.qps, burst=self.settings.burst,
                                   clock=self._clock)
        self._metrics = RestClientMetrics(registry)
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(cls, path: str | Path | None = None, *, context: str | None = None,
                              settings: ClientSettings | None = None,
                              registry: CollectorRegistry | None = None,
                              clock: Clock | None = None,
                              ca_file: str | None = None) -> KubeClient:
        endpoint, credentials = await load_kubeconfig(path, context=context, ca_file=ca_file)
        client = cls(endpoint, credentials, settings=settings, registry=registry, clock=clock)
        credentials.start_refresh()
        return client

    @classmethod
    async def in_cluster(cls, *, settings: ClientSettings | None = None,
                         registry: CollectorRegistry | None = None,
                         clock: Clock | None = None, ca_file: str | None = None) -> KubeClient:
        endpoint, credentials = load_in_cluster(ca_file=ca_file)
        return cls(endpoint, credentials, settings=settings, registry=registry, clock=clock)

    @classmethod
    async def load(cls, kubeconfig: str | Path | None = None, *, context: str | None = None,
                   settings: ClientSettings | None = None,
                   registry: CollectorRegistry | None = None,
                   ca_file: str | None = None) -> KubeClient:
        """controller-runtime's order: an explicit kubeconfig, then $KUBECONFIG, then the pod's
        service account, then ~/.kube/config. `ca_file`: the API server's CA bundle instead of
        the one that configuration names."""
        if kubeconfig is None and not os.environ.get("KUBECONFIG") and in_cluster_available():
            return await cls.in_cluster(settings=settings, registry=registry, ca_file=ca_file)
        return await cls.from_kubeconfig(kubeconfig, context=context, settings=settings,
                                         registry=registry, ca_file=ca_file)

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        await self._credentials.close()

    def _http(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("KubeClient is closed")
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self.settings.connection_limit,
                                             ssl=self.endpoint.ssl if self.endpoint.ssl else False)
            self._session = aiohttp.ClientSession(
                connector=connector, read_bufsize=_READ_BUFSIZE, raise_for_status=False,
                headers={"User-Agent": self.settings.user_agent, "Accept": "application/json"})
        return self._session

    async def wait_for_server(self, *, timeout: float, initial_delay: float = 0.5,
                              max_delay: float = 5.0) -> dict[str, Any]:
        """`GET /version` until the API server answers, for at most about `timeout` seconds,
        with jittered exponential backoff; returns the version (empty if the server would not
        show it). Raises `ApiServerUnavailable` when the time is up, or at once on 401: waiting
        does not mend credentials."""
        deadline = self._clock.now() + timeout
        delay = initial_delay
        while True:
            remaining = deadline - self._clock.now()
            attempt = max(min(self.settings.timeout, remaining), _MIN_PROBE_TIMEOUT)
            try:
                version = await self._call("GET", "/version", timeout=attempt)
                return version if isinstance(version, dict) else {}
            except Unauthorized as exc:
                raise ApiServerUnavailable(
                    f"the API server at {self.endpoint.host} refused the credentials: "
                    f"{exc.message}") from None
            except (ServerError, TooManyRequests) as exc:
                reason = exc.message.removeprefix("GET /version: ")
            except ApiError:
                return {}  # it answered: a 403 or 404 on /version still means it is there
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                raise ApiServerUnavailable(
                    f"cannot reach the API server at {self.endpoint.host}: {reason}")
            log.debug("API server not reachable yet: %s", reason)
            await self._clock.sleep(min(delay * (0.5 + self._rng.random() / 2), remaining))
            delay = min(delay * 2, max_delay)

    # ---- verbs -------------------------------------------------------------------------------

    async def get(self, res: Resource, name: str, namespace: str | None = None, *,
                  timeout: float | None = None) -> dict[str, Any]:
        obj = await self._call("GET", res.path(namespace, name), retry=True, timeout=timeout)
        return strip_managed_fields(obj)

    async def list(self, res: Resource, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None,
                   resource_version_match: str | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        query = _query(labelSelector=label_selector, fieldSelector=field_selector,
                       limit=limit, resourceVersion=resource_version,
                       resourceVersionMatch=resource_version_match,
                       **{"continue": continue_})
        body: dict[str, Any] = await self._call("GET", res.path(namespace), query=query,
                                                retry=True, timeout=timeout)
        # List items come without kind/apiVersion; watch objects carry them. Filling them in
        # makes both paths hand handlers the same shape.
        for item in body.get("items") or ():
            item.setdefault("kind", res.kind)
            item.setdefault("apiVersion", res.api_version)
            strip_managed_fields(item)
        return body

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None, *,
                     timeout: float | None = None) -> dict[str, Any]:
        if namespace is None and res.namespaced:
            meta = obj.get("metadata")
            found = meta.get("namespace") if isinstance(meta, dict) else None
            if not isinstance(found, str) or not found:
                raise ValueError(f"creating a {res.kind} needs a namespace")
            namespace = found
        created = await self._call("POST", res.path(namespace), body=obj, timeout=timeout)
        return strip_managed_fields(created)

    async def update(self, res: Resource, obj: dict[str, Any], *,
                     timeout: float | None = None) -> dict[str, Any]:
        namespace, name = _namespace_name(obj)
        updated = await self._call("PUT", res.path(namespace, name), body=obj, timeout=timeout)
        return strip_managed_fields(updated)

    async def update_status(self, res: Resource, obj: dict[str, Any], *,
                            timeout: float | None = None) -> dict[str, Any]:
        namespace, name = _namespace_name(obj)
        updated = await self._call("PUT", res.path(namespace, name, "status"), body=obj,
                                   timeout=timeout)
        return strip_managed_fields(updated)

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: PatchType = "merge", subresource: str | None = None,
                    timeout: float | None = None) -> dict[str, Any]:
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}, "
                             f"got {patch_type!r}")
        patched = await self._call("PATCH", res.path(namespace, name, subresource), body=patch,
                                   content_type=content_type, timeout=timeout)
        return strip_managed_fields(patched)

    async def delete(self, res: Resource, name: str, namespace: str | None = None, *,
                     propagation_policy: str | None = None,
                     timeout: float | None = None) -> dict[str, Any] | None:
        """The object as it is after the request (still there while finalizers run), or None
        when the server answered with a Status (the object is gone)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1",
                "propagationPolicy": propagation_policy} if propagation_policy else None
        result = await self._call("DELETE", res.path(namespace, name), body=body,
                                  timeout=timeout)
        if not isinstance(result, dict) or result.get("kind") == "Status":
            return None
        return strip_managed_fields(result)

    async def watch(self, res: Resource, namespace: str | None = None, *,
                    resource_version: str | None = None, timeout_seconds: int | None = None,
                    allow_bookmarks: bool = True, label_selector: str | None = None,
                    field_selector: str | None = None, send_initial_events: bool = False,
                    timeout: float | None = None,
                    on_open: Callable[[], None] | None = None,
                    decode: Callable[[bytes], Any] | None = None,
                    ) -> AsyncGenerator[dict[str, Any], None]:
        """Yield `{"type", "object"}` events until the server closes the stream: `open_watch`
        (which see) read one event at a time. `on_open` is called once the server has
        accepted the watch, before any event arrives."""
        stream = await self.open_watch(
            res, namespace, resource_version=resource_version, timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks, label_selector=label_selector,
            field_selector=field_selector, send_initial_events=send_initial_events,
            timeout=timeout, decode=decode)
        try:
            if on_open is not None:
                on_open()
            async for event in stream:
                yield event
        finally:
            stream.close()

    async def open_watch(self, res: Resource, namespace: str | None = None, *,
                         resource_version: str | None = None, timeout_seconds: int | None = None,
                         allow_bookmarks: bool = True, label_selector: str | None = None,
                         field_selector: str | None = None, send_initial_events: bool = False,
                         timeout: float | None = None,
                         decode: Callable[[bytes], Any] | None = None) -> EventStream:
        """Open a watch: its events, pushed to a handler (`EventStream.deliver`) or pulled
        (`async for`), until the server ends the stream. An ERROR event raises its typed error
        (Gone for 410). A dropped connection or a stream silent for `watch_idle_timeout` ends
        it like a clean close: the caller re-watches from its last resourceVersion. `timeout`
        bounds opening the stream only. `decode` reads one event's line, whose newline may end
        it (default `jsonbody.loads`); what it gives must be the event as JSON decodes it, or
        less of the object (an informer transform's decoder). Call `close()` when done."""
        query = _query(watch=True, resourceVersion=resource_version,
                       timeoutSeconds=timeout_seconds, allowWatchBookmarks=allow_bookmarks,
                       labelSelector=label_selector, fieldSelector=field_selector)
        if send_initial_events:
            query["sendInitialEvents"] = "true"
            query["resourceVersionMatch"] = "NotOlderThan"
        stream = await self._with_deadline(
            self._send("GET", res.path(namespace), query=query, retry=True, stream=True,
                       decode=decode or jsonbody.loads),
            timeout, "GET", res.path(namespace))
        assert isinstance(stream, EventStream)
        return stream

    # ---- transport ---------------------------------------------------------------------------

    async def _call(self, method: str, path: str, *, query: dict[str, str] | None = None,
                    body: Any = None, content_type: str = "application/json",
                    retry: bool = False, timeout: float | None = None) -> Any:
        result = await self._with_deadline(
            self._send(method, path, query=query, body=body, content_type=content_type,
                       retry=retry, stream=False), timeout, method, path)
        return result

    @staticmethod
    async def _with_deadline(coro: Any, timeout: float | None, method: str, path: str) -> Any:
        """An explicit per-call timeout bounds the whole call, retries included (leader
        election relies on a renew never outliving its deadline)."""
        if timeout is None:
            return await coro
        try:
            async with asyncio.timeout(timeout):
                return await coro
        except TimeoutError:
            raise ServerError(f"{method} {path}: timed out after {timeout:g}s", code=0) from None

    async def _send(self, method: str, path: str, *, query: dict[str, str] | None,
                    body: Any = None, content_type: str = "application/json",
                    retry: bool, stream: bool = False,
                    decode: Callable[[bytes], Any] = jsonbody.loads) -> Any:
        settings = self.settings
        attempts = settings.read_attempts if retry else 1
        url = self.endpoint.host + path
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        per_attempt = aiohttp.ClientTimeout(total=settings.timeout)
        host = self.endpoint.netloc
        for attempt in range(attempts):
            delay = self._bucket.reserve()
            if delay > 0:
                await self._clock.sleep(delay)
            headers = await self._credentials.headers()
            if data is not None:
                headers["Content-Type"] = content_type
            started = time.perf_counter()
            try:
                if stream:
                    status, answer, payload = await self._open_stream(path, query, headers,
                                                                      decode)
                else:
                    async with self._http().request(
                            method, url, params=query, data=data, headers=headers,
                            timeout=per_attempt, proxy=self.endpoint.proxy,
                            server_hostname=self.endpoint.server_hostname) as response:
                        payload = await response.read()
                        status, answer = response.status, response.headers
            except (aiohttp.ClientError, TimeoutError, OSError, ServerError) as exc:
                self._metrics.observe(method=method, host=host, code=None,
                                      seconds=time.perf_counter() - started)
                reason = exc.message if isinstance(exc, ServerError) else (
                    f"{type(exc).__name__}: {exc}".rstrip(": "))
                error: ApiError = ServerError(f"{method} {path}: {reason}", code=0)
                if attempt + 1 < attempts:
                    await self._clock.sleep(self._backoff(attempt, None))
                    continue
                raise error from exc
            self._metrics.observe(method=method, host=host, code=status,
                                  seconds=time.perf_counter() - started)
            if isinstance(payload, EventStream):
                return payload
            if status < 400:
                return decode(payload) if payload else None
            error = _decode_error(status, payload, _retry_after(answer))
            if attempt + 1 < attempts and (status == 429 or status >= 500):
                log.debug("%s %s: HTTP %d, retrying", method, path, status)
                await self._clock.sleep(self._backoff(attempt, error.retry_after))
                continue
            raise error
        raise AssertionError("unreachable")  # pragma: no cover

    async def _open_stream(self, path: str, query: dict[str, str] | None,
                           headers: dict[str, str], decode: Callable[[bytes], Any],
                           ) -> tuple[int, Mapping[str, str], bytes | EventStream]:
        """One attempt at opening a watch: its stream once the server answers 200, or the
        status, headers and body of any other answer."""
        if self.endpoint.proxy:
            return await self._open_stream_via_aiohttp(path, query, headers, decode)
        split = urlsplit(self.endpoint.host)
        secure = split.scheme == "https"
        if not split.hostname:
            raise ServerError(f"no host in the server address {self.endpoint.host!r}", code=0)
        target = path + ("?" + urlencode(query, quote_via=quote) if query else "")
        request = request_bytes("GET", target, split.netloc, {
            "User-Agent": self.settings.user_agent, "Accept": "application/json", **headers})
        protocol = WatchProtocol()
        loop = asyncio.get_running_loop()
        try:
            # The head of a watch's answer comes at once (the server flushes it before any
            # event), so the per-request timeout bounds it as it bounds any other request.
            async with asyncio.timeout(self.settings.timeout):
                await loop.create_connection(
                    lambda: protocol, split.hostname, split.port or (443 if secure else 80),
                    ssl=(self.endpoint.ssl or True) if secure else None,
                    server_hostname=(self.endpoint.server_hostname or split.hostname)
                    if secure else None)
                assert protocol.transport is not None
                protocol.transport.write(request)
                head = await protocol.head
                if head.status != 200:
                    body = await protocol.error_body
                    protocol.close()
                    return head.status, head.headers, body
        except BaseException:
            protocol.close()
            raise
        stream = EventStream(decode=decode, idle_timeout=self.settings.watch_idle_timeout,
                             close=protocol.close, pause=protocol.pause)
        protocol.attach(stream)
        return 200, head.headers, stream

    async def _open_stream_via_aiohttp(self, path: str, query: dict[str, str] | None,
                                       headers: dict[str, str], decode: Callable[[bytes], Any],
                                       ) -> tuple[int, Mapping[str, str], bytes | EventStream]:
        """`_open_stream` through the session, which knows HTTP proxies: a task reads the
        body and feeds the stream."""
        response = await self._http().request(
            "GET", self.endpoint.host + path, params=query, headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, connect=self.settings.timeout,
                                          sock_read=self.settings.timeout),
            proxy=self.endpoint.proxy, server_hostname=self.endpoint.server_hostname)
        if response.status != 200:
            try:
                return response.status, response.headers, await response.read()
            finally:
                response.release()
        protocol = response.connection.protocol if response.connection is not None else None
        if protocol is not None:
            # The stream's silence is the stream's to judge from here on: aiohttp's read
            # timeout, which guarded the headers, would re-arm a timer for every chunk.
            protocol.read_timeout = None
            protocol._drop_timeout()
        reading = asyncio.Event()
        reading.set()
        pump: asyncio.Task[None] | None = None

        def close() -> None:
            response.close()
            if pump is not None:
                pump.cancel()

        def pause(paused: bool) -> None:
            (reading.clear if paused else reading.set)()

        stream = EventStream(decode=decode, idle_timeout=self.settings.watch_idle_timeout,
                             close=close, pause=pause)

        async def feed() -> None:
            try:
                async for chunk in response.content.iter_any():
                    stream.feed(chunk)
                    if not reading.is_set():
                        await reading.wait()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                log.debug("watch %s ended: %r", path, exc)
                stream.end(clean=False)
            except Exception as exc:  # whatever it is, the consumer hears of it
                stream.fail(ServerError(f"GET {path}: {type(exc).__name__}: {exc}", code=0))
            else:
                stream.end(clean=True)

        pump = asyncio.get_running_loop().create_task(feed(), name=f"watch {path}")
        return 200, response.headers, stream

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.settings.max_retry_after)
        base = min(self.settings.retry_initial_delay * 2.0**attempt, self.settings.retry_max_delay)
        return base * (0.5 + self._rng.random() / 2)
