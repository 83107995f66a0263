"""The informer cache: objects keyed `namespace/name` (`runtime.objects.key_of`), with
secondary indexes.

Objects in a Store are shared, not copied: whatever a handler or a reconciler reads from it is
the very dict the cache holds. Treat them as read-only (copy before modifying); a mutation
would silently change the cache and every other reader's view. There are no locks: the store
lives on one event loop and every method completes without awaiting.

Indexes follow client-go's AddIndexers: a name is registered once; registering the same function
again is a no-op, another function under a taken name is an error (two controllers sharing an
informer would otherwise each read the other's index). Index functions meet hostile objects: one
that raises (or returns something other than strings) indexes that object under no value for that
index, logs one line per object per interval, and leaves everything else working.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from runtime.failures import FailureLog
from runtime.objects import Obj, namespace_of
from runtime.objects import key_of as object_key

IndexFunc = Callable[[Obj], "list[str]"]

NAMESPACE_INDEX = "namespace"


def namespace_index(obj: Obj) -> list[str]:
    """client-go's MetaNamespaceIndexFunc: the object's namespace ("" for cluster-scoped)."""
    return [namespace_of(obj)]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Handed to `on_delete` when an object vanished while the watch was broken: the delete
    itself was never seen, so `obj` is the last state the cache knew, possibly stale."""

    key: str
    obj: Obj


def key_of(obj: Obj | DeletedFinalStateUnknown) -> str:
    """client-go's DeletionHandlingMetaNamespaceKeyFunc: tombstones carry their key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return object_key(obj)


class Store:
    """A dict of objects by key plus `name -> value -> keys` indexes (an Indexer).

    The built-in `namespace` index is always present.
    """

    def __init__(self, *, key_func: Callable[[Obj], str] = object_key,
                 failures: FailureLog | None = None) -> None:
        self._key_func = key_func
        self._failures = failures if failures is not None else FailureLog()
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        # index name → key → the values that key is indexed under (what to remove on change,
        # without calling the index function on the old object again)
        self._values: dict[str, dict[str, tuple[str, ...]]] = {}
        self.resource_version = ""
        self.add_indexer(NAMESPACE_INDEX, namespace_index)

    # ---- reads ---------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._items.values()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        return [self._items[key] for key in self._index(index_name).get(value, ())]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        return sorted(self._index(index_name).get(value, ()))

    def indexed(self, index_name: str, value: str) -> bool:
        """Whether any object has `value` in the index (no list made: event paths ask this)."""
        return bool(self._index(index_name).get(value))

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        return sorted(self._index(index_name))

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None

    # ---- indexers ------------------------------------------------------------------------

    def has_indexer(self, name: str) -> bool:
        return name in self._indexers

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Register an index; existing objects are indexed at once, so it may be added late.
        The same function again is a no-op; another one under a taken name is a ValueError."""
        existing = self._indexers.get(name)
        if existing is not None:
            if existing == func:  # `==`: a bound method is a new object on every access
                return
            raise ValueError(f"index {name!r} already exists with another function "
                             f"({_describe(existing)}, not {_describe(func)})")
        self._indexers[name] = func
        self._indices[name] = {}
        self._values[name] = {}
        for key, obj in self._items.items():
            self._index_one(name, func, key, obj)

    # ---- writes (the informer's, not handlers') -------------------------------------------

    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace; returns the previous object under the same key."""
        key = self._key_func(obj)
        old = self._items.get(key)
        self._items[key] = obj
        if old is None:
            self._index_obj(key, obj)
            return old
        # Most updates keep every index value (a slice stays its Service's): only the indexes
        # whose values changed are touched.
        for name, func in self._indexers.items():
            values = self._computed(name, func, key, obj)
            if values is not None and values == self._values[name].get(key, ()):
                continue
            self._unindex_one(name, key)
            if values is not None:
                self._add_values(name, key, values)
        return old

    def delete(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def replace(self, items: Iterable[Obj], resource_version: str) -> None:
        """Make the store hold exactly `items` (a list result), rebuilding the indexes."""
        self._items = {self._key_func(obj): obj for obj in items}
        for name in self._indices:
            self._indices[name] = {}
            self._values[name] = {}
        for key, obj in self._items.items():
            self._index_obj(key, obj)
        self.resource_version = resource_version

    def _index_obj(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            self._index_one(name, func, key, obj)

    def _computed(self, name: str, func: IndexFunc, key: str, obj: Obj
                  ) -> tuple[str, ...] | None:
        """The object's values in one index; None (reported) when the function fails."""
        try:
            values = tuple(func(obj))
            for value in values:
                if not isinstance(value, str):
                    raise TypeError(f"index value {value!r} is not a string")
        except Exception as exc:
            self._failures.failed(f"index {name!r}", key, exc)
            return None
        return values

    def _index_one(self, name: str, func: IndexFunc, key: str, obj: Obj) -> None:
        values = self._computed(name, func, key, obj)
        if values is not None:
            self._add_values(name, key, values)

    def _add_values(self, name: str, key: str, values: tuple[str, ...]) -> None:
        if not values:
            return
        index = self._indices[name]
        for value in values:
            keys = index.get(value)
            if keys is None:
                index[value] = {key}
            else:
                keys.add(key)
        self._values[name][key] = values

    def _unindex(self, key: str) -> None:
        for name in self._indices:
            self._unindex_one(name, key)

    def _unindex_one(self, name: str, key: str) -> None:
        index = self._indices[name]
        for value in self._values[name].pop(key, ()):
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]


def _describe(func: IndexFunc) -> str:
    return getattr(func, "__qualname__", None) or repr(func)
