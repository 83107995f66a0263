"""List responses: selection, key order, `limit`/`continue` pagination over a snapshot.

A paginated list keeps the entries it selected (references, not copies) so that every page
comes from the revision of the first one, as etcd serves pages at the list's revision.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from runtime.envtest.api import encode_for
from runtime.envtest.registry import ResourceType
from runtime.envtest.status import StatusError, bad_request, gone
from runtime.envtest.store import Entry, dumps

_SNAPSHOTS = 64
_TOO_OLD = ("The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue token "
            "in this response to retrieve the remainder of the results. Continuing with the "
            "provided token results in an inconsistent list - objects that were created, "
            "modified, or deleted between the time the first chunk was returned and now may "
            "show up in the list.")


@dataclass(frozen=True, slots=True)
class _Snapshot:
    revision: int
    entries: list[Entry]


class Lister:
    def __init__(self) -> None:
        self._snapshots: OrderedDict[int, _Snapshot] = OrderedDict()
        self._ids = itertools.count(1)

    def page(self, rt: ResourceType, entries: list[Entry], *, revision: int, compacted: int,
             match: Callable[[Mapping[str, Any]], bool] | None, limit: int,
             token: str, count_remaining: bool) -> bytes:
        """The serialized List for `entries` (already sorted by key)."""
        items, metadata = self.select(entries, revision=revision, compacted=compacted,
                                      match=match, limit=limit, token=token,
                                      count_remaining=count_remaining)
        head = dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version,
                      "metadata": metadata})
        return head[:-1] + b',"items":[' + b",".join(_item(rt, e) for e in items) + b"]}"

    def select(self, entries: list[Entry], *, revision: int, compacted: int,
               match: Callable[[Mapping[str, Any]], bool] | None, limit: int, token: str,
               count_remaining: bool) -> tuple[list[Entry], dict[str, Any]]:
        """One page of the selection and its list metadata."""
        offset = 0
        if token:
            snap_id, offset, revision = _decode_token(token)
            if revision < compacted:
                raise gone(_TOO_OLD)
            snapshot = self._snapshots.get(snap_id)
            if snapshot is None:
                raise gone(_TOO_OLD)
            self._snapshots.move_to_end(snap_id)
            selected = snapshot.entries
        else:
            selected = entries if match is None else [e for e in entries if match(e.obj)]
            snap_id = 0
        metadata: dict[str, Any] = {"resourceVersion": str(revision)}
        end = len(selected) if limit <= 0 else min(len(selected), offset + limit)
        if end < len(selected):
            if not snap_id:
                snap_id = next(self._ids)
                self._snapshots[snap_id] = _Snapshot(revision, selected)
                while len(self._snapshots) > _SNAPSHOTS:
                    self._snapshots.popitem(last=False)
            metadata["continue"] = _encode_token(snap_id, end, revision,
                                                 _key(selected[end - 1]))
            if count_remaining:
                metadata["remainingItemCount"] = len(selected) - end
        elif snap_id:
            self._snapshots.pop(snap_id, None)
        return list(itertools.islice(selected, offset, end)), metadata


def _key(entry: Entry) -> str:
    ns = entry.namespace
    return f"{ns}/{entry.name}" if ns else entry.name


def _item(rt: ResourceType, entry: Entry) -> bytes:
    raw = encode_for(entry, rt)
    if rt.custom:
        return raw
    # Items of built-in lists carry no apiVersion/kind, as the real server sends them; objects
    # are stored with those two keys first, so dropping them is a slice.
    head = b'{"apiVersion":' + dumps(rt.api_version) + b',"kind":' + dumps(rt.kind) + b","
    if raw.startswith(head):
        return b"{" + raw[len(head):]
    return raw


def _encode_token(snap_id: int, offset: int, revision: int, start: str) -> str:
    body = {"v": "meta.k8s.io/v1", "rv": revision, "start": start + "\x00", "s": snap_id,
            "o": offset}
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, int, int]:
    try:
        padded = token + "=" * (-len(token) % 4)
        body = json.loads(base64.urlsafe_b64decode(padded))
        return int(body["s"]), int(body["o"]), int(body["rv"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise _invalid_continue() from None


def _invalid_continue() -> StatusError:
    return bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                       "(version meta.k8s.io/v1)")
