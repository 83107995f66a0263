"""What the EndpointSlice cache keeps, and how a binding gets the slices of a Service the cache
kept no endpoints of.

Most Services of a cluster have no load balancer, and their EndpointSlices are most of what an
EndpointSlice cache holds. `SliceTrimmer` (the informer's transform) keeps, for a slice of a
Service no binding uses, only an *index entry*: name, namespace, uid, resourceVersion and the
service-name label, enough for the cache's index and for the event that tells a binding its
Service changed. For a Service a binding uses it keeps the slice with its endpoints read into
small tuples of what bindings read (sliceendpoints.py), not their nodes, zones or hints.

Which Services are used is read from the bindings' cache at the time a slice arrives, which is
why the slice informer lists only once the bindings' informer holds its initial list. When a
binding starts using a Service later, `SliceRefresher` (on every replica) lists that Service's
slices once and has the cache take them again, whole; every later event of them arrives whole
anyway, since the Service is used by then. A reconcile that comes first lists them itself
(`fetch_slices`); their parsed endpoints are memoized by uid and resourceVersion
(endpointsets.py), so an unchanged slice is never fetched twice. A Service no binding uses any
more keeps its whole slices until each one next changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

import structlog

from controller.informers import strip
from controller.targetgroupbinding.slicedecode import decode_slice_event
from controller.targetgroupbinding.sliceendpoints import endpoints_of
from controller.targetgroupbinding.watches import (
    SERVICE_INDEX,
    SERVICE_NAME_LABEL,
    SLICE_SERVICE_INDEX,
    binding_service_index,
    slice_service_index,
)
from runtime.client import KubeClient
from runtime.errors import ApiError
from runtime.informer import SharedInformer
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES
from runtime.store import Store

log = structlog.get_logger("targetgroupbinding")

_INDEX_META: Final = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


def is_index_entry(slice_: Obj) -> bool:
    """A slice the cache kept no endpoints of. A kept slice always has its `endpoints`."""
    return "endpoints" not in slice_


def index_entry(slice_: Obj) -> Obj:
    meta = slice_.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    labels = meta.get("labels")
    service = labels.get(SERVICE_NAME_LABEL) if isinstance(labels, dict) else None
    entry: dict[str, Any] = {k: meta[k] for k in _INDEX_META if k in meta}
    if service is not None:
        entry["labels"] = {SERVICE_NAME_LABEL: service}
    return {"metadata": entry, "addressType": slice_.get("addressType")}


def kept_slice(slice_: Obj) -> Obj:
    """The slice with its endpoints read into `SliceEndpoint` tuples (sliceendpoints.py): what
    target computation, readiness gates and the watch's view read of them, and nothing else
    (not their nodes, zones or topology hints), in place. Idempotent."""
    strip(slice_)
    slice_["endpoints"] = endpoints_of(slice_)
    return slice_


class SliceTrimmer:
    """The EndpointSlice informer's transform: whole (endpoints cut) for Services a binding
    uses, an index entry for the others. Equal for the same bindings' cache, so that wiring
    asking twice asks for the same transform."""

    def __init__(self, bindings: Store) -> None:
        self._bindings = bindings

    def used(self, service_key: str) -> bool:
        return self._bindings.indexed(SERVICE_INDEX, service_key)

    @staticmethod
    def decode_watch_event(line: bytes, cached: Callable[[str], Any] | None = None) -> Any:
        """Watch events are decoded into what the cache keeps (slicedecode.py), reusing the
        endpoints it holds that an event leaves unchanged."""
        return decode_slice_event(line, cached)

    def __call__(self, slice_: Obj) -> Obj:
        keys = slice_service_index(slice_)
        if keys and self.used(keys[0]):
            return kept_slice(slice_)
        return index_entry(slice_)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SliceTrimmer) and other._bindings is self._bindings

    def __hash__(self) -> int:
        return id(self._bindings)


async def list_slices(client: KubeClient, service_key: str) -> list[Obj]:
    """The slices of one Service, straight from the API server, as it serves them."""
    namespace, _, name = service_key.partition("/")
    body = await client.list(ENDPOINTSLICES, namespace,
                             label_selector=f"{SERVICE_NAME_LABEL}={name}")
    items = body.get("items")
    return [s for s in items if isinstance(s, dict)
            and slice_service_index(s) == [service_key]] if isinstance(items, list) else []


async def fetch_slices(client: KubeClient, service_key: str) -> list[Obj]:
    """The slices of one Service, kept as the cache keeps the slices of a used Service."""
    return [kept_slice(s) for s in await list_slices(client, service_key)]


class SliceRefresher:
    """A handler of the bindings' informer, on every replica, leader or not: when a binding
    starts using a Service whose slices the cache holds as index entries, it lists them and
    has the cache take them again (`SharedInformer.retransform`), whole now. A standby then
    takes over with whole slices, and judges its bindings' checkpoints from its caches as
    the leader did. Until it is done a reconcile fetches the slices itself."""

    def __init__(self, client: KubeClient, slices: SharedInformer) -> None:
        self._client = client
        self._slices = slices
        self._pending: dict[str, asyncio.Task[None]] = {}

    def on_add(self, obj: Obj, is_initial_list: bool) -> None:
        self._check(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if binding_service_index(old) != binding_service_index(new):
            self._check(new)

    def on_delete(self, obj: object) -> None:
        return None

    def _check(self, binding: Obj) -> None:
        for key in binding_service_index(binding):
            if key in self._pending:
                continue
            cached = self._slices.store.by_index(SLICE_SERVICE_INDEX, key)
            if any(is_index_entry(s) for s in cached):
                task = asyncio.get_running_loop().create_task(self._refresh(key),
                                                              name=f"slices of {key}")
                self._pending[key] = task

    async def _refresh(self, service_key: str) -> None:
        try:
            for obj in await list_slices(self._client, service_key):
                self._slices.retransform(obj)
        except ApiError as exc:  # the reconcile fetches them itself
            log.info("could not list slices", service=service_key, error=str(exc))
        finally:
            self._pending.pop(service_key, None)


class SlicesNotCached(Exception):
    """The cache holds only index entries of some of a Service's slices (a Service no binding
    used until now), and the memo has not seen their versions."""

    def __init__(self, service_key: str) -> None:
        super().__init__(f"EndpointSlices of {service_key} are not cached")
        self.service_key = service_key


__all__ = ["SliceRefresher", "SliceTrimmer", "SlicesNotCached", "fetch_slices", "index_entry",
           "is_index_entry", "kept_slice", "list_slices"]
