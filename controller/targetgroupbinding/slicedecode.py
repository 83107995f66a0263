"""Decoding an EndpointSlice watch event straight into what the slice cache keeps.

Decoding an event of a slice with 100 endpoints into dicts and lists, then reading its
endpoints into `SliceEndpoint` tuples (sliceendpoints.py), was most of what an endpoint event
cost. msgspec decodes the event against the few fields the cache keeps: the fields of an
endpoint nobody reads (node, zone, hints, serving) are skipped without being built.

An event of a slice usually changes one endpoint of many (a pod starting, one becoming ready),
so each endpoint first arrives as its raw JSON, and its fingerprint (the hash of those bytes)
finds it among the endpoints the cache holds from the slice's previous event
(`SliceEndpoints.keys`): only new or changed endpoints are decoded, into small structs that
become `SliceEndpoint`s; the others are the very tuples the cache already holds, which the
slice predicate then compares by identity. The fingerprint is Python's hash of the bytes,
keyed afresh in every process, so no one can make two endpoints collide on purpose.

The result is exactly what the JSON decoder and `sliceendpoints.compact` give for the same
event: metadata, address type and ports as JSON decodes them, the endpoints as the tuples
`compact` makes (apiVersion and kind too when present; nothing else of a slice is read by
anyone). A document that does not fit the typed form (a string where a list belongs, a number
for a name: hostile or just unusual) and every ERROR event are decoded by the JSON decoder
instead, so the cache meets them exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
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
    endpoints: list[msgspec.Raw] | None = None


class _Event(msgspec.Struct):
    type: Any = None
    object: _Slice | None = None


_DECODER = msgspec.json.Decoder(_Event)
_ENDPOINT = msgspec.json.Decoder(_Endpoint)
_NO_KEYS: frozenset[int] = frozenset()

Cached = Callable[[str], Any]


def _endpoint(endpoint: _Endpoint) -> SliceEndpoint | None:
    """The endpoint as the cache keeps it, None when no reader would use it."""
    ref = endpoint.targetRef
    addresses = endpoint.addresses
    if ref is None or ref.kind != "Pod" or not addresses:
        return None
    conditions = endpoint.conditions
    # Kubernetes' rule, which upstream follows: a readiness not given is taken as ready.
    if conditions is None:
        ready, terminating = True, False
    else:
        ready = conditions.ready is not False
        terminating = conditions.terminating is True
    # tuple.__new__: a NamedTuple's own constructor is Python code.
    return tuple.__new__(SliceEndpoint, (addresses[0], ready, terminating, ref.name or "",
                                         ref.uid or ""))


_FEW = 8  # moved endpoints looked for one by one; more than that through a dict


def _finder(before: tuple[int, ...], previous: Any, *, many: bool
            ) -> Callable[[int], SliceEndpoint | None]:
    """The cached endpoint whose key is given, None when there is none."""
    if not before:
        return lambda key: None
    if many:
        return dict(zip(before, previous, strict=True)).get

    def one(key: int) -> SliceEndpoint | None:
        try:
            return previous[before.index(key)]  # type: ignore[no-any-return]
        except ValueError:
            return None
    return one


def _endpoints(raws: list[msgspec.Raw] | None, previous: Any) -> SliceEndpoints:
    """Raises msgspec.ValidationError when an endpoint that must be decoded is not of the
    typed form."""
    if not raws:
        return SliceEndpoints(keys=())
    # Comprehensions, not one loop with appends: this runs for every endpoint of every event
    # of a used Service, and most endpoints are found among the cached ones.
    keys = [hash(bytes(raw)) for raw in raws]
    before: tuple[int, ...] = ()
    serving: tuple[SliceEndpoint, ...] | None = None  # None: picked out of the endpoints anew
    missing: list[int] | range
    if type(previous) is SliceEndpoints and previous.keys is not None:
        before = previous.keys
        held, now = len(before), len(keys)
        was_dropped = previous.dropped
        if held <= now and before == tuple(keys[:held]):
            # The most common event: pods added at the end, or none (a pod's start appends
            # it). The cached endpoints are taken as a whole, in C, and only the new looked at.
            found: list[SliceEndpoint | None] = list(previous)
            found += [None] * (now - held)
            missing = range(held, now)
            serving = previous.serving
        elif now < held and before[:now] == tuple(keys):
            # ... or removed at the end: what serves is unchanged unless one of them served.
            found = list(previous[:now])
            missing = range(0)
            if not any(e[1] and not e[2] for e in previous[now:]):
                serving = previous.serving
        else:
            # Otherwise each endpoint is first compared with the one in its place (one changed
            # in the middle); only those that moved are looked for (the keys are kept as int
            # objects, not an array: boxing 100 ints here would cost more than it saves).
            found = [kept if old == key else None
                     for old, kept, key in zip(before, previous, keys, strict=False)]
            found += [None] * (now - len(found))
            missing = [i for i, kept in enumerate(found) if kept is None]
    else:
        found = [None] * len(keys)
        missing = range(len(keys))
        was_dropped = _NO_KEYS
    dropped: set[int] = set()
    if missing:  # moved, new or changed endpoints (or ones no reader uses)
        moved = _finder(before, previous, many=len(missing) > _FEW)
        for index in missing:
            key = keys[index]
            found[index] = endpoint = moved(key)
            if endpoint is None and key not in was_dropped:
                found[index] = endpoint = _endpoint(_ENDPOINT.decode(raws[index]))
            if endpoint is None:
                dropped.add(key)
            elif serving is not None and endpoint[1] and not endpoint[2]:
                serving = None  # a new endpoint serves
        if dropped:
            keys = [key for key, kept in zip(keys, found, strict=True) if kept is not None]
            found = [kept for kept in found if kept is not None]
    endpoints: list[SliceEndpoint] = found  # type: ignore[assignment]  # no None left
    return SliceEndpoints(endpoints, serving, keys=tuple(keys),
                          dropped=frozenset(dropped) if dropped else _NO_KEYS)


def decode_slice_event(line: bytes, cached: Cached | None = None) -> Any:
    """One watch event's line, the object as the slice cache keeps it. `cached(key)`: what the
    cache holds of a slice, whose endpoints are reused where their JSON is unchanged."""
    try:
        event = _DECODER.decode(line)
        slice_ = event.object
        if event.type == "ERROR" or slice_ is None:
            return jsonbody.loads(line)  # a Status, read whole
        # The endpoints the cache holds of this slice, if any (inline: once per event).
        previous = None
        metadata = slice_.metadata
        if cached is not None and type(metadata) is dict:
            namespace, name = metadata.get("namespace"), metadata.get("name")
            if type(namespace) is str and type(name) is str:
                held = cached(f"{namespace}/{name}")
                previous = held.get("endpoints") if type(held) is dict else None
        endpoints = _endpoints(slice_.endpoints, previous)
    except msgspec.DecodeError:  # ValidationError included: not the typed form
        return jsonbody.loads(line)
    obj: dict[str, Any] = {}
    for name in ("apiVersion", "kind", "metadata", "addressType", "ports"):
        value = getattr(slice_, name)
        if value is not _UNSET:
            obj[name] = value
    obj["endpoints"] = endpoints
    return {"type": event.type, "object": obj}


__all__ = ["decode_slice_event"]
