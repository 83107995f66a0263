"""An EndpointSlice's endpoints as the cache keeps them: one small tuple per pod-backed endpoint.

Every reader of a slice's endpoints (target computation, readiness gates, the watch's view)
needs the same five facts of an endpoint: its first address, whether it is ready, whether it is
terminating, and the name and uid of the pod behind it. An endpoint as the API serves it is four
containers (the endpoint, its addresses, its conditions, its targetRef) of which the readers
took these few fields, on every reconcile, with a type check at each step. The informer's
transform (slicecache.py) now reads them once per slice version into `SliceEndpoint` tuples:
about a tenth of the memory of the decoded endpoint, compared and hashed in C, and the only
place where a hostile endpoint (a string instead of a dict, a number for an address) is sorted
out. An endpoint no reader would use (no address, not backed by a Pod) is not kept.

Slices that did not come through the cache (a test's, a list straight from the API server) are
read the same way by `endpoints_of`, so every reader takes either form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from runtime.objects import Obj


class SliceEndpoint(NamedTuple):
    address: str  # the first of `addresses`: the one a target uses
    ready: bool  # conditions.ready is true
    terminating: bool  # conditions.terminating is true
    pod: str  # targetRef.name ("" when it is no string)
    uid: str  # targetRef.uid ("" when absent or no string)


class SliceEndpoints(tuple[SliceEndpoint, ...]):
    """A kept slice's endpoints, with those that serve (ready, not terminating) picked out
    once: the slice's next event compares its serving endpoints with these.

    Read from a watch event (slicedecode.py), they also carry what the slice's next event
    reuses: `keys`, a fingerprint of each endpoint's JSON as it arrived (in the order of the
    endpoints), and `dropped`, those of the endpoints no reader uses. An endpoint whose JSON is
    unchanged is then not decoded again; None when the endpoints came another way."""

    serving: tuple[SliceEndpoint, ...]
    keys: tuple[int, ...] | None
    dropped: frozenset[int]

    def __new__(cls, endpoints: Iterable[SliceEndpoint] = (),
                serving: tuple[SliceEndpoint, ...] | None = None, *,
                keys: tuple[int, ...] | None = None,
                dropped: frozenset[int] = frozenset()) -> SliceEndpoints:
        self = super().__new__(cls, endpoints)
        self.serving = (serving if serving is not None
                        else tuple([e for e in self if e.ready and not e.terminating]))
        self.keys = keys
        self.dropped = dropped
        return self



def compact(endpoints: Any) -> SliceEndpoints:
    """The API's endpoint list read into tuples; anything that is not a pod-backed endpoint
    with an address is left out (no reader would have used it). One loop with no call per
    endpoint: it runs for every event of every slice of a used Service."""
    if type(endpoints) is not list:
        return _NONE
    found = []
    make = tuple.__new__  # a NamedTuple's own constructor is Python code
    for endpoint in endpoints:
        if type(endpoint) is not dict:
            continue
        ref = endpoint.get("targetRef")
        addresses = endpoint.get("addresses")
        if (type(ref) is not dict or ref.get("kind") != "Pod" or type(addresses) is not list
                or not addresses or type(address := addresses[0]) is not str):
            continue
        conditions = endpoint.get("conditions")
        # Kubernetes' rule, which upstream follows: a readiness not given is taken as ready.
        # Anything else than a boolean or nothing is hostile: not ready.
        if type(conditions) is dict:
            ready_given = conditions.get("ready")
            ready = ready_given is True or ready_given is None
            terminating = conditions.get("terminating") is True
        else:
            ready, terminating = conditions is None, False
        name = ref.get("name")
        uid = ref.get("uid")
        found.append(make(SliceEndpoint, (address, ready, terminating,
                                          name if type(name) is str else "",
                                          uid if type(uid) is str else "")))
    return SliceEndpoints(found)


def endpoints_of(slice_: Obj) -> SliceEndpoints:
    """The slice's endpoints, as the cache keeps them (JSON never decodes to a tuple) or read
    from the API's form."""
    endpoints = slice_.get("endpoints")
    if type(endpoints) is SliceEndpoints:
        return endpoints
    if isinstance(endpoints, tuple):  # SliceEndpoint tuples put together by hand
        return SliceEndpoints(endpoints)
    return compact(endpoints)


_NONE = SliceEndpoints()

__all__ = ["SliceEndpoint", "SliceEndpoints", "compact", "endpoints_of"]
