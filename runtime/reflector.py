"""Reflector: keeps a sink in step with the API server by list + watch (client-go semantics).

- The first list asks for `resourceVersion="0"` (the server may answer from its watch cache),
  paginated by `page_size`; an expired continue token falls back to one unpaginated list.
- Then it watches from the list's resourceVersion with bookmarks and a randomized
  `timeoutSeconds` (5-10 min by default) so that many clients do not reconnect in step.
- A clean close re-watches from the last seen resourceVersion: no relist.
- 429 or an unreachable server while watching: back off, re-watch, no relist.
- 410 Gone (history compacted past our resourceVersion): relist "not older than" the last
  resourceVersion; if that too is Gone, a consistent list (`resourceVersion=""`).
- Anything else: back off, relist. The backoff is jittered 0.8 s -> 30 s, factor 2, and
  starts over after 2 min without trouble.
- Optionally the initial state arrives as a stream (`sendInitialEvents=true`, KEP-3157): the
  reflector collects it until the `k8s.io/initial-events-end` bookmark, replaces the sink's
  contents and keeps the same watch open. A server that rejects the request, or never sends
  that bookmark, gets list + watch instead from then on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.client import INITIAL_EVENTS_END_ANNOTATION, KubeClient
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, Gone, ServerError, TooManyRequests
from runtime.failures import FailureLog
from runtime.objects import Obj, key_of
from runtime.resources import Resource
from runtime.watchstream import EventStream

log = logging.getLogger(__name__)

# Seconds of consuming already-buffered events before the loop is given back once.
_YIELD_AFTER = 0.01


class WatchDecoding(Protocol):
    """A transform that also decodes the watch's events: `decode_watch_event(line, cached)`
    gives the event as `jsonbody.loads` would, its object reduced to no less than what the
    transform keeps of it (the transform then gets that object). `cached(key)` is what the
    cache holds of an object now (None: nothing), for a decoder that reuses the parts of it an
    event leaves unchanged. Lists are decoded whole as always."""

    def decode_watch_event(self, line: bytes, cached: Callable[[str], Any]) -> Any: ...

# A watch that ends this fast without a single event is a server problem, not a timeout:
# re-opening it at once would spin.
_VERY_SHORT_WATCH = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectorSettings:
    page_size: int = 500
    min_watch_timeout: float = 300.0  # timeoutSeconds is drawn from [min, 2*min]
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    backoff_factor: float = 2.0
    backoff_jitter: float = 1.0
    backoff_reset: float = 120.0
    streaming_list: bool = True  # try sendInitialEvents first
    initial_events_timeout: float = 10.0  # silence while streaming before giving up on it

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {self.page_size!r}")
        if self.min_watch_timeout < 1:
            raise ValueError(f"min_watch_timeout must be >= 1 s, got {self.min_watch_timeout!r}")
        if not 0 < self.backoff_initial <= self.backoff_max:
            raise ValueError("backoff must satisfy 0 < backoff_initial <= backoff_max")
        if self.backoff_factor < 1 or self.backoff_jitter < 0 or self.backoff_reset <= 0:
            raise ValueError("backoff_factor must be >= 1, backoff_jitter >= 0, "
                             "backoff_reset > 0")
        if self.initial_events_timeout <= 0:
            raise ValueError("initial_events_timeout must be > 0")


class Backoff:
    """apimachinery's `wait.Backoff` with `DelayWithReset`: each delay doubles up to the cap,
    is stretched by up to `jitter` times itself, and the sequence restarts after `reset`
    seconds in which no delay was asked for."""

    def __init__(self, *, initial: float, maximum: float, factor: float, jitter: float,
                 reset: float, clock: Clock, rng: random.Random) -> None:
        self._initial = initial
        self._maximum = maximum
        self._factor = factor
        self._jitter = jitter
        self._reset = reset
        self._clock = clock
        self._rng = rng
        self._next = initial
        self._last: float | None = None

    @classmethod
    def from_settings(cls, settings: ReflectorSettings, *, clock: Clock,
                      rng: random.Random) -> Backoff:
        return cls(initial=settings.backoff_initial, maximum=settings.backoff_max,
                   factor=settings.backoff_factor, jitter=settings.backoff_jitter,
                   reset=settings.backoff_reset, clock=clock, rng=rng)

    def next(self) -> float:
        now = self._clock.now()
        if self._last is not None and now - self._last > self._reset:
            self._next = self._initial
        delay = self._next
        self._next = min(self._next * self._factor, self._maximum)
        delay += delay * self._jitter * self._rng.random()
        self._last = now + delay
        return delay


class ReflectorSink(Protocol):
    """Where the reflector puts what it learns. Both calls are synchronous on purpose: the
    store is up to date before anything else on the loop can run."""

    def on_replace(self, items: list[Obj], resource_version: str) -> None: ...

    def on_event(self, event_type: str, obj: Obj) -> None:
        """`event_type` is ADDED, MODIFIED or DELETED."""
        ...

    def cached(self, key: str) -> Obj | None:
        """What the sink holds of the object `key` now."""
        ...


class _StreamingUnsupported(Exception):
    pass


def _describe(obj: Any) -> str:
    try:
        return key_of(obj)
    except (ValueError, AttributeError, TypeError):
        return "<unknown object>"


class Reflector:
    def __init__(self, client: KubeClient, resource: Resource, sink: ReflectorSink, *,
                 namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, settings: ReflectorSettings | None = None,
                 transform: Callable[[Obj], Obj] | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self._client = client
        self._resource = resource
        self._sink = sink
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self.settings = settings or ReflectorSettings()
        # What the cache keeps of each object; the informer may set it until it starts.
        self.transform = transform
        self._clock: Clock = clock or RealClock()
        self._transform_failures = FailureLog(clock=self._clock)
        self._rng = rng or random.Random()
        self._backoff = Backoff.from_settings(self.settings, clock=self._clock, rng=self._rng)
        self._last_rv = ""
        self._rv_unavailable = False  # the last RV is gone: next list must be consistent ("")
        self._paginated = False
        self._streaming: bool | None = None if self.settings.streaming_list else False
        self.name = f"{resource}" + (f" in {namespace}" if namespace else "")
        # Counters for observability (and tests): how the reflector got its data.
        self.lists = 0
        self.streamed_lists = 0
        self.watches = 0
        self.applied = 0  # watch events applied to the sink (bookmarks and initial state aside)
        self.failures = 0  # lists and watches that failed (a relist on 410 is not a failure)
        self.last_error: str | None = None  # set by a failure, cleared by the next success

    @property
    def last_sync_resource_version(self) -> str:
        return self._last_rv

    @property
    def healthy(self) -> bool:
        """The last list or watch attempt succeeded (readiness: runtime/manager.py)."""
        return self.last_error is None

    def _failed(self, reason: str) -> None:
        self.failures += 1
        self.last_error = reason

    def _succeeded(self) -> None:
        self.last_error = None

    @property
    def streaming_supported(self) -> bool | None:
        """None until a streaming list was tried."""
        return self._streaming

    def transformed(self, obj: Obj) -> Obj:
        """The transform's result; the object as it came when the transform raises (a
        transform meets hostile objects too, and must not stop the whole resource's watch)."""
        assert self.transform is not None
        try:
            return self.transform(obj)
        except Exception as exc:
            self._transform_failures.failed(f"{self.name}: transform", _describe(obj), exc)
            return obj

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Gone as exc:
                log.debug("%s: %s; relisting", self.name, exc.message)
            except ApiError as exc:
                log.warning("%s: list/watch failed: %s (HTTP %s)", self.name, exc.message,
                            exc.code or "-")
                self._failed(exc.message)
            except Exception as exc:
                log.exception("%s: list/watch failed", self.name)
                self._failed(f"{type(exc).__name__}: {exc}")
            await self._clock.sleep(self._backoff.next())

    # ---- list --------------------------------------------------------------------------------

    async def _list_and_watch(self) -> None:
        stream: EventStream | None = None
        if self._streaming is not False:
            try:
                stream = await self._stream_initial_state()
            except _StreamingUnsupported as exc:
                log.info("%s: streaming list unavailable (%s); using list + watch",
                         self.name, exc)
                self._streaming = False
        if stream is None:
            await self._list()
        await self._watch_loop(stream)

    async def _list(self) -> None:
        rv = "" if self._rv_unavailable else (self._last_rv or "0")
        # Paging for the first or a consistent list; a relist from a known resourceVersion goes
        # unpaged so that a watch cache can serve it, unless the server paged us before.
        limit = self.settings.page_size if rv in ("", "0") or self._paginated else None
        self.lists += 1
        try:
            items, list_rv = await self._list_pages(rv, limit)
        except Gone:
            log.info("%s: resourceVersion %s is gone; listing consistently", self.name, rv)
            self._rv_unavailable = True
            self.lists += 1
            items, list_rv = await self._list_pages("", self.settings.page_size)
        self._rv_unavailable = False
        if self.transform is not None:
            items = [self.transformed(obj) for obj in items]
        self._sink.on_replace(items, list_rv)
        self._last_rv = list_rv
        self._succeeded()

    async def _list_pages(self, rv: str, limit: int | None) -> tuple[list[Obj], str]:
        page = await self._client.list(
            self._resource, self._namespace, label_selector=self._label_selector,
            field_selector=self._field_selector, limit=limit, resource_version=rv or None)
        items: list[Obj] = list(page.get("items") or ())
        meta = page.get("metadata") or {}
        list_rv = str(meta.get("resourceVersion") or "")
        token = meta.get("continue")
        if token:
            self._paginated = True
        while token:
            try:
                page = await self._client.list(
                    self._resource, self._namespace, label_selector=self._label_selector,
                    field_selector=self._field_selector, limit=limit, continue_=token)
            except Gone:
                # The continue token outlived the server's history: one full list instead.
                log.info("%s: continue token expired; listing without pages", self.name)
                full = await self._client.list(
                    self._resource, self._namespace, label_selector=self._label_selector,
                    field_selector=self._field_selector, resource_version=rv or None)
                full_meta = full.get("metadata") or {}
                return list(full.get("items") or ()), str(full_meta.get("resourceVersion") or "")
            items.extend(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue")
        return items, list_rv

    async def _stream_initial_state(self) -> EventStream:
        """Open a watch with sendInitialEvents, consume it up to the end-of-initial-events
        bookmark, replace the sink's contents, and return the still-open stream."""
        rv = "" if self._rv_unavailable else self._last_rv
        stream: EventStream | None = None
        collected: dict[str, Obj] = {}
        bookmark_rv: str | None = None
        loop = asyncio.get_running_loop()
        timeout = self.settings.initial_events_timeout
        moved = yielded = loop.time()
        try:
            async with asyncio.timeout(timeout) as deadline:
                stream = await self._open_watch(rv, send_initial_events=True)
                async for event in stream:
                    # Re-arming a timer per event costs more than the event itself; pushing
                    # the deadline a few times per window keeps the silence limit within 25%.
                    now = loop.time()
                    if now - moved > timeout / 4:
                        deadline.reschedule(now + timeout)
                        moved = now
                    if now - yielded > _YIELD_AFTER:
                        # Events already buffered come without a pause: thousands of them
                        # would hold the loop (and the other informers' handlers) meanwhile.
                        await asyncio.sleep(0)
                        yielded = loop.time()
                    kind, obj = event.get("type"), event["object"]
                    if kind == "BOOKMARK":
                        meta = obj.get("metadata") or {}
                        annotations = meta.get("annotations") or {}
                        if annotations.get(INITIAL_EVENTS_END_ANNOTATION) == "true":
                            bookmark_rv = str(meta.get("resourceVersion") or "")
                            break
                        continue
                    if self.transform is not None:
                        obj = self.transformed(obj)
                    if kind == "DELETED":
                        collected.pop(key_of(obj), None)
                    else:
                        collected[key_of(obj)] = obj
        except BaseException as exc:
            if stream is not None:
                stream.close()
            if isinstance(exc, TimeoutError):
                raise _StreamingUnsupported(
                    f"no end-of-initial-events bookmark within {timeout:g}s") from None
            if isinstance(exc, Gone):
                self._rv_unavailable = True
            elif isinstance(exc, ApiError) and not isinstance(exc, (TooManyRequests,
                                                                     ServerError)):
                raise _StreamingUnsupported(f"HTTP {exc.code}: {exc.message}") from None
            raise
        if bookmark_rv is None or stream is None:
            if stream is not None:
                stream.close()
            raise _StreamingUnsupported("the stream ended before the initial-events bookmark")
        self._streaming = True
        self._rv_unavailable = False
        self.streamed_lists += 1
        self._sink.on_replace(list(collected.values()), bookmark_rv)
        self._last_rv = bookmark_rv
        self._succeeded()
        return stream

    # ---- watch -------------------------------------------------------------------------------

    async def _open_watch(self, rv: str, *, send_initial_events: bool = False) -> EventStream:
        timeout_seconds = int(self.settings.min_watch_timeout * (1.0 + self._rng.random()))
        self.watches += 1
        stream = await self._client.open_watch(
            self._resource, self._namespace, resource_version=rv or None,
            timeout_seconds=timeout_seconds, allow_bookmarks=True,
            label_selector=self._label_selector, field_selector=self._field_selector,
            send_initial_events=send_initial_events, decode=self._decoder())
        if not send_initial_events:  # a watch opened for a streaming list proves nothing yet
            self._succeeded()
        return stream

    def _decoder(self) -> Callable[[bytes], Any] | None:
        """A transform may say how to decode a watch event's line (`WatchDecoding`): into
        little more of the object than it keeps, which is cheaper than decoding it all."""
        decode = getattr(self.transform, "decode_watch_event", None)
        if not callable(decode):
            return None
        return functools.partial(decode, cached=self._sink.cached)

    async def _watch_loop(self, stream: EventStream | None) -> None:
        """Returns when a relist is needed; raises what needs a backoff first."""
        while True:
            started = self._clock.now()
            try:
                if stream is None:
                    stream = await self._open_watch(self._last_rv)
                # Each event is applied as it is read, within the read's own callback: no
                # task wakes for it (runtime/watchstream.py).
                applied = self.applied
                await stream.deliver(self._apply)
            except Gone as exc:
                log.debug("%s: watch from %s: %s", self.name, self._last_rv, exc.message)
                return
            except (TooManyRequests, ServerError) as exc:
                if isinstance(exc, ServerError) and exc.code != 0:
                    raise  # an internal error: relist after the backoff, as client-go does
                log.info("%s: watch unavailable (%s); backing off", self.name, exc.message)
                self._failed(exc.message)
                await self._clock.sleep(self._backoff.next())
                continue
            finally:
                if stream is not None:
                    stream.close()
                stream = None
            if self.applied == applied and self._clock.now() - started < _VERY_SHORT_WATCH:
                log.debug("%s: very short watch with no events; backing off", self.name)
                await self._clock.sleep(self._backoff.next())

    def _apply(self, event: dict[str, Any]) -> None:
        """One watch event into the sink (and the resourceVersion to re-watch from)."""
        kind, obj = event.get("type"), event["object"]
        meta = obj.get("metadata") or {}
        if kind == "BOOKMARK":
            rv = meta.get("resourceVersion")
            if rv:
                self._last_rv = str(rv)
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s: skipping watch event of type %r", self.name, kind)
            return
        if self.transform is not None:
            obj = self.transformed(obj)
        self._sink.on_event(str(kind), obj)
        rv = meta.get("resourceVersion")
        if rv:
            self._last_rv = str(rv)
        self.applied += 1
