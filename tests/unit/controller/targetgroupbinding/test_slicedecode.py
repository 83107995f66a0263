"""A slice watch event decoded into what the cache keeps gives exactly what JSON decoding and
the cache's transform give, for any document: well-formed, unusual or hostile."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.targetgroupbinding.slicecache import SliceTrimmer, kept_slice
from controller.targetgroupbinding.slicedecode import decode_slice_event
from controller.targetgroupbinding.sliceendpoints import SliceEndpoint
from runtime import jsonbody
from tests.support.objects import endpoint, endpoint_slice

_KEPT = ("apiVersion", "kind", "metadata", "addressType", "ports", "endpoints")


def _as_cached(event: Any) -> Any:
    """What the cache would hold of the event's object, decoded the ordinary way."""
    obj = kept_slice(copy.deepcopy(event["object"]))
    return {"type": event["type"], "object": {k: obj[k] for k in _KEPT if k in obj},
            "serving": obj["endpoints"].serving}


def _line(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def test_an_ordinary_event_is_decoded_into_slice_endpoints() -> None:
    obj = endpoint_slice("web", endpoints=[endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False),
                                           endpoint("10.0.0.3", kind="Node")])
    obj["endpoints"][0].update(nodeName="n1", zone="us-west-2a", hints={"forZones": []})
    obj["metadata"].update(resourceVersion="7", uid="u1", managedFields=[{"manager": "x"}])
    line = _line({"type": "MODIFIED", "object": obj})
    event = decode_slice_event(line)
    assert event["type"] == "MODIFIED"
    assert event["object"]["endpoints"] == (
        SliceEndpoint("10.0.0.1", True, False, "pod-10.0.0.1", "uid-10.0.0.1"),
        SliceEndpoint("10.0.0.2", False, False, "pod-10.0.0.2", "uid-10.0.0.2"))
    assert event["object"]["metadata"] == obj["metadata"]  # the transform strips it later
    assert _as_cached(event) == _as_cached(jsonbody.loads(line))
    assert SliceTrimmer.decode_watch_event(line) == event


def test_errors_and_documents_of_another_shape_are_decoded_as_json() -> None:
    status = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    assert decode_slice_event(_line(status)) == status
    hostile = {"type": "MODIFIED", "object": {"metadata": {"name": "s"}, "endpoints": [
        "no endpoint", {"addresses": [5], "targetRef": {"kind": "Pod"}},
        {"addresses": ["10.0.0.4"], "conditions": {"ready": "yes"},
         "targetRef": {"kind": "Pod", "name": 1}}]}}
    decoded = decode_slice_event(_line(hostile))
    assert decoded == hostile  # as JSON: the transform sorts it out, as for any list
    assert kept_slice(decoded["object"])["endpoints"] == (
        SliceEndpoint("10.0.0.4", False, False, "", ""),)
    # what only the standard library reads (NaN) is still read
    odd = decode_slice_event(b'{"type": "ADDED", "object": {"metadata": {"x": NaN}}}')
    assert math.isnan(odd["object"]["metadata"]["x"])


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
                    st.sampled_from(["Pod", "Node", "10.0.0.1", "uid-1"]))
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


def _fields(valid: bool) -> Any:
    """Endpoint fields of the typed form's types (`valid`), or anything at all."""
    def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(strategy, _value) if not valid else strategy

    flag = st.one_of(st.none(), st.booleans())
    text = st.one_of(st.none(), st.text(max_size=4), st.sampled_from(["Pod", "uid-1"]))
    conditions = st.one_of(
        st.none(), st.fixed_dictionaries({}, optional={"ready": maybe(flag)}),
        st.fixed_dictionaries({"ready": maybe(flag), "terminating": maybe(flag)},
                              optional={"serving": _value}))
    ref = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "kind": maybe(st.one_of(st.none(), st.sampled_from(["Pod", "Node", ""]))),
        "name": maybe(text), "uid": maybe(text), "namespace": _value}))
    # Mostly what an API server writes (an address, a pod), with any of it missing or odd.
    usual_ref = st.fixed_dictionaries({"kind": st.just("Pod")}, optional={
        "name": maybe(text), "uid": maybe(text)})
    endpoint = st.fixed_dictionaries({
        "addresses": maybe(st.lists(st.sampled_from(["10.0.0.1", "10.0.0.2", ""]),
                                    min_size=1, max_size=2)),
        "targetRef": maybe(st.one_of(usual_ref, usual_ref, ref))}, optional={
        "conditions": maybe(conditions), "nodeName": _value, "zone": _value,
        "hints": _value})
    return st.fixed_dictionaries({}, optional={
        "metadata": st.one_of(st.fixed_dictionaries({"name": st.text(max_size=3)}), _value),
        "apiVersion": _value, "kind": _value, "addressType": _value, "ports": _value,
        "endpoints": st.one_of(st.none(), st.lists(
            endpoint if valid else st.one_of(endpoint, _value), max_size=4)),
        "other": _value})


_KINDS = st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"])


def _one(endpoint: dict[str, Any]) -> dict[str, Any]:
    return {"endpoints": [{"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod"}, **endpoint}]}


@settings(max_examples=300, deadline=None)
@given(kind=_KINDS, obj=_fields(valid=True))
@example(kind="ADDED", obj=_one({"conditions": {"ready": True, "terminating": True}}))
@example(kind="ADDED", obj=_one({"conditions": None}))
@example(kind="ADDED", obj=_one({"conditions": {"ready": None, "terminating": False}}))
@example(kind="ADDED", obj=_one({"targetRef": {"kind": "Pod", "name": None, "uid": None}}))
@example(kind="ADDED", obj=_one({"addresses": ["10.0.0.1", "10.0.0.2"]}))
def test_any_document_of_the_typed_form_is_cached_as_json_and_the_transform_would(
        kind: str, obj: dict[str, Any]) -> None:
    line = _line({"type": kind, "object": obj})
    assert _as_cached(decode_slice_event(line)) == _as_cached(jsonbody.loads(line))


@settings(max_examples=300, deadline=None)
@given(kind=_KINDS, obj=_fields(valid=False))
def test_any_document_at_all_is_cached_as_json_and_the_transform_would(
        kind: str, obj: dict[str, Any]) -> None:
    line = _line({"type": kind, "object": obj})
    assert _as_cached(decode_slice_event(line)) == _as_cached(jsonbody.loads(line))


# ---- the next event of a slice, reusing what the cache holds ------------------------------

_ENDPOINT = st.one_of(st.fixed_dictionaries({
    "addresses": st.lists(st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"]), min_size=1,
                          max_size=1),
    "conditions": st.fixed_dictionaries({"ready": st.booleans(), "terminating": st.booleans()}),
    "targetRef": st.fixed_dictionaries({"kind": st.sampled_from(["Pod", "Pod", "Node"]),
                                        "name": st.sampled_from(["a", "b", "c"])})}),
    st.just({"targetRef": {"kind": "Pod", "name": "no-address"}}))


def _slice_line(endpoints: list[dict[str, Any]]) -> bytes:
    return _line({"type": "MODIFIED", "object": {
        "metadata": {"name": "s", "namespace": "ns"}, "endpoints": endpoints}})


def _used(endpoint: dict[str, Any]) -> bool:
    return bool(endpoint["targetRef"]["kind"] == "Pod" and endpoint.get("addresses"))


@settings(max_examples=300, deadline=None)
@given(first=st.lists(_ENDPOINT, max_size=12), data=st.data())
def test_the_next_event_reuses_unchanged_endpoints_and_decodes_the_rest_as_json_would(
        first: list[dict[str, Any]], data: Any) -> None:
    # The next version: the first's endpoints kept in place, moved, dropped, repeated, or
    # new ones among them, in any order and number.
    pick = st.one_of(st.sampled_from(first), _ENDPOINT) if first else _ENDPOINT
    second = data.draw(st.lists(pick, max_size=14))
    _check_next(first, second)


def _check_next(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> None:
    held = decode_slice_event(_slice_line(first))["object"]
    line = _slice_line(second)
    event = decode_slice_event(line, {"ns/s": held}.get)
    assert _as_cached(event) == _as_cached(jsonbody.loads(line))
    fresh = decode_slice_event(line)["object"]["endpoints"]
    assert event["object"]["endpoints"] == fresh
    # What serves, whether picked out anew or carried over from the cached endpoints.
    assert event["object"]["endpoints"].serving == fresh.serving
    # An endpoint whose JSON the cache holds is the very tuple it holds (the predicate then
    # compares by identity), wherever it now is.
    kept = {id(e) for e in held["endpoints"]}
    held_json = {json.dumps(e) for e in first}  # reused by its JSON, byte for byte
    reused = sum(1 for e in event["object"]["endpoints"] if id(e) in kept)
    assert reused == sum(1 for e in second if json.dumps(e) in held_json and _used(e))


@settings(max_examples=300, deadline=None)
@given(first=st.lists(_ENDPOINT, max_size=12), cut=st.integers(0, 12),
       added=st.lists(_ENDPOINT, max_size=4))
def test_endpoints_added_or_removed_at_the_end_keep_the_cached_ones(
        first: list[dict[str, Any]], cut: int, added: list[dict[str, Any]]) -> None:
    """The common event (pods added at the end, or removed from it), which takes the cached
    endpoints as a whole and what serves with them unless an added or removed one serves."""
    _check_next(first, first[:cut] + added)
