"""Controllers: named groups of workers that take keys from a priority queue and call a
Reconciler, with controller-runtime's retry rules and metrics.

Retry rules (controller-runtime's `reconcileHandler`):
- success → the key's backoff is forgotten;
- `Result(requeue_after=s)` → forgotten, re-added after `s`;
- `Result(requeue=True)` or a raised error → re-added rate-limited (per-key exponential backoff);
- `TerminalError` → counted, logged, *not* retried: the object must change first (its next watch
  event enqueues it again);
- any other exception is a bug in the reconciler: logged with its traceback, counted in
  `controller_runtime_reconcile_panics_total`, and retried with backoff like an error.
Requeues keep the priority the item had when it was taken, unless the Result names one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from prometheus_client import CollectorRegistry

from runtime import metrics
from runtime.clock import Clock, RealClock
from runtime.errors import ApiError
from runtime.hotloop import HotLoopGuard, HotLoopOptions
from runtime.prioritydecisions import Decisions, Deferred, Foreground
from runtime.reconcile import (
    LOW,
    NORMAL,
    ReconcileError,
    ReconcilePriority,
    Reconciler,
    Request,
    TerminalError,
    current_reconcile,
)
from runtime.workqueue import PriorityQueue, QueueOptions, ShutDown, with_defaults

__all__ = [
    "Controller",
    "ControllerOptions",
    "controller_options",
]

RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
                     0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5,
                     6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60)
RESULTS = ("success", "error", "requeue", "requeue_after")


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerOptions:
    """How a controller runs (controller-runtime's controller `Options`): its worker count and
    its queue's options (rate limiter, backoff, LOW lane). Unset fields take the defaults of
    `controller_options`."""

    max_concurrent_reconciles: int | None = None
    queue: QueueOptions = field(default_factory=QueueOptions)
    hot_loop: HotLoopOptions = field(default_factory=HotLoopOptions)


def controller_options(options: ControllerOptions | None = None) -> ControllerOptions:
    """`options` with every unset field filled in (the queue's by `workqueue.with_defaults`);
    ValueError for values that make no sense."""
    options = options if options is not None else ControllerOptions()
    workers = options.max_concurrent_reconciles
    workers = 1 if workers is None else workers
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"max_concurrent_reconciles must be an integer >= 1, got {workers!r}")
    return ControllerOptions(max_concurrent_reconciles=workers,
                             queue=with_defaults(options.queue), hot_loop=options.hot_loop)


class Source(Protocol):
    """What a controller watches: a SharedInformer, seen through the two calls it needs."""

    def add_handler(self, handler: Any) -> Any: ...

    def remove_handler(self, registration: Any) -> None: ...


class _Metrics:
    def __init__(self, name: str, registry: CollectorRegistry | None, workers: int) -> None:
        reg = registry if registry is not None else metrics.default_registry()
        label = {"controller": name}
        total = metrics.counter(reg, "controller_runtime_reconcile_total",
                                "Total number of reconciliations per controller",
                                ("controller", "result"))
        self.results = {r: total.labels(controller=name, result=r) for r in RESULTS}
        self.errors = metrics.counter(
            reg, "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller", ("controller",)).labels(**label)
        self.terminal = metrics.counter(
            reg, "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ("controller",)).labels(**label)
        self.panics = metrics.counter(
            reg, "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller", ("controller",)).labels(**label)
        self.time = metrics.histogram(
            reg, "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller", ("controller",),
            buckets=RECONCILE_BUCKETS).labels(**label)
        metrics.gauge(reg, "controller_runtime_max_concurrent_reconciles",
                      "Maximum number of concurrent reconciles per controller",
                      ("controller",)).labels(**label).set(workers)
        # Not a controller-runtime metric: reconciles the hot-loop guard deferred.
        self.hot_loop = metrics.counter(
            reg, "aiolbc_controller_hot_loop_deferrals_total",
            "Reconciles deferred because their key was reconciled too often lately",
            ("controller",)).labels(**label)
        self.active = metrics.gauge(
            reg, "controller_runtime_active_workers",
            "Number of currently used workers per controller", ("controller",)).labels(**label)
        # Not a controller-runtime metric: how event handlers prioritised requests, which shows
        # how many objects a restart deferred to the LOW lane (checkpoint matches).
        self.enqueues = metrics.counter(
            reg, "aiolbc_controller_enqueues_total",
            "Requests enqueued by event handlers, by priority", ("controller", "priority"))
        self._enqueues_by_priority: dict[int, Any] = {}  # resolved children: no .labels() each
        # Not a controller-runtime metric: requests waiting for their priority decision
        # (runtime.prioritydecisions), so far not in the queue's depth; computed at scrape time.
        self.pending_decisions = metrics.gauge(
            reg, "aiolbc_controller_pending_priority_decisions",
            "Requests waiting for a deferred priority decision before they are queued",
            ("controller",)).labels(**label)
        self.name = name

    def enqueued(self, priority: int) -> None:
        child = self._enqueues_by_priority.get(priority)
        if child is None:
            child = self.enqueues.labels(controller=self.name, priority=str(priority))
            self._enqueues_by_priority[priority] = child
        child.inc()


class Controller:
    """`max_concurrent_reconciles` workers on one priority queue. Start with `start()`; stop
    gracefully with `stop(timeout)` (in-flight reconciles finish, nothing new starts) or at
    once with `abort()` (leadership lost: in-flight reconciles are cancelled)."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        queue: PriorityQueue[Request] | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        hot_loop: HotLoopOptions | None = None,
        foreground: Foreground | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be >= 1")
        self.name = name
        self._reconciler = reconciler
        self._clock = clock or RealClock()
        # `is None`, not `or`: an empty queue is falsy (it has __len__).
        self.queue: PriorityQueue[Request] = queue if queue is not None else PriorityQueue(
            name, clock=self._clock, registry=registry)
        self._workers_n = max_concurrent_reconciles
        self._metrics = _Metrics(name, registry, max_concurrent_reconciles)
        self._workers: list[asyncio.Task[None]] = []
        self._stopping = False
        self._log = structlog.get_logger("controller").bind(controller=name)
        self._busy: set[asyncio.Task[None]] = set()
        self._watches: list[tuple[Source, Any]] = []
        self._registrations: list[tuple[Source, Any]] = []
        self._running: dict[Request, ReconcilePriority] = {}
        # Requests the start-up replay enqueued, with the highest priority it gave each; None
        # when some source's cache was not whole at start (see `_replay_is_news`).
        self._replayed: dict[Request, int] | None = None
        self._guard: HotLoopGuard[Request] = HotLoopGuard(hot_loop or HotLoopOptions(),
                                                          clock=self._clock)
        self._admitted = 0
        # The manager's, so that every controller's decisions give way to any real change.
        self.foreground = foreground if foreground is not None else Foreground()
        self.decisions = Decisions(name, self._enqueue_decided, self.foreground)
        self._metrics.pending_decisions.set_function(self.decisions.__len__)
        self.foreground.watch_settling(self.settling)

    # Enqueuer protocol, used by the event handlers.
    def enqueue(self, request: Request, *, priority: int = NORMAL, replay: bool = False
                ) -> None:
        if replay and not self._replay_is_news(request, priority):
            return
        if priority >= NORMAL:
            self.decisions.settled(request)
        self._enqueue_decided(request, priority)

    def defer(self, request: Request, decision: Deferred, *, replay: bool = False) -> None:
        """Enqueue `request` once `decision` is made, off the event path
        (runtime.prioritydecisions)."""
        if replay and self._replayed is not None and self._replayed.get(request, LOW) >= NORMAL:
            return  # no decision can say more than the NORMAL the replay already gave it
        self.decisions.defer(request, decision)

    def _replay_is_news(self, request: Request, priority: int) -> bool:
        """Whether a start-up replay's enqueue may change anything. Every source's cache was
        whole before its handlers were registered (`start`), and a reconcile reads the caches
        as they are when it runs, so once the replay enqueued a request at some priority, the
        replay of another object mapping to it at that priority or lower adds nothing: only a
        new in-flight reconcile's re-run (a group's Ingress, its Services and its class each
        naming it at start-up), competing with the first for the loop and the AWS APIs."""
        replayed = self._replayed
        if replayed is None:
            return True
        before = replayed.get(request)
        if before is not None and before >= priority:
            return False
        replayed[request] = priority
        return True

    def _enqueue_decided(self, request: Request, priority: int) -> None:
        self._metrics.enqueued(priority)
        running = self._running.get(request)
        if running is not None:
            running.raise_to(priority)
        self.queue.add(request, priority=priority)

    def enqueue_after(self, request: Request, after: float, *, priority: int = NORMAL) -> None:
        self.queue.add(request, priority=priority, after=after)

    def watch(self, source: Source, handler: Any) -> None:
        """Feed `handler` (runtime.handlers) from `source` while the controller runs.

        Handlers are registered at `start()`, not here: a standby replica keeps its informers
        warm but queues nothing, and on becoming leader every cached object is replayed as an
        initial-list add, so priorities (checkpoints) are judged at takeover time, not from
        events the previous leader already handled."""
        self._watches.append((source, handler))

    def settling(self) -> bool:
        """Running, and still replaying the caches to its handlers or deciding priorities."""
        return bool(self._workers) and (
            bool(len(self.decisions))
            or any(not getattr(registration, "has_synced", True)
                   for _, registration in self._registrations))

    @property
    def running(self) -> bool:
        return bool(self._workers) and not self._stopping

    def start(self) -> None:
        if self._workers:
            return
        self._stopping = False
        # A source listing for the first time (an informer started after the others) replays
        # what it lists later, which a reconcile already run has not seen: no deduplication.
        self._replayed = {} if all(getattr(source, "populated", True)
                                   for source, _ in self._watches) else None
        self._registrations = [(source, source.add_handler(handler))
                               for source, handler in self._watches]
        self._workers = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                         for i in range(self._workers_n)]
        self.decisions.start()

    def _unwatch(self) -> None:
        for source, registration in self._registrations:
            source.remove_handler(registration)
        self._registrations = []
        self._replayed = None

    async def stop(self, timeout: float = 30.0) -> None:
        """Stop taking work; give in-flight reconciles `timeout` seconds, then cancel them."""
        self._stopping = True
        self._unwatch()
        await self.decisions.stop()
        for task in self._workers:
            if task not in self._busy:
                task.cancel()
        if self._workers:
            _, pending = await asyncio.wait(self._workers, timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        await self.queue.shutdown()

    async def abort(self) -> None:
        """Cancel everything now: used when leadership is lost, where finishing a write could
        race the new leader."""
        self._stopping = True
        self._unwatch()
        await self.decisions.stop()
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        await self.queue.shutdown()

    async def _worker(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        while not self._stopping:
            try:
                request, priority = await self.queue.get()
            except ShutDown:
                return
            self._busy.add(me)  # stop() lets busy workers finish their item
            try:
                if not self._hot(request, priority):
                    await self._process(request, priority)
            finally:
                self._busy.discard(me)
                self.queue.done(request)

    def _hot(self, request: Request, priority: int) -> bool:
        """Defer a key reconciled too often lately (runtime/hotloop.py); True if deferred."""
        self._admitted += 1
        if self._admitted % 1024 == 0:
            self._guard.prune()
        delay = self._guard.admit(request)
        if delay <= 0:
            return False
        self._metrics.hot_loop.inc()
        self._log.info("reconciled too often lately; deferred", key=request.key, delay=delay)
        # Added while in flight: takes effect at done(), `delay` seconds later.
        self.queue.add(request, priority=priority, after=delay)
        return True

    async def _process(self, request: Request, priority: int) -> None:
        reconcile_id = uuid.uuid4().hex[:12]
        log = self._log.bind(key=request.key, reconcile_id=reconcile_id)
        self._metrics.active.inc()
        started = time.perf_counter()
        try:
            cell = ReconcilePriority(priority)
            self._running[request] = cell
            try:
                with (structlog.contextvars.bound_contextvars(
                        controller=self.name, key=request.key, reconcile_id=reconcile_id),
                      current_reconcile(priority=cell, reconcile_id=reconcile_id),
                      self.foreground.reconciling(priority)):
                    result = await self._reconciler.reconcile(request)
            finally:
                self._running.pop(request, None)
                priority = cell.value
        except asyncio.CancelledError:
            raise
        except TerminalError as exc:
            self._metrics.errors.inc()
            self._metrics.terminal.inc()
            self._metrics.results["error"].inc()
            self.queue.forget(request)
            log.warning("reconcile failed; not retrying until the object changes",
                        error=str(exc))
            return
        except (ReconcileError, ApiError) as exc:
            self._metrics.errors.inc()
            self._metrics.results["error"].inc()
            self.queue.add(request, priority=priority, rate_limited=True)
            log.info("reconcile failed; will retry", error=str(exc),
                     retries=self.queue.num_requeues(request))
            return
        except Exception:
            self._metrics.errors.inc()
            self._metrics.panics.inc()
            self._metrics.results["error"].inc()
            self.queue.add(request, priority=priority, rate_limited=True)
            log.exception("reconciler raised an unexpected exception; will retry")
            return
        finally:
            self._metrics.active.dec()
            self._metrics.time.observe(time.perf_counter() - started)

        next_priority = result.priority if result.priority is not None else priority
        if result.requeue_after > 0:
            self.queue.forget(request)
            self.queue.add(request, priority=next_priority, after=result.requeue_after)
            self._metrics.results["requeue_after"].inc()
        elif result.requeue:
            self.queue.add(request, priority=next_priority, rate_limited=True)
            self._metrics.results["requeue"].inc()
        else:
            self.queue.forget(request)
            self._metrics.results["success"].inc()
