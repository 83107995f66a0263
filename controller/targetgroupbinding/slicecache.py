"""What the EndpointSlice cache keeps, and how a binding gets the slices of a Service the cache
kept no endpoints of.

Most Services of a cluster have no load balancer, and their EndpointSlices are most of what an
EndpointSlice cache holds. `SliceTrimmer` (the informer's transform) keeps, for a slice of a
Service no binding uses, only an *index entry*: name, namespace, uid, resourceVersion and the
service-name label, enough for the cache's index and for the event that tells a binding its
Service changed. For a Service a binding uses it keeps the slice with its endpoints, less what
target computation never reads (their nodes, zones and topology hints).

Which Services are used is read from the bindings' cache at the time a slice arrives, which is
why the slice informer lists only once the bindings' informer holds its initial list. A binding
that starts using a Service later finds index entries: the reconcile then lists that Service's
slices from the API server once (`fetch_slices`); their parsed endpoints are memoized by uid and
resourceVersion (endpointsets.py), so later reconciles of an unchanged slice need no request,
and every later event of those slices arrives whole, since the Service is used by then. A
Service no binding uses any more keeps its whole slices until each one next changes.
"""

from __future__ import annotations

from typing import Any, Final

from controller.targetgroupbinding.watches import (
    SERVICE_INDEX,
    SERVICE_NAME_LABEL,
    slice_service_index,
)
from controller.transforms import strip
from runtime.client import KubeClient
from runtime.objects import Obj
from runtime.resources import ENDPOINTSLICES
from runtime.store import Store

# What neither target computation (targets.py) nor a pod lookup reads of an endpoint.
_UNREAD_ENDPOINT_FIELDS: Final = ("nodeName", "zone", "hints", "deprecatedTopology")
_INDEX_META: Final = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


def is_index_entry(slice_: Obj) -> bool:
    """A slice the cache kept no endpoints of. A kept slice always has an `endpoints` list."""
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
    """The slice without what target computation never reads of an endpoint (its node, zone
    and topology hints), in place. Every endpoint's targetRef repeats the kind and the slice's
    namespace: they are made one string each instead of one per endpoint."""
    strip(slice_)
    endpoints = slice_.get("endpoints")
    if not isinstance(endpoints, list):
        slice_["endpoints"] = []
        return slice_
    meta = slice_.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    # Removed in place: cheaper than building each endpoint again, on every event of a slice.
    for endpoint in endpoints:
        if type(endpoint) is not dict:
            continue  # hostile: left for the reader to skip, as it always did
        for field in _UNREAD_ENDPOINT_FIELDS:
            endpoint.pop(field, None)
        ref = endpoint.get("targetRef")
        if type(ref) is dict:
            if ref.get("kind") == "Pod":
                ref["kind"] = "Pod"
            if namespace is not None and ref.get("namespace") == namespace:
                ref["namespace"] = namespace
    return slice_


class SliceTrimmer:
    """The EndpointSlice informer's transform: whole (endpoints cut) for Services a binding
    uses, an index entry for the others. Equal for the same bindings' cache, so that wiring
    asking twice asks for the same transform."""

    def __init__(self, bindings: Store) -> None:
        self._bindings = bindings

    def used(self, service_key: str) -> bool:
        return bool(self._bindings.index_keys(SERVICE_INDEX, service_key))

    def __call__(self, slice_: Obj) -> Obj:
        keys = slice_service_index(slice_)
        if keys and self.used(keys[0]):
            return kept_slice(slice_)
        return index_entry(slice_)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SliceTrimmer) and other._bindings is self._bindings

    def __hash__(self) -> int:
        return id(self._bindings)


async def fetch_slices(client: KubeClient, service_key: str) -> list[Obj]:
    """The slices of one Service, straight from the API server, kept as the cache keeps the
    slices of a used Service."""
    namespace, _, name = service_key.partition("/")
    body = await client.list(ENDPOINTSLICES, namespace,
                             label_selector=f"{SERVICE_NAME_LABEL}={name}")
    items = body.get("items")
    return [kept_slice(s) for s in items if isinstance(s, dict)
            and slice_service_index(s) == [service_key]] if isinstance(items, list) else []


class SlicesNotCached(Exception):
    """The cache holds only index entries of some of a Service's slices (a Service no binding
    used until now), and the memo has not seen their versions."""

    def __init__(self, service_key: str) -> None:
        super().__init__(f"EndpointSlices of {service_key} are not cached")
        self.service_key = service_key


__all__ = ["SliceTrimmer", "SlicesNotCached", "fetch_slices", "index_entry", "is_index_entry",
           "kept_slice"]
