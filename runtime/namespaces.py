"""Which namespaces a manager serves, and the reflector that watches a namespaced resource in
exactly those.

`Namespaces` is the scope: a fixed list (`--watch-namespace a,b`), the Namespaces a label
selector matches (`--namespace-selector`), or both (the listed ones that match). A selected set
changes while the process runs: a Namespace labelled to match is picked up, one that stops
matching is let go.

`NamespacesReflector` takes the place of an informer's one Reflector: one list and watch per
served namespace, each feeding the informer's one store, so every reader of the cache, its
indexes and its handlers see one informer as with any other scope. Why per namespace rather
than one cluster-wide watch filtered here: the process then needs read access only in the
namespaces it serves (a Role per namespace, not a ClusterRole over every Secret and Pod), and
objects of other namespaces never cross the wire or sit in memory.

Letting a namespace go stops its watch and nothing else: its objects stay in the cache as they
were last seen, so nothing the controllers made for them is deleted or deregistered (a
security-group rule computed from every cached binding stays wanted), and no handler hears of
them again (the resync skips them) until the namespace matches again. Then its fresh list is
compared with what the cache kept: what changed meanwhile is told as updates, adds of the
first list as initial ones (a checkpoint that still matches sends them to the paced lane),
what vanished as tombstones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.failures import FailureLog
from runtime.labelselector import Selector
from runtime.objects import Obj, name_of, namespace_of
from runtime.objects import key_of as object_key
from runtime.reflector import Reflector, ReflectorSettings
from runtime.resources import Resource
from runtime.store import Store

log = logging.getLogger(__name__)

Listener = Callable[[frozenset[str]], None]


class NamespaceInformer(Protocol):
    """What is read of the Namespace informer (a `SharedInformer`; named by what it offers,
    since the informer module builds on this one)."""

    store: Store

    @property
    def populated(self) -> bool: ...

    async def wait_populated(self) -> None: ...

    def add_handler(self, handler: Any = None, *, on_add: Any = None, on_update: Any = None,
                    on_delete: Any = None) -> Any: ...


class Namespaces:
    """The namespaces served: `names` (empty: any) that `selector` (None: any) matches, the
    selector read from `namespaces`, the cluster's Namespace informer."""

    def __init__(self, *, names: Iterable[str] = (), selector: Selector | None = None,
                 namespaces: NamespaceInformer | None = None) -> None:
        if selector is not None and namespaces is None:
            raise ValueError("a namespace selector needs the Namespace informer")
        self.names = frozenset(names)
        self.selector = selector
        self.informer = namespaces if selector is not None else None
        self._listeners: list[Listener] = []
        self._current = self.names if selector is None else frozenset[str]()
        if self.informer is not None:
            self.informer.add_handler(on_add=lambda obj, _: self._changed(),
                                      on_update=lambda old, new: self._changed(),
                                      on_delete=lambda obj: self._changed())

    def __str__(self) -> str:
        parts = [f"namespaces {','.join(sorted(self.names))}"] if self.names else []
        if self.selector is not None:
            parts.append(f"namespaces matching {self.selector}")
        return " and ".join(parts)

    async def wait_ready(self) -> frozenset[str]:
        """The served namespaces once they are known (the Namespace informer listed)."""
        if self.informer is not None:
            await self.informer.wait_populated()
            self._current = self._compute()
        return self._current

    def current(self) -> frozenset[str]:
        return self._current

    def serves(self, namespace: str) -> bool:
        return namespace in self._current

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """`listener(served)` after every change of the set; returns the unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _compute(self) -> frozenset[str]:
        assert self.informer is not None
        assert self.selector is not None
        selected = set()
        for obj in self.informer.store.list():
            # A Namespace being deleted still matches: its objects' deletions, and the
            # finalizers they wait on, are this process's to finish.
            name = name_of(obj)
            if name and self.selector.matches(obj) and (not self.names or name in self.names):
                selected.add(name)
        return frozenset(selected)

    def _changed(self) -> None:
        if self.informer is None or not self.informer.populated:
            return
        served = self._compute()
        if served == self._current:
            return
        joined, left = sorted(served - self._current), sorted(self._current - served)
        log.info("served namespaces changed: %s joined, %s let go",
                 ",".join(joined) or "none", ",".join(left) or "none")
        self._current = served
        for listener in list(self._listeners):
            listener(served)


class NamespaceSink(Protocol):
    """What `NamespacesReflector` needs of its informer."""

    @property
    def populated(self) -> bool: ...

    def on_replace(self, items: list[Obj], resource_version: str) -> None: ...

    def on_replace_namespace(self, namespace: str, items: list[Obj], *, joined: bool) -> None:
        ...

    def on_event(self, event_type: str, obj: Obj) -> None: ...

    def cached(self, key: str) -> Obj | None: ...


class _Slice:
    """One namespace's reflector sink: buffered until the informer's first list is whole,
    then straight through."""

    def __init__(self, owner: NamespacesReflector, namespace: str, *, joined: bool) -> None:
        self.owner = owner
        self.namespace = namespace
        self.buffer: dict[str, Obj] | None = None  # this namespace's first list, until merged
        self.joined = joined  # joined a populated informer: its first list is new to it
        self.reflector: Reflector | None = None
        self.task: asyncio.Task[None] | None = None

    def on_replace(self, items: list[Obj], resource_version: str) -> None:
        del resource_version  # one per namespace: meaningless for the merged cache
        sink = self.owner.sink
        if sink.populated:
            sink.on_replace_namespace(self.namespace, items, joined=self.joined)
            self.joined = False
            return
        self.buffer = {object_key(obj): obj for obj in items}
        self.owner._maybe_merge()

    def on_event(self, event_type: str, obj: Obj) -> None:
        sink = self.owner.sink
        if sink.populated:
            sink.on_event(event_type, obj)
        elif self.buffer is not None:
            if event_type == "DELETED":
                self.buffer.pop(object_key(obj), None)
            else:
                self.buffer[object_key(obj)] = obj

    def cached(self, key: str) -> Obj | None:
        if self.owner.sink.populated:
            return self.owner.sink.cached(key)
        return None if self.buffer is None else self.buffer.get(key)


class NamespacesReflector:
    """A Reflector's face (name, health, counters, transform, `run`) over one Reflector per
    served namespace."""

    def __init__(self, client: KubeClient, resource: Resource, sink: NamespaceSink, *,
                 namespaces: Namespaces, label_selector: str | None = None,
                 field_selector: str | None = None, settings: ReflectorSettings | None = None,
                 transform: Callable[[Obj], Obj] | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        if not resource.namespaced:
            raise ValueError(f"{resource.kind} is cluster-scoped; it has no namespace scope")
        self._client = client
        self._resource = resource
        self.sink = sink
        self.namespaces = namespaces
        self._label_selector = label_selector
        self._field_selector = field_selector
        self.settings = settings or ReflectorSettings()
        # What the cache keeps of each object; the informer may set it until it starts.
        self.transform = transform
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._slices: dict[str, _Slice] = {}
        self._stopping: list[asyncio.Task[None]] = []
        self._transform_failures = FailureLog(clock=self._clock)
        self.name = f"{resource} in {namespaces}"
        self._retired = _Counters()

    # ---- a Reflector's face ---------------------------------------------------------------

    def _reflectors(self) -> list[Reflector]:
        return [s.reflector for s in self._slices.values() if s.reflector is not None]

    @property
    def healthy(self) -> bool:
        return all(r.healthy for r in self._reflectors())

    @property
    def last_error(self) -> str | None:
        errors = [f"in {ns}: {s.reflector.last_error}" for ns, s in sorted(self._slices.items())
                  if s.reflector is not None and s.reflector.last_error is not None]
        return "; ".join(errors) or None

    @property
    def failures(self) -> int:
        return self._retired.failures + sum(r.failures for r in self._reflectors())

    @property
    def lists(self) -> int:
        return self._retired.lists + sum(r.lists for r in self._reflectors())

    @property
    def streamed_lists(self) -> int:
        return self._retired.streamed_lists + sum(r.streamed_lists for r in self._reflectors())

    @property
    def streaming_supported(self) -> bool | None:
        known = [r.streaming_supported for r in self._reflectors()
                 if r.streaming_supported is not None]
        return None if not known else all(known)

    @property
    def last_sync_resource_version(self) -> str:
        return ""  # each namespace has its own

    def transformed(self, obj: Obj) -> Obj:
        """As `Reflector.transformed`: the object as it came when the transform raises."""
        assert self.transform is not None
        try:
            return self.transform(obj)
        except Exception as exc:
            self._transform_failures.failed(f"{self.name}: transform", object_key(obj), exc)
            return obj

    def serves(self, namespace: str) -> bool:
        """A namespace watched now: objects of others are kept, but not acted on."""
        return namespace in self._slices

    def serves_object(self, obj: Obj) -> bool:
        return namespace_of(obj) in self._slices

    @property
    def served(self) -> frozenset[str]:
        return frozenset(self._slices)

    # ---- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch every served namespace, following the set, until cancelled."""
        served = await self.namespaces.wait_ready()
        changes: asyncio.Queue[frozenset[str]] = asyncio.Queue()
        unsubscribe = self.namespaces.subscribe(changes.put_nowait)
        try:
            self._follow(served)
            while True:
                self._follow(await changes.get())
        finally:
            unsubscribe()
            for namespace in list(self._slices):
                self._let_go(namespace)
            stopping, self._stopping = self._stopping, []
            for task in stopping:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _follow(self, served: frozenset[str]) -> None:
        for namespace in sorted(served - set(self._slices)):
            self._watch(namespace)
        for namespace in sorted(set(self._slices) - served):
            self._let_go(namespace)
        self._stopping = [t for t in self._stopping if not t.done()]
        self._maybe_merge()

    def _watch(self, namespace: str) -> None:
        piece = _Slice(self, namespace, joined=self.sink.populated)
        piece.reflector = Reflector(
            self._client, self._resource, piece, namespace=namespace,
            label_selector=self._label_selector, field_selector=self._field_selector,
            settings=self.settings, transform=self.transform, clock=self._clock, rng=self._rng)
        piece.task = asyncio.get_running_loop().create_task(
            piece.reflector.run(), name=f"reflector {self._resource} in {namespace}")
        self._slices[namespace] = piece

    def _let_go(self, namespace: str) -> None:
        """Stop the namespace's watch (its task is awaited when the reflector stops); what
        the cache holds of it stays."""
        piece = self._slices.pop(namespace)
        if piece.reflector is not None:
            self._retired.add(piece.reflector)
        if piece.task is not None:
            piece.task.cancel()
            self._stopping.append(piece.task)

    def _maybe_merge(self) -> None:
        """The informer's first list, once every served namespace has listed."""
        if self.sink.populated:
            return
        if any(s.buffer is None for s in self._slices.values()):
            return
        items = [obj for s in self._slices.values() for obj in (s.buffer or {}).values()]
        for piece in self._slices.values():
            piece.buffer = None
            piece.joined = False
        self.sink.on_replace(items, "")


class _Counters:
    """What reflectors of namespaces let go had counted."""

    def __init__(self) -> None:
        self.failures = self.lists = self.streamed_lists = 0

    def add(self, reflector: Reflector) -> None:
        self.failures += reflector.failures
        self.lists += reflector.lists
        self.streamed_lists += reflector.streamed_lists


__all__ = ["Namespaces", "NamespacesReflector"]
