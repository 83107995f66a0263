"""A binding's desired endpoints as one value, and the per-EndpointSlice memo that makes computing
them cheap when one slice of a large Service changes.

A Service with a thousand pods has ten or more EndpointSlices, and an endpoint event changes one
of them. Re-reading every slice, sorting every endpoint and digesting every checkpoint id on
each reconcile made the reconcile cost grow with the Service instead of with the change. Here a
slice is parsed once per version (its uid and resourceVersion identify its content), a Service's
set is recombined only when the endpoints of one of its slices changed (not for a new version
that lists the same pods in another order), and the endpoint digest of the checkpoint is
computed once per combined set. The value is exactly what `targets.ip_endpoints` and
`checkpoint.compute` give: only the work is memoized, so the checkpoint still changes exactly
when the target set (or a pod behind it) does.

The memo is valid because a slice's ip endpoints depend on that slice alone (and on the port
name and address family a binding asks for, which are part of the key).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

from controller.targetgroupbinding.slicecache import SlicesNotCached, is_index_entry
from controller.targetgroupbinding.targets import (
    Endpoint,
    Target,
    address_family,
    slice_ip_endpoints,
)
from runtime.objects import Obj, meta


def endpoints_digest(checkpoint_ids: Iterable[str]) -> str:
    """The endpoint half of a binding's checkpoint: sha256 of the sorted, comma-joined
    checkpoint ids, base64url without padding (upstream's format)."""
    joined = ",".join(sorted(checkpoint_ids))
    digest = hashlib.sha256(joined.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class EndpointSet:
    """The endpoints a binding wants, with their checkpoint digest. Read-only. Iterating gives
    the endpoints in `Endpoint` order; the order is only computed if something iterates, which
    a reconcile whose checkpoint matches never does."""

    __slots__ = ("_items", "_sorted", "_targets", "digest")

    def __init__(self, items: Sequence[Endpoint], *, digest: str | None = None) -> None:
        self._items = items
        self._sorted: tuple[Endpoint, ...] | None = None
        self._targets: frozenset[Target] | None = None
        self.digest = digest if digest is not None else endpoints_digest(
            e.checkpoint_id for e in items)

    @classmethod
    def of(cls, endpoints: Iterable[Endpoint]) -> EndpointSet:
        return cls(tuple(set(endpoints)))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Endpoint]:
        if self._sorted is None:
            self._sorted = tuple(sorted(self._items))
        return iter(self._sorted)

    @property
    def targets(self) -> frozenset[Target]:
        if self._targets is None:
            self._targets = frozenset(e.target for e in self._items)
        return self._targets

    def __repr__(self) -> str:
        return f"EndpointSet({len(self)} endpoints, digest={self.digest})"


@dataclass(frozen=True, slots=True)
class _Part:
    """One slice version's endpoints, and their checkpoint ids sorted."""

    resource_version: str
    by_target: dict[Target, Endpoint]
    ids: list[str]


def _part(slice_: Obj, resource_version: str, *, port_name: str, family: str,
          previous: _Part | None = None) -> _Part:
    """The slice's part; one holding the very `by_target` of `previous` when the new version
    has the same endpoints (its pods reordered, or endpoints that serve nowhere changed)."""
    found = slice_ip_endpoints(slice_, port_name=port_name, family=family,
                               previous=previous.by_target if previous is not None else None)
    if previous is not None and found == previous.by_target:
        return _Part(resource_version, previous.by_target, previous.ids)
    return _Part(resource_version, found, sorted(e.checkpoint_id for e in found.values()))


def _combine(parts: Sequence[_Part]) -> EndpointSet:
    """A target found in two slices (a pod moving between them) counts once: the later part's,
    as in `targets.ip_endpoints`; the memo orders parts by slice uid, so which one is
    deterministic."""
    by_target: dict[Target, Endpoint] = {}
    for part in parts:
        by_target.update(part.by_target)
    if len(by_target) == sum(len(p.by_target) for p in parts):
        # No target in two slices: the ids are the parts' sorted runs, which sorting merges
        # in linear time.
        ids: Iterable[str] = chain.from_iterable(p.ids for p in parts)
    else:
        ids = (e.checkpoint_id for e in by_target.values())
    return EndpointSet(tuple(by_target.values()), digest=endpoints_digest(ids))


@dataclass(slots=True)
class _ServiceEntry:
    versions: tuple[tuple[str, str], ...] = ()  # (uid, resourceVersion) of the slices, sorted
    parts: dict[str, _Part] = field(default_factory=dict)  # by slice uid
    result: EndpointSet | None = None


def _version(slice_: Obj) -> tuple[str, str] | None:
    """(uid, resourceVersion), or None when the slice lacks either and cannot be memoized."""
    m = meta(slice_)
    uid, rv = m.get("uid"), m.get("resourceVersion")
    if isinstance(uid, str) and uid and isinstance(rv, str) and rv:
        return uid, rv
    return None


class SliceMemo:
    """ip endpoints per (Service, port name, address family), recombined only when one of the
    Service's slices changed and each slice parsed once per version. Entries live as long as a
    binding asks for them: a Service's slices that are gone are dropped when it is next
    computed, and `retain` drops Services no binding uses any more."""

    def __init__(self, *, in_use: Callable[[], Collection[str]] | None = None) -> None:
        """`in_use`: the Services bindings use now; asked before an entry is added, so that
        entries of Services no binding uses any more never pile up."""
        self._entries: dict[tuple[str, str, str], _ServiceEntry] = {}
        self._in_use = in_use

    def __len__(self) -> int:
        return len(self._entries)

    def ip_endpoints(self, service_key: str, service_port: Obj, slices: Sequence[Obj], *,
                     ip_address_type: str = "ipv4") -> EndpointSet:
        """SlicesNotCached when a slice is only an index entry (slicecache.py) whose version
        the memo has not parsed: the caller fetches the Service's slices and asks again."""
        family = address_family(ip_address_type)
        port_name = service_port.get("name") or ""
        if not isinstance(port_name, str):
            port_name = ""
        versions: list[tuple[tuple[str, str], Obj]] = []
        for slice_ in slices:
            version = _version(slice_)
            if version is None:  # not from an API server: nothing identifies its content
                if any(is_index_entry(s) for s in slices):
                    raise SlicesNotCached(service_key)
                return _combine([_part(s, "", port_name=port_name, family=family)
                                 for s in slices])
            versions.append((version, slice_))
        versions.sort(key=lambda pair: pair[0])
        key = (service_key, port_name, family)
        entry = self._entries.get(key)
        if entry is None:
            if self._in_use is not None:
                self.retain(self._in_use())
            entry = self._entries[key] = _ServiceEntry()
        current = tuple(version for version, _ in versions)
        if entry.result is not None and entry.versions == current:
            return entry.result
        parts: dict[str, _Part] = {}
        # Unchanged when the same slices give the same endpoints as before (a new version
        # that only reordered its pods): the combined set and its digest are kept, not
        # recomputed over every endpoint of the Service.
        same = entry.result is not None and len(entry.parts) == len(versions)
        for (uid, rv), slice_ in versions:
            held = part = entry.parts.get(uid)
            if part is None or part.resource_version != rv:
                if is_index_entry(slice_):
                    raise SlicesNotCached(service_key)
                part = _part(slice_, rv, port_name=port_name, family=family, previous=part)
            if held is None or part.by_target is not held.by_target:
                same = False
            parts[uid] = part
        entry.versions, entry.parts = current, parts
        if not same or len(parts) != len(versions) or entry.result is None:
            entry.result = _combine(list(parts.values()))
        return entry.result

    def retain(self, used: Collection[str]) -> None:
        """Keep only the entries of the Services (`namespace/name`) in `used`."""
        for key in [k for k in self._entries if k[0] not in used]:
            del self._entries[key]


__all__ = ["EndpointSet", "SliceMemo", "endpoints_digest"]
