"""Kubernetes Events (core/v1) for reconcilers, written off the hot path.

`EventRecorder.event(...)` only enqueues: a reconcile never waits on the API server to report
what it did. A background task writes the Events, the way client-go's broadcaster does:

* Identical events (same involved object, type, reason, message and source) seen again within
  `aggregation_window` bump `count` and `lastTimestamp` of the existing Event with a patch instead
  of creating another one, which keeps `kubectl describe` readable when a reconcile repeats.
* A per source+object token bucket (client-go's 25 burst, one more per 5 minutes) drops event
  storms from one object.
* The buffer is bounded; when it is full new events are dropped and counted.

Write failures are logged and counted, never raised to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import structlog
from prometheus_client import CollectorRegistry

from runtime import metrics
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError, NotFound, ServerError, TooManyRequests
from runtime.resources import EVENTS, Resource

__all__ = ["NORMAL", "WARNING", "EventClient", "EventRecorder"]

NORMAL = "Normal"
WARNING = "Warning"
_TYPES = (NORMAL, WARNING)
# Events of cluster-scoped objects go here, as client-go does (metav1.NamespaceDefault).
_CLUSTER_EVENTS_NAMESPACE = "default"

log = structlog.get_logger("events")


class EventClient(Protocol):
    """The part of `runtime.client.KubeClient` the recorder uses."""

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None, *,
                     timeout: float | None = None) -> dict[str, Any]: ...

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: Literal["merge", "json", "strategic"] = "merge",
                    subresource: str | None = None,
                    timeout: float | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class _Pending:
    involved: dict[str, str]
    namespace: str
    type: str
    reason: str
    message: str
    wall: float  # when `event()` was called


@dataclass(slots=True)
class _Observed:
    name: str
    namespace: str
    count: int
    first_timestamp: str
    last_seen: float  # monotonic


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


def _timestamp(unix_seconds: float) -> str:
    """metav1.Time: RFC 3339, whole seconds, UTC."""
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events for one component (e.g. "aiolbc" / "ingress").

    Call `start()` inside the event loop (or use `async with`) and `await stop()` on shutdown
    to flush what is still buffered.
    """

    def __init__(
        self,
        client: EventClient,
        *,
        component: str,
        host: str | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        buffer_size: int = 1000,
        aggregation_window: float = 600.0,
        cache_size: int = 4096,
        spam_filter: bool = True,
        spam_burst: int = 25,
        spam_refill_seconds: float = 300.0,
        max_attempts: int = 3,
        retry_delay: float = 1.0,
        request_timeout: float = 10.0,
    ) -> None:
        if not component:
            raise ValueError("event recorder needs a component name")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1, got {buffer_size}")
        self._client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock: Clock = clock if clock is not None else RealClock()
        self._window = aggregation_window
        self._cache_size = cache_size
        self._spam_filter = spam_filter
        self._spam_burst = spam_burst
        self._spam_refill = spam_refill_seconds
        self._max_attempts = max(1, max_attempts)
        self._retry_delay = retry_delay
        self._request_timeout = request_timeout
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=buffer_size)
        self._observed: OrderedDict[tuple[str, ...], _Observed] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()
        self._last_name_ns = 0
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        registry = registry if registry is not None else metrics.default_registry()
        dropped = metrics.counter(registry, "event_recorder_dropped_total",
                                  "Events not written, by cause (buffer_full, spam, invalid).",
                                  ["component", "cause"])
        self._dropped_full = dropped.labels(component=component, cause="buffer_full")
        self._dropped_spam = dropped.labels(component=component, cause="spam")
        self._dropped_invalid = dropped.labels(component=component, cause="invalid")
        self._errors = metrics.counter(
            registry, "event_recorder_write_errors_total",
            "Events the API server did not accept after retries.",
            ["component"]).labels(component=component)

    # -- producer side (never blocks) ---------------------------------------------------------

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str, *,
              resource: Resource | None = None) -> None:
        """Queue an Event about `obj`. `resource` supplies kind/apiVersion for objects that
        arrive without them (list items do)."""
        if type not in _TYPES:
            log.error("dropping event with invalid type", type=type, reason=reason)
            self._dropped_invalid.inc()
            return
        if self._closed:
            log.debug("event recorder stopped; dropping event", reason=reason)
            return
        try:
            involved, namespace = self._reference(obj, resource)
        except ValueError as err:
            log.error("dropping event for an object without identity", error=str(err),
                      reason=reason)
            self._dropped_invalid.inc()
            return
        if self._spam_filter and not self._take_token(involved):
            self._dropped_spam.inc()
            return
        pending = _Pending(involved=involved, namespace=namespace, type=type, reason=reason,
                           message=message, wall=self._clock.wall())
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self._dropped_full.inc()
            log.warning("event buffer full; dropping event", reason=reason,
                        object=f"{namespace}/{involved['name']}")

    def eventf(self, obj: dict[str, Any], type: str, reason: str, fmt: str,
               *args: object) -> None:
        """`event` with a %-style message."""
        self.event(obj, type, reason, fmt % args if args else fmt)

    @staticmethod
    def _reference(obj: dict[str, Any], resource: Resource | None) -> tuple[dict[str, str], str]:
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ValueError("object has no metadata.name")
        kind = obj.get("kind") or (resource.kind if resource else "")
        api_version = obj.get("apiVersion") or (resource.api_version if resource else "")
        if not kind or not api_version:
            raise ValueError(f"object {meta.get('name')!r} has no kind/apiVersion")
        involved = {"kind": str(kind), "apiVersion": str(api_version), "name": str(meta["name"])}
        namespace = meta.get("namespace") or ""
        if namespace:
            involved["namespace"] = str(namespace)
        for src, dst in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
            if meta.get(src):
                involved[dst] = str(meta[src])
        return involved, str(namespace) or _CLUSTER_EVENTS_NAMESPACE

    def _take_token(self, involved: dict[str, str]) -> bool:
        key = (self.component, self.host, involved["kind"], involved.get("namespace", ""),
               involved["name"], involved.get("uid", ""), involved["apiVersion"])
        now = self._clock.now()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(tokens=float(self._spam_burst), updated=now)
            self._buckets[key] = bucket
            if len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.tokens = min(float(self._spam_burst),
                                bucket.tokens + (now - bucket.updated) / self._spam_refill)
            bucket.updated = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_loop(), name="event-recorder")

    async def stop(self, *, timeout: float = 10.0) -> None:
        """Stop accepting events, write what is buffered (for at most `timeout` seconds on the
        recorder's clock), then end the writer."""
        self._closed = True
        if self._writer is None:
            return
        drained = asyncio.ensure_future(self._queue.join())
        timer = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({drained, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            drained.cancel()
            timer.cancel()
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None
        if self._queue.qsize():
            log.warning("event recorder stopped with events unwritten",
                        unwritten=self._queue.qsize())

    async def __aenter__(self) -> EventRecorder:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- writer side --------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                await self._write(pending)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("unexpected error writing event", reason=pending.reason)
            finally:
                self._queue.task_done()

    async def _write(self, pending: _Pending) -> None:
        # client-go's event key; resourceVersion is left out so repeats across updates of the
        # object still aggregate.
        key = (self.component, self.host, pending.involved["kind"],
               pending.involved.get("namespace", ""),
               pending.involved["name"], pending.involved.get("uid", ""),
               pending.involved["apiVersion"], pending.type, pending.reason, pending.message)
        now = self._clock.now()
        timestamp = _timestamp(pending.wall)
        observed = self._observed.get(key)
        if observed is not None and now - observed.last_seen <= self._window:
            observed.count += 1
            observed.last_seen = now
            self._observed.move_to_end(key)
            patch = {"count": observed.count, "lastTimestamp": timestamp,
                     "message": pending.message}
            event_name, event_namespace = observed.name, observed.namespace
            try:
                await self._attempt(lambda: self._client.patch(
                    EVENTS, event_name, patch, event_namespace, patch_type="merge",
                    timeout=self._request_timeout))
                return
            except NotFound:
                # The Event expired (the API server keeps them ~1 h): write it afresh.
                pass
            except ApiError as err:
                self._errors.inc()
                log.warning("could not update event", event=observed.name, error=err.message)
                return
            body = self._body(pending, observed.name, observed.count,
                              observed.first_timestamp, timestamp)
        else:
            name = f"{pending.involved['name']}.{self._name_suffix(pending.wall)}"
            observed = _Observed(name=name, namespace=pending.namespace, count=1,
                                 first_timestamp=timestamp, last_seen=now)
            self._observed[key] = observed
            self._observed.move_to_end(key)
            if len(self._observed) > self._cache_size:
                self._observed.popitem(last=False)
            body = self._body(pending, name, 1, timestamp, timestamp)
        try:
            await self._attempt(lambda: self._client.create(
                EVENTS, body, pending.namespace, timeout=self._request_timeout))
        except ApiError as err:
            self._errors.inc()
            self._observed.pop(key, None)
            log.warning("could not write event", reason=pending.reason, error=err.message,
                        object=f"{pending.namespace}/{pending.involved['name']}")

    async def _attempt(self, call: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """Retry what may pass on a second try (5xx, unreachable, throttled)."""
        for attempt in range(1, self._max_attempts + 1):
            try:
                result: dict[str, Any] = await call()
                return result
            except (ServerError, TooManyRequests) as err:
                if attempt == self._max_attempts:
                    raise
                delay = err.retry_after if err.retry_after else self._retry_delay * attempt
                await self._clock.sleep(delay)
        raise AssertionError("unreachable")

    def _name_suffix(self, wall: float) -> str:
        # client-go names events `<object>.<unix nanoseconds in hex>`; keep them strictly
        # increasing so two events in the same nanosecond never collide.
        nanos = max(int(wall * 1e9), self._last_name_ns + 1)
        self._last_name_ns = nanos
        return f"{nanos:x}"

    def _body(self, pending: _Pending, name: str, count: int, first: str,
              last: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pending.namespace},
            "involvedObject": dict(pending.involved),
            "type": pending.type,
            "reason": pending.reason,
            "message": pending.message,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": first,
            "lastTimestamp": last,
            "count": count,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
