"""Upstream's controller metrics (`pkg/metrics/lbc`, subsystem `awslbc`), with its names and
labels so that its dashboards work:

- `awslbc_controller_reconcile_errors_total{controller, error_category}`: a reconcile that
  failed, by why; the category is the reason of the Warning Event the failure was reported with
  (`FailedBuildModel`, `FailedDeployModel`, ...), counted as the event is recorded;
- `awslbc_controller_cache_object_total{resource}`: the objects in the controller's caches of
  Services, Ingresses and TargetGroupBindings, read at scrape time;
- `awslbc_readiness_gate_ready_seconds{namespace, name}`: from a pod's target-health condition
  turning False to its turning True, per binding (upstream's buckets);
- `awslbc_webhook_validation_failure_total{webhook_name, error_category}` and
  `awslbc_webhook_mutation_failure_total{...}`: admission denials, by webhook path and by the
  reason the reconciler's condition would carry for the same mistake (`InvalidAnnotation`,
  `InvalidSpec`, ...);
- `awslbc_controller_reconcile_stage_duration{controller, reconcile_stage}`: how long each
  stage of a reconcile took (`build_model`, `add_finalizers`, `deploy_model`, `update_status`,
  `cleanup_load_balancer`, `reconcile_targetgroupbinding`: upstream's stage names), timed with
  `stage(name)` inside a reconcile of a counted reconciler (`talking`);
- `awslbc_quic_target_missing_server_id{namespace, name}`: QUIC targets of a binding left
  unregistered because their pod has no server ID, counted per attempt (upstream's name, which
  has no `_total`: served untyped, as a counter's sample would gain the suffix);
- `awslbc_controller_top_talkers{controller, namespace, name}`: the three objects (or Ingress
  groups) of each controller reconciled most often in the last complete three-minute window,
  with their counts. Upstream keeps every series it ever set; here a window replaces the last,
  so an object that stopped talking drops out.

Registered once per registry (`lbc_metrics_for`)."""

from __future__ import annotations

import inspect
import time
import weakref
from collections import Counter as Tally
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, UnknownMetricFamily
from prometheus_client.registry import Collector

from runtime.clock import Clock
from runtime.objects import Obj
from runtime.reconcile import Reconciler, Request, Result
from runtime.resources import Resource
from runtime.webhook import AdmissionRequest, AdmissionResponse, Handler

_READY_BUCKETS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600)
# Upstream's top-talker window and how many objects per controller it reports.
TOP_TALKERS_WINDOW = 180.0
TOP_TALKERS = 3
# The audit annotation a denial carries its category in (the API server records it in the
# audit log, prefixed with the webhook's name); the failure counters read it.
ERROR_CATEGORY_ANNOTATION = "error-category"
# The stage histogram and the controller of the reconcile running in this task (set by the
# counting wrapper, `talking`), so that a stage is timed without passing a recorder through
# every reconciler and the deployer's caller.
_STAGES: ContextVar[tuple[Histogram, str] | None] = ContextVar("reconcile_stages",
                                                                default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage `name` of the reconcile running now (nothing outside one)."""
    current = _STAGES.get()
    if current is None:
        yield
        return
    histogram, controller = current
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.labels(controller, name).observe(time.perf_counter() - started)
# Upstream's controller names, by the kind a reconciler writes.
CONTROLLER_NAMES: Mapping[str, str] = {"Ingress": "ingress", "Service": "service",
                                       "TargetGroupBinding": "targetGroupBinding"}


class LBCMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconcile_errors = Counter(
            "awslbc_controller_reconcile_errors_total",
            "Counts the number of reconcile error, categorized by error type.",
            ["controller", "error_category"], registry=registry)
        self.readiness_gate_ready = Histogram(
            "awslbc_readiness_gate_ready_seconds",
            "Latency from pod getting added to the load balancer until the readiness gate is "
            "flipped to healthy.", ["namespace", "name"], buckets=_READY_BUCKETS,
            registry=registry)
        self.webhook_validation_failures = Counter(
            "awslbc_webhook_validation_failure_total",
            "Counts the number of webhook validation failure, categorized by error type.",
            ["webhook_name", "error_category"], registry=registry)
        self.webhook_mutation_failures = Counter(
            "awslbc_webhook_mutation_failure_total",
            "Counts the number of webhook mutation failure, categorized by error type.",
            ["webhook_name", "error_category"], registry=registry)
        self.stage_duration = Histogram(
            "awslbc_controller_reconcile_stage_duration", "latencies of different reconcile "
            "stages.", ["controller", "reconcile_stage"], registry=registry)
        self.quic_missing_server_ids = QuicMissingServerIds()
        registry.register(self.quic_missing_server_ids)
        self._registry = registry
        self._cache_sizes: _CacheSizes | None = None
        self._talkers: TopTalkers | None = None

    def counting_failures(self, path: str, handler: Handler) -> Handler:
        """`handler`, its denials counted by category (a path under `/mutate-` is a mutating
        webhook's)."""
        counter = (self.webhook_mutation_failures if path.startswith("/mutate-")
                   else self.webhook_validation_failures)

        async def counted(request: AdmissionRequest) -> AdmissionResponse:
            answer = handler(request)
            response = await answer if inspect.isawaitable(answer) else answer
            if not response.allowed:
                category = response.audit_annotations.get(ERROR_CATEGORY_ANNOTATION, "Unknown")
                counter.labels(path, category).inc()
            return response
        return counted

    def top_talkers(self, clock: Clock) -> TopTalkers:
        """The one top-talker tally of this registry (made, and registered, on first use)."""
        if self._talkers is None:
            self._talkers = TopTalkers(clock, self.stage_duration)
            self._registry.register(self._talkers)
        return self._talkers

    def count_cache_objects(self, stores: Mapping[str, Callable[[], int]]) -> None:
        """`awslbc_controller_cache_object_total` from these counts (resource → how many),
        read at each scrape; a second call adds resources."""
        if self._cache_sizes is None:
            self._cache_sizes = _CacheSizes()
            self._registry.register(self._cache_sizes)
        self._cache_sizes.sizes.update(stores)


class _CacheSizes(Collector):
    def __init__(self) -> None:
        self.sizes: dict[str, Callable[[], int]] = {}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("awslbc_controller_cache_object_total",
                                   "Counts the number of objects in the controller cache.",
                                   labels=["resource"])
        for resource, size in sorted(self.sizes.items()):
            family.add_metric([resource], float(size()))
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


class QuicMissingServerIds(Collector):
    """`awslbc_quic_target_missing_server_id`, by binding."""

    def __init__(self) -> None:
        self._counts: Tally[tuple[str, str]] = Tally()

    def add(self, namespace: str, name: str, targets: int) -> None:
        self._counts[(namespace, name)] += targets

    def collect(self) -> Iterator[UnknownMetricFamily]:
        family = UnknownMetricFamily(
            "awslbc_quic_target_missing_server_id", "tracks the total number of QUIC targets "
            "attempted to be registered without a generated server id.",
            labels=["namespace", "name"])
        for (namespace, name), count in sorted(self._counts.items()):
            family.add_metric([namespace, name], float(count))
        yield family

    def describe(self) -> Iterator[UnknownMetricFamily]:
        return iter(())


class TopTalkers(Collector):
    """Reconciles per object, per controller, in three-minute windows; a scrape reports the
    last complete window's top three of each controller."""

    def __init__(self, clock: Clock, stages: Histogram | None = None) -> None:
        self._clock = clock
        self.stages = stages
        self._started = clock.now()
        self._current: dict[str, Tally[tuple[str, str]]] = {}
        self._last: dict[str, list[tuple[tuple[str, str], int]]] = {}

    def count(self, controller: str, request: Request) -> None:
        self._roll()
        self._current.setdefault(controller, Tally())[(request.namespace, request.name)] += 1

    def counting(self, controller: str, reconciler: Reconciler) -> Reconciler:
        """`reconciler`, each reconcile counted for `controller`."""
        return _Talking(self, controller, reconciler)

    def _roll(self) -> None:
        now = self._clock.now()
        if now - self._started < TOP_TALKERS_WINDOW:
            return
        # A window with no reconciles after a quiet spell reports nothing: the counts are of
        # the window that just ended, never of an older one.
        ended_long_ago = now - self._started >= 2 * TOP_TALKERS_WINDOW
        self._last = {} if ended_long_ago else {
            c: tally.most_common(TOP_TALKERS) for c, tally in self._current.items()}
        self._current = {}
        self._started = now - (now - self._started) % TOP_TALKERS_WINDOW

    def collect(self) -> Iterator[GaugeMetricFamily]:
        self._roll()
        family = GaugeMetricFamily(
            "awslbc_controller_top_talkers",
            "Counts the number of reconciliations triggered per resource",
            labels=["controller", "namespace", "name"])
        for controller, top in sorted(self._last.items()):
            for (namespace, name), count in top:
                family.add_metric([controller, namespace, name], float(count))
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


class _Talking:
    def __init__(self, talkers: TopTalkers, controller: str, reconciler: Reconciler) -> None:
        self._talkers = talkers
        self._controller = controller
        self.inner = reconciler

    async def reconcile(self, request: Request) -> Result:
        self._talkers.count(self._controller, request)
        if self._talkers.stages is None:
            return await self.inner.reconcile(request)
        token = _STAGES.set((self._talkers.stages, self._controller))
        try:
            return await self.inner.reconcile(request)
        finally:
            _STAGES.reset(token)


class CountingRecorder:
    """A reconciler's event recorder that also counts its Warnings in
    `awslbc_controller_reconcile_errors_total` (every failure a reconciler reports is one)."""

    def __init__(self, recorder: Any, counter: Counter) -> None:
        self._recorder = recorder
        self._counter = counter

    def event(self, obj: Obj, type: str, reason: str, message: str, *,
              resource: Resource | None = None) -> None:
        if type == "Warning":
            kind = resource.kind if resource is not None else str(obj.get("kind") or "")
            self._counter.labels(CONTROLLER_NAMES.get(kind, kind.lower()), reason).inc()
        self._recorder.event(obj, type, reason, message, resource=resource)


def talking(registry: CollectorRegistry, clock: Clock, controller: str,
            reconciler: Reconciler) -> Reconciler:
    """`reconciler`, each reconcile counted in `registry`'s top talkers of `controller`."""
    return lbc_metrics_for(registry).top_talkers(clock).counting(controller, reconciler)


def counting_recorder(recorder: Any, registry: CollectorRegistry) -> CountingRecorder:
    """`recorder` (a manager's), counting Warnings in `registry`'s reconcile errors."""
    return CountingRecorder(recorder, lbc_metrics_for(registry).reconcile_errors)


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, LBCMetrics] = (
    weakref.WeakKeyDictionary())


def lbc_metrics_for(registry: CollectorRegistry) -> LBCMetrics:
    metrics = _BY_REGISTRY.get(registry)
    if metrics is None:
        metrics = LBCMetrics(registry)
        _BY_REGISTRY[registry] = metrics
    return metrics


__all__ = ["CONTROLLER_NAMES", "ERROR_CATEGORY_ANNOTATION", "CountingRecorder", "LBCMetrics",
           "QuicMissingServerIds",
           "TopTalkers", "counting_recorder", "lbc_metrics_for", "stage", "talking"]
