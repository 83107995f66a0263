"""Objects, the global revision and the event history: what etcd plus the watch cache hold.

Stored objects are never mutated: every write stores a new dict, so a list can hand out
references and an event can be serialized once for every watcher.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Entry:
    """A stored object and its JSON form, made on first use."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = dumps(self.obj)
        return self._raw

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


@dataclass(slots=True)
class Event:
    """One committed change. `old` is the state before it (for selector transitions)."""

    revision: int
    type: str  # ADDED, MODIFIED or DELETED
    store_key: str
    entry: Entry
    old: Entry | None
    _lines: dict[str, bytes] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.entry.namespace

    def line(self, event_type: str | None = None) -> bytes:
        """The watch line for this event, serialized once per type for all watchers."""
        kind = event_type or self.type
        line = self._lines.get(kind)
        if line is None:
            line = b'{"type":"' + kind.encode() + b'","object":' + self.entry.raw + b"}\n"
            self._lines[kind] = line
        return line


class Table:
    """The objects of one resource, by namespace ("" when cluster-scoped) and name."""

    __slots__ = ("_sorted", "by_namespace", "count")

    def __init__(self) -> None:
        self.by_namespace: dict[str, dict[str, Entry]] = {}
        self._sorted: list[tuple[str, str]] | None = None
        self.count = 0

    def get(self, namespace: str, name: str) -> Entry | None:
        return self.by_namespace.get(namespace, {}).get(name)

    def put(self, namespace: str, name: str, entry: Entry) -> None:
        bucket = self.by_namespace.setdefault(namespace, {})
        if name not in bucket:
            self._sorted = None
            self.count += 1
        bucket[name] = entry

    def remove(self, namespace: str, name: str) -> None:
        bucket = self.by_namespace.get(namespace)
        if bucket is not None and bucket.pop(name, None) is not None:
            self._sorted = None
            self.count -= 1
            if not bucket:
                del self.by_namespace[namespace]

    def entries(self, namespace: str | None) -> list[Entry]:
        """Sorted by key, as etcd returns a range."""
        if namespace is not None:
            bucket = self.by_namespace.get(namespace, {})
            return [bucket[name] for name in sorted(bucket)]
        if self._sorted is None:
            self._sorted = sorted((ns, name) for ns, bucket in self.by_namespace.items()
                                  for name in bucket)
        return [self.by_namespace[ns][name] for ns, name in self._sorted]


Listener = Callable[[Event], None]
ObjectKey = tuple[str, str, str]  # store key, namespace, name


class Store:
    """All objects plus a bounded history of events with one global revision."""

    def __init__(self, *, history_size: int = 10_000) -> None:
        self.revision = 1
        # Events at or below this revision are no longer available to watches.
        self.compacted = 1
        self._history: deque[Event] = deque()
        self._history_size = history_size
        self._tables: dict[str, Table] = {}
        self._listeners: dict[str, set[Listener]] = {}
        # For the garbage collector: uid → object key, owner uid → dependents' keys.
        self._uids: dict[str, ObjectKey] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}

    def table(self, store_key: str) -> Table:
        table = self._tables.get(store_key)
        if table is None:
            table = self._tables[store_key] = Table()
        return table

    def get(self, store_key: str, namespace: str, name: str) -> Entry | None:
        table = self._tables.get(store_key)
        return table.get(namespace, name) if table is not None else None

    def entries(self, store_key: str, namespace: str | None) -> list[Entry]:
        table = self._tables.get(store_key)
        return table.entries(namespace) if table is not None else []

    def namespaced_store_keys(self, namespace: str) -> Iterable[tuple[str, list[Entry]]]:
        for key, table in list(self._tables.items()):
            entries = table.entries(namespace)
            if entries:
                yield key, entries

    def drop_table(self, store_key: str) -> None:
        self._tables.pop(store_key, None)

    def commit(self, store_key: str, event_type: str, obj: Obj, old: Entry | None) -> Event:
        """Store (or, for DELETED, remove) `obj` at the next revision and publish the event.
        `obj` is owned by the store from here on."""
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        entry = Entry(obj)
        table = self.table(store_key)
        if old is not None:
            self._unindex(store_key, old)
        if event_type != "DELETED":
            self._index(store_key, entry)
        if event_type == "DELETED":
            table.remove(entry.namespace, entry.name)
        else:
            table.put(entry.namespace, entry.name, entry)
        event = Event(self.revision, event_type, store_key, entry, old)
        self._history.append(event)
        while len(self._history) > self._history_size:
            self.compacted = self._history.popleft().revision
        for listener in list(self._listeners.get(store_key, ())):
            listener(event)
        return event

    def _index(self, store_key: str, entry: Entry) -> None:
        key = (store_key, entry.namespace, entry.name)
        meta = entry.obj["metadata"]
        if meta.get("uid"):
            self._uids[meta["uid"]] = key
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid"):
                self._dependents.setdefault(str(ref["uid"]), set()).add(key)

    def _unindex(self, store_key: str, entry: Entry) -> None:
        key = (store_key, entry.namespace, entry.name)
        meta = entry.obj["metadata"]
        if meta.get("uid") and self._uids.get(meta["uid"]) == key:
            del self._uids[meta["uid"]]
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid"):
                owned = self._dependents.get(str(ref["uid"]))
                if owned is not None:
                    owned.discard(key)
                    if not owned:
                        del self._dependents[str(ref["uid"])]

    def exists(self, uid: str) -> bool:
        return uid in self._uids

    def key_of(self, uid: str) -> ObjectKey | None:
        return self._uids.get(uid)

    def dependents(self, uid: str) -> list[ObjectKey]:
        """Keys of the objects whose ownerReferences name `uid`."""
        return sorted(self._dependents.get(uid, ()))

    def compact(self) -> None:
        """Forget all history: a watch from any earlier revision gets 410 Gone."""
        self._history.clear()
        self.compacted = self.revision

    def events_since(self, store_key: str, revision: int) -> list[Event] | None:
        """Events of one resource after `revision`, or None if that revision is compacted."""
        if revision < self.compacted:
            return None
        if not self._history or revision >= self._history[-1].revision:
            return []
        # The history is ordered by revision: skip from the right end, where resumes land.
        start = len(self._history)
        while start > 0 and self._history[start - 1].revision > revision:
            start -= 1
        return [self._history[i] for i in range(start, len(self._history))
                if self._history[i].store_key == store_key]

    def subscribe(self, store_key: str, listener: Listener) -> None:
        self._listeners.setdefault(store_key, set()).add(listener)

    def unsubscribe(self, store_key: str, listener: Listener) -> None:
        listeners = self._listeners.get(store_key)
        if listeners is not None:
            listeners.discard(listener)
