"""Decoding an EndpointSlice watch event straight into what the slice cache keeps.

Decoding an event of a slice with 100 endpoints into dicts and lists, then reading its
endpoints into `SliceEndpoint` tuples (sliceendpoints.py), was most of what an endpoint event
cost. msgspec decodes the event against the few fields the cache keeps: the fields of an
endpoint nobody reads (node, zone, hints, serving) are skipped without being built, and the
endpoints come out as small structs that become `SliceEndpoint`s in one loop.

The result is exactly what the JSON decoder and `sliceendpoints.compact` give for the same
event: metadata, address type and ports as JSON decodes them, the endpoints as the tuples
`compact` makes (apiVersion and kind too when present; nothing else of a slice is read by
anyone). A document that does not fit the typed form (a string where a list belongs, a number
for a name: hostile or just unusual) and every ERROR event are decoded by the JSON decoder
instead, so the cache meets them exactly as before.
"""

from __future__ import annotations

from typing import Any

import msgspec

from controller.targetgroupbinding.sliceendpoints import SliceEndpoint, SliceEndpoints
from runtime import jsonbody

_UNSET: Any = msgspec.UNSET


# `gc=False`: they hold only strings and booleans, so the cyclic collector need not track them.
class _Conditions(msgspec.Struct, gc=False, frozen=True):
    ready: bool | None = None
    terminating: bool | None = None


class _Ref(msgspec.Struct, gc=False):
    kind: str | None = None
    name: str | None = None
    uid: str | None = None


class _Endpoint(msgspec.Struct, gc=False):
    addresses: list[str] | None = None
    conditions: _Conditions | None = None
    targetRef: _Ref | None = None  # the API's field names, as msgspec matches them


class _Slice(msgspec.Struct):
    metadata: Any = _UNSET
    apiVersion: Any = _UNSET
    kind: Any = _UNSET
    addressType: Any = _UNSET
    ports: Any = _UNSET
    endpoints: list[_Endpoint] | None = None


class _Event(msgspec.Struct):
    type: Any = None
    object: _Slice | None = None


_DECODER = msgspec.json.Decoder(_Event)


def _endpoints(endpoints: list[_Endpoint] | None) -> SliceEndpoints:
    if not endpoints:
        return SliceEndpoints()
    found = []
    serving = []
    make = tuple.__new__  # a NamedTuple's own constructor is Python code
    for endpoint in endpoints:
        ref = endpoint.targetRef
        addresses = endpoint.addresses
        if ref is None or ref.kind != "Pod" or not addresses:
            continue
        conditions = endpoint.conditions
        if conditions is None:
            ready = terminating = False
        else:
            ready = conditions.ready is True
            terminating = conditions.terminating is True
        kept = make(SliceEndpoint, (addresses[0], ready, terminating, ref.name or "",
                                    ref.uid or ""))
        found.append(kept)
        if ready and not terminating:
            serving.append(kept)
    return SliceEndpoints(found, tuple(serving))


def decode_slice_event(line: bytes) -> Any:
    """One watch event's line, the object as the slice cache keeps it."""
    try:
        event = _DECODER.decode(line)
    except msgspec.DecodeError:  # ValidationError included: not the typed form
        return jsonbody.loads(line)
    slice_ = event.object
    if event.type == "ERROR" or slice_ is None:
        return jsonbody.loads(line)  # a Status, read whole
    obj: dict[str, Any] = {}
    for name in ("apiVersion", "kind", "metadata", "addressType", "ports"):
        value = getattr(slice_, name)
        if value is not _UNSET:
            obj[name] = value
    obj["endpoints"] = _endpoints(slice_.endpoints)
    return {"type": event.type, "object": obj}


__all__ = ["decode_slice_event"]
