"""Upstream's controller metrics (`pkg/metrics/lbc`, subsystem `awslbc`), with its names and
labels so that its dashboards work:

- `awslbc_controller_reconcile_errors_total{controller, error_category}`: a reconcile that
  failed, by why; the category is the reason of the Warning Event the failure was reported with
  (`FailedBuildModel`, `FailedDeployModel`, ...), counted as the event is recorded;
- `awslbc_controller_cache_object_total{resource}`: the objects in the controller's caches of
  Services, Ingresses and TargetGroupBindings, read at scrape time;
- `awslbc_readiness_gate_ready_seconds{namespace, name}`: from a pod's target-health condition
  turning False to its turning True, per binding (upstream's buckets).

Registered once per registry (`lbc_metrics_for`)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runtime.objects import Obj
from runtime.resources import Resource

_READY_BUCKETS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600)
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
        self._registry = registry
        self._cache_sizes: _CacheSizes | None = None

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


__all__ = ["CONTROLLER_NAMES", "CountingRecorder", "LBCMetrics", "counting_recorder",
           "lbc_metrics_for"]
