"""SharedInformer: one Reflector feeding one Store, fanned out to event handlers.

There is one informer per (resource, namespace, label selector, field selector) per process;
`SharedInformerFactory` hands out the same instance for the same scope.

Delivery contract (client-go's processorListener, simplified for one event loop):
- The store is updated before any handler hears of the change, so a handler that reads the
  cache sees at least the state it was told about.
- Each handler has its own unbounded buffer and task: notifications reach it one at a time,
  in the order the informer saw them; a slow handler delays only itself. A watch event that
  finds a handler's buffer empty and its task idle is handed to it at once, on the watch's
  task, and the rest of an async handler's work is left to its task; the order is the same,
  and an event costs no task switch per handler (at a hundred events a second, with every
  event met by cold caches, that switch was a tenth of an event's CPU).
- `on_add(obj, is_initial_list)` is True for the initial list and for the replay a handler
  registered after start receives; `on_update(old, new)`; `on_delete(obj)` receives a
  `DeletedFinalStateUnknown` tombstone when the object vanished during a watch outage.
- A relist (after 410 Gone) reports only differences: adds, updates for objects whose
  resourceVersion changed, tombstones for vanished ones. Replaying unchanged objects is the
  resync's job: every `resync_period` (jittered) each cached object is replayed as
  `on_update(obj, obj)` with an unchanged resourceVersion, without any API call.
- Handlers are plain callables (coroutine functions are awaited). An exception is logged and
  the informer carries on. Objects handed to handlers are the cache's own: read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from runtime.client import KubeClient
from runtime.clock import Clock, RealClock
from runtime.failures import FailureLog
from runtime.namespaces import Namespaces, NamespacesReflector
from runtime.objects import Obj, resource_version_of, strip_managed_fields
from runtime.prioritydecisions import BUSY_SLICE
from runtime.reflector import Reflector, ReflectorSettings
from runtime.resources import Resource
from runtime.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexFunc,
    Store,
    key_of,
)

__all__ = [
    "NAMESPACE_INDEX", "DeletedFinalStateUnknown", "EventHandler", "HandlerRegistration",
    "InformerScope", "InformerSettings", "ReflectorSettings", "SharedInformer",
    "SharedInformerFactory", "Store",
]

log = logging.getLogger(__name__)

Transform = Callable[[Obj], Obj]
AddFunc = Callable[[Obj, bool], object]
UpdateFunc = Callable[[Obj, Obj], object]
DeleteFunc = Callable[["Obj | DeletedFinalStateUnknown"], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class InformerSettings:
    resync_period: float | None = None  # None: no resync (controller-runtime uses 10 h)
    resync_jitter: float = 0.1  # each period is stretched by up to this fraction
    reflector: ReflectorSettings = field(default_factory=ReflectorSettings)

    def __post_init__(self) -> None:
        if self.resync_period is not None and self.resync_period < 1:
            raise ValueError(f"resync_period must be >= 1 s or None, got {self.resync_period!r}")
        if not 0 <= self.resync_jitter <= 1:
            raise ValueError(f"resync_jitter must be within [0, 1], got {self.resync_jitter!r}")


class EventHandler(Protocol):
    def on_add(self, obj: Obj, is_initial_list: bool) -> object: ...

    def on_update(self, old: Obj, new: Obj) -> object: ...

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> object: ...


class _Synced:
    """Marker queued after a handler's initial adds; popping it makes the handler synced."""


_SYNCED = _Synced()


class _Unfinished:
    """What a handler given a notification at once returned to await: its task awaits it
    before anything queued after it."""

    __slots__ = ("awaitable", "kind", "obj")

    def __init__(self, awaitable: Any, kind: str, obj: Any) -> None:
        self.awaitable = awaitable
        self.kind = kind
        self.obj = obj


Notification = tuple[str, Any, Any] | _Synced | _Unfinished


class HandlerRegistration:
    """One handler's buffer and delivery task."""

    def __init__(self, informer: SharedInformer, *, on_add: AddFunc | None,
                 on_update: UpdateFunc | None, on_delete: DeleteFunc | None) -> None:
        self._informer = informer
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        self._pending: deque[Notification] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._synced = False
        self._idle = False  # the task waits for work, with nothing of it unfinished

    @property
    def has_synced(self) -> bool:
        """The informer is synced and this handler has been given every initial add."""
        return self._synced

    @property
    def pending(self) -> int:
        return len(self._pending)

    def remove(self) -> None:
        self._informer.remove_handler(self)

    def _push(self, notification: Notification) -> None:
        self._pending.append(notification)
        self._wakeup.set()

    def _push_now(self, notification: tuple[str, Any, Any]) -> None:
        """A watch event: delivered here and now when nothing is before it, queued if
        anything is (so the order holds)."""
        if self._pending or not self._idle:
            self._push(notification)
            return
        kind, first, second = notification
        result = self._call(kind, first, second)
        if result is not None and inspect.isawaitable(result):
            self._push(_Unfinished(result, kind, first))

    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"informer-handler {self._informer.name}")

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _call(self, kind: str, first: Any, second: Any) -> object:
        """The handler's result for one notification; an exception is logged (None)."""
        try:
            if kind == "add":
                return self._on_add(first, second) if self._on_add else None
            if kind == "update":
                return self._on_update(first, second) if self._on_update else None
            return self._on_delete(first) if self._on_delete else None
        except Exception:
            log.exception("%s: %s handler failed for %s", self._informer.name, kind,
                          _describe(first))
            return None

    def _turn(self) -> float:
        """Seconds of deliveries before giving the loop back: shorter while a real change is
        being reconciled, whose every await otherwise waits a whole turn of each handler
        still replaying the cache."""
        busy = self._informer.busy
        return BUSY_SLICE if busy is not None and busy() else _YIELD_AFTER

    async def _run(self) -> None:
        delivered = 0
        since, turn = time.perf_counter(), self._turn()
        while True:
            while not self._pending:
                self._wakeup.clear()
                self._idle = True
                try:
                    await self._wakeup.wait()
                finally:
                    self._idle = False
                delivered, since, turn = 0, time.perf_counter(), self._turn()
            delivered += 1
            if delivered % _YIELD_EVERY == 0 or time.perf_counter() - since > turn:
                # A replay of thousands of cached objects (or handlers that take their time
                # with each, as a checkpoint comparison does) would otherwise hold the loop
                # until it ends, and the workers could not start on what it has queued.
                await asyncio.sleep(0)
                since, turn = time.perf_counter(), self._turn()
            notification = self._pending.popleft()
            if isinstance(notification, _Synced):
                self._synced = True
                self._informer._sync_changed.set()
                continue
            if isinstance(notification, _Unfinished):
                result: object = notification.awaitable
                kind, first = notification.kind, notification.obj
            else:
                kind, first, second = notification
                result = self._call(kind, first, second)
            # `is not None` first: isawaitable's ABC check costs more than the handler.
            if result is None or not inspect.isawaitable(result):
                continue
            try:
                await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: %s handler failed for %s", self._informer.name, kind,
                              _describe(first))


_YIELD_EVERY = 64
# Seconds of deliveries without giving the loop back. Real time, not the injectable clock: it
# decides only when other tasks get their turn, nothing a handler or test can observe.
_YIELD_AFTER = 0.01
# ... and while `busy()`: runtime.prioritydecisions' BUSY_SLICE, the turn its decisions take then.


def _name(func: object) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


def _describe(obj: Any) -> str:
    try:
        return key_of(obj)
    except (ValueError, AttributeError, TypeError):
        return "<unknown object>"


class SharedInformer:
    """A cache of one resource scope, kept current by a Reflector, with event handlers.

    Prefer `SharedInformerFactory.informer(...)` to constructing one directly, so that every
    controller in the process shares it.
    """

    def __init__(self, client: KubeClient, resource: Resource, *, namespace: str | None = None,
                 namespaces: Namespaces | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 settings: InformerSettings | None = None,
                 transform: Transform | None = strip_managed_fields,
                 start_after: Sequence[SharedInformer] = (),
                 clock: Clock | None = None, rng: random.Random | None = None,
                 busy: Callable[[], bool] | None = None) -> None:
        self.resource = resource
        # Whether a real change is being reconciled (the manager's Foreground): handlers then
        # give the loop back more often.
        self.busy = busy
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.settings = settings or InformerSettings()
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.store = Store(failures=FailureLog(clock=self._clock))
        self.namespaces = namespaces
        # Several namespaces, or a selected set of them: one watch per namespace, one cache
        # (runtime/namespaces.py says why).
        self.reflector: Reflector | NamespacesReflector
        if namespaces is not None:
            if namespace is not None:
                raise ValueError("an informer is scoped by one namespace or by a set of them")
            self.reflector = NamespacesReflector(
                client, resource, self, namespaces=namespaces, label_selector=label_selector,
                field_selector=field_selector, settings=self.settings.reflector,
                transform=transform, clock=self._clock, rng=self._rng)
        else:
            self.reflector = Reflector(
                client, resource, self, namespace=namespace, label_selector=label_selector,
                field_selector=field_selector, settings=self.settings.reflector,
                transform=transform, clock=self._clock, rng=self._rng)
        self.name = self.reflector.name
        self._default_transform = transform
        self._start_after: list[SharedInformer] = []
        for other in start_after:
            self.add_start_after(other)
        self._handlers: list[HandlerRegistration] = []
        self._populated = False
        self._sync_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    # ---- handlers and indexes -----------------------------------------------------------

    def add_handler(self, handler: EventHandler | None = None, *,
                    on_add: AddFunc | None = None, on_update: UpdateFunc | None = None,
                    on_delete: DeleteFunc | None = None) -> HandlerRegistration:
        """Register an object with on_add/on_update/on_delete methods, or callables. A handler
        added after the informer synced first receives the cache as initial adds."""
        if handler is not None:
            on_add = on_add or getattr(handler, "on_add", None)
            on_update = on_update or getattr(handler, "on_update", None)
            on_delete = on_delete or getattr(handler, "on_delete", None)
        registration = HandlerRegistration(self, on_add=on_add, on_update=on_update,
                                           on_delete=on_delete)
        self._handlers.append(registration)
        if self._populated:
            for obj in self.store.list():
                registration._push(("add", obj, True))
            registration._push(_SYNCED)
        if self._started:
            registration._start()
        return registration

    def remove_handler(self, registration: HandlerRegistration) -> None:
        if registration in self._handlers:
            self._handlers.remove(registration)
            task = registration._task
            registration._task = None
            if task is not None:
                task.cancel()
            self._sync_changed.set()

    def add_indexer(self, name: str, func: IndexFunc, *, exist_ok: bool = True) -> None:
        """Add an index to the cache. Controllers sharing an informer may each ask for the same
        index with the same function (a no-op); another function under a taken name is a
        ValueError (`Store.add_indexer`). `exist_ok` is accepted for compatibility only: it
        cannot make a clash silent."""
        del exist_ok
        self.store.add_indexer(name, func)

    # ---- what the cache keeps -----------------------------------------------------------------

    @property
    def transform(self) -> Transform | None:
        return self.reflector.transform

    def use_transform(self, transform: Transform) -> None:
        """Have the cache keep `transform(obj)` of each object instead of what the informer was
        created with (it replaces that default, so it does the default's work too). One
        informer keeps one shape for every reader: once it has started, or once another
        transform was chosen, asking for a different one is a ValueError."""
        current = self.reflector.transform
        if transform == current:
            return
        if current is not self._default_transform:
            raise ValueError(f"informer {self.name} already keeps objects through "
                             f"{_name(current)}, not {_name(transform)}: another transform "
                             "would give its readers a cache they do not expect")
        if self._started:
            raise ValueError(f"informer {self.name} has started; its transform can no "
                             "longer change")
        self.reflector.transform = transform

    def retransform(self, obj: Obj) -> bool:
        """Take `obj`, a fresh read of an object the cache holds, through the transform again,
        if the cache holds that very version: for a transform whose decision about an object
        changed (it keeps more of it now). Handlers hear of it as an update with an unchanged
        resourceVersion. False when the cache holds another version, or none: the watch has
        news of it, which the transform sees anyway."""
        try:
            key = key_of(obj)
        except (ValueError, AttributeError, TypeError):
            return False
        cached = self.store.get(key)
        if cached is None or not _rv(obj) or _rv(cached) != _rv(obj):
            return False
        new = self.reflector.transformed(obj) if self.transform is not None else obj
        old = self.store.upsert(new)
        self._notify(("update", old, new))
        return True

    def add_start_after(self, other: SharedInformer) -> None:
        """List only once `other` holds its initial list: for a transform that reads `other`'s
        cache to decide what to keep (e.g. only the objects something in it refers to)."""
        if other is self or self in other._dependencies():
            raise ValueError(f"informer {self.name} cannot wait for {other.name}: "
                             "it would wait for itself")
        if self._started and not other._populated:
            raise ValueError(f"informer {self.name} has started; it cannot wait any more")
        if other not in self._start_after:
            self._start_after.append(other)

    def _dependencies(self) -> set[SharedInformer]:
        seen: set[SharedInformer] = set()
        pending = list(self._start_after)
        while pending:
            informer = pending.pop()
            if informer not in seen:
                seen.add(informer)
                pending.extend(informer._start_after)
        return seen

    # ---- sync state -----------------------------------------------------------------------

    @property
    def populated(self) -> bool:
        """The initial list is in the store (handlers may not have heard of it yet)."""
        return self._populated

    async def wait_populated(self) -> None:
        """Until the initial list is in the store."""
        await self._wait_populated()

    async def _wait_populated(self) -> None:
        while not self._populated:
            self._sync_changed.clear()
            await self._sync_changed.wait()

    @property
    def has_synced(self) -> bool:
        """The initial list is in the store and every handler has been given its adds."""
        return self._populated and all(h.has_synced for h in self._handlers)

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """True once synced; False if `timeout` (seconds) passes first."""
        try:
            async with asyncio.timeout(timeout):
                while not self.has_synced:
                    self._sync_changed.clear()
                    await self._sync_changed.wait()
        except TimeoutError:
            return False
        return True

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # ---- lifecycle --------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> None:
        """Start listing, watching and delivering (idempotent; needs a running loop)."""
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        for registration in self._handlers:
            registration._start()
        self._tasks.append(loop.create_task(self._run_reflector(),
                                            name=f"reflector {self.name}"))
        if self.settings.resync_period is not None:
            self._tasks.append(loop.create_task(self._resync_loop(),
                                                name=f"resync {self.name}"))

    async def _run_reflector(self) -> None:
        for other in self._start_after:
            await other._wait_populated()
        await self.reflector.run()

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for registration in list(self._handlers):
            await registration._stop()
        self._started = False

    async def _resync_loop(self) -> None:
        period = self.settings.resync_period
        assert period is not None
        while True:
            await self._clock.sleep(
                period * (1.0 + self.settings.resync_jitter * self._rng.random()))
            if self._populated:
                self.resync()

    def resync(self) -> None:
        """Replay the cache to every handler as updates with an unchanged resourceVersion;
        not the objects of a namespace let go (kept, not acted on)."""
        objects = self.store.list()
        reflector = self.reflector
        if isinstance(reflector, NamespacesReflector):
            objects = [obj for obj in objects if reflector.serves_object(obj)]
        for registration in self._handlers:
            for obj in objects:
                registration._push(("update", obj, obj))

    # ---- ReflectorSink ------------------------------------------------------------------

    def _notify(self, notification: Notification) -> None:
        for registration in self._handlers:
            registration._push(notification)

    def _notify_now(self, notification: tuple[str, Any, Any]) -> None:
        for registration in self._handlers:
            registration._push_now(notification)

    def on_replace(self, items: list[Obj], resource_version: str) -> None:
        store = self.store
        if not self._populated:
            store.replace(items, resource_version)
            self._populated = True
            for obj in items:
                self._notify(("add", obj, True))
            self._notify(_SYNCED)
            self._sync_changed.set()
            return
        previous = set(store.keys())
        notifications: list[Notification] = []
        for obj in items:
            old = store.upsert(obj)
            key = key_of(obj)
            previous.discard(key)
            if old is None:
                notifications.append(("add", obj, False))
            elif _rv(old) != _rv(obj):
                notifications.append(("update", old, obj))
        for key in previous:
            old = store.delete(key)
            if old is not None:
                notifications.append(("delete", DeletedFinalStateUnknown(key, old), None))
        store.resource_version = resource_version
        for notification in notifications:
            self._notify(notification)

    def on_replace_namespace(self, namespace: str, items: list[Obj], *, joined: bool) -> None:
        """A list of one namespace of a populated cache (a relist, or the first list of a
        namespace that joined the served set): differences only, as `on_replace`, within that
        namespace. `joined`: adds are told as initial ones."""
        store = self.store
        previous = set(store.index_keys(NAMESPACE_INDEX, namespace))
        notifications: list[Notification] = []
        for obj in items:
            old = store.upsert(obj)
            previous.discard(key_of(obj))
            if old is None:
                notifications.append(("add", obj, joined))
            elif _rv(old) != _rv(obj):
                notifications.append(("update", old, obj))
        for key in previous:
            old = store.delete(key)
            if old is not None:
                notifications.append(("delete", DeletedFinalStateUnknown(key, old), None))
        for notification in notifications:
            self._notify(notification)

    def cached(self, key: str) -> Obj | None:
        return self.store.get(key)

    def serves(self, namespace: str) -> bool:
        """Objects of `namespace` are watched now: False outside the informer's namespace,
        and for a namespace let go, whose objects the cache keeps but nobody should act on."""
        if self.namespaces is not None:
            return self.namespaces.serves(namespace)
        return self.namespace is None or self.namespace == namespace

    def on_event(self, event_type: str, obj: Obj) -> None:
        store = self.store
        if event_type == "DELETED":
            old = store.delete(key_of(obj))
            if old is not None:
                self._notify_now(("delete", obj, None))
        else:
            old = store.upsert(obj)
            if old is None:
                self._notify_now(("add", obj, False))
            else:
                self._notify_now(("update", old, obj))
        rv = _rv(obj)
        if rv:
            store.resource_version = rv


_rv = resource_version_of


@dataclass(frozen=True, slots=True)
class InformerScope:
    resource: Resource
    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    namespaces: Namespaces | None = None  # compared by identity: one set per manager


class SharedInformerFactory:
    """Hands out one SharedInformer per scope and starts them together."""

    def __init__(self, client: KubeClient, *, settings: InformerSettings | None = None,
                 transform: Transform | None = strip_managed_fields,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 busy: Callable[[], bool] | None = None) -> None:
        self._client = client
        self._busy = busy
        self._settings = settings or InformerSettings()
        self._transform = transform
        self._clock = clock
        self._rng = rng
        self._informers: dict[InformerScope, SharedInformer] = {}
        self._started = False

    def informer(self, resource: Resource, *, namespace: str | None = None,
                 namespaces: Namespaces | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 transform: Transform | None = None,
                 start_after: Sequence[SharedInformer] = ()) -> SharedInformer:
        """The informer for this scope, created on first request. Once the factory runs, new
        informers start at once.

        `transform`: what its cache keeps of each object, instead of the factory's default
        (client-go's SetTransform: a numerous kind's cache keeps only the fields its readers
        need; `SharedInformer.use_transform`: every caller of one scope that has an opinion
        must ask for the same function, since they all read the one cache it fills).
        `start_after`: informers whose initial list it waits for before listing
        (`SharedInformer.add_start_after`). `namespaces`: a set of namespaces, watched one
        by one into one cache (runtime/namespaces.py)."""
        if (namespace is not None or namespaces is not None) and not resource.namespaced:
            raise ValueError(f"{resource.kind} is cluster-scoped; it has no namespace scope")
        scope = InformerScope(resource, namespace or None, label_selector or None,
                              field_selector or None, namespaces)
        informer = self._informers.get(scope)
        if informer is None:
            informer = SharedInformer(
                self._client, resource, namespace=scope.namespace, namespaces=namespaces,
                label_selector=scope.label_selector, field_selector=scope.field_selector,
                settings=self._settings, transform=self._transform, clock=self._clock,
                rng=self._rng, busy=self._busy)
            self._informers[scope] = informer
        if transform is not None:
            informer.use_transform(transform)
        for other in start_after:
            informer.add_start_after(other)
        if self._started:
            informer.start()
        return informer

    @property
    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.start()

    @property
    def has_synced(self) -> bool:
        return all(informer.has_synced for informer in self._informers.values())

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        try:
            async with asyncio.timeout(timeout):
                for informer in list(self._informers.values()):
                    await informer.wait_for_sync()
        except TimeoutError:
            return False
        return self.has_synced

    async def stop(self) -> None:
        self._started = False
        for informer in self._informers.values():
            await informer.stop()
