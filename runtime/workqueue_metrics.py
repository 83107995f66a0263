"""Work queue metrics under controller-runtime's names, labels and buckets, so existing
dashboards keep working.

Metric families are created once per registry and shared by every queue registered into it;
each queue writes under its own `{name, controller}` labels (both the queue's name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runtime import metrics

# ExponentialBuckets(10e-9, 10, 12): 10 ns … 1000 s.
DURATION_BUCKETS: tuple[float, ...] = tuple(10e-9 * 10.0**i for i in range(12))
# Beyond this many distinct priorities a queue reports the rest under one label value, so a
# caller passing arbitrary integers cannot blow up the series count.
PRIORITY_CARDINALITY_LIMIT = 25
EXCEEDED_CARDINALITY_LIMIT = "exceeded_cardinality_limit"

_LABELS = ("name", "controller")


@dataclass(frozen=True)
class _Families:
    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    retries: Counter
    unfinished_work: Gauge
    longest_running: Gauge


def _families(registry: CollectorRegistry) -> _Families:
    # Through runtime.metrics' get-or-create, so queues (and anything else) sharing a registry
    # share these families.
    return _Families(
        depth=metrics.gauge(registry, "workqueue_depth",
                            "Current depth of workqueue by workqueue and priority",
                            [*_LABELS, "priority"]),
        adds=metrics.counter(registry, "workqueue_adds_total",
                             "Total number of adds handled by workqueue", _LABELS),
        queue_duration=metrics.histogram(
            registry, "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            _LABELS, buckets=DURATION_BUCKETS),
        work_duration=metrics.histogram(
            registry, "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            _LABELS, buckets=DURATION_BUCKETS),
        retries=metrics.counter(registry, "workqueue_retries_total",
                                "Total number of retries handled by workqueue", _LABELS),
        unfinished_work=metrics.gauge(
            registry, "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            _LABELS),
        longest_running=metrics.gauge(
            registry, "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            _LABELS),
    )


class QueueMetrics:
    """What a queue reports. This base class records nothing (no registry or no name)."""

    def ready(self, priority: int) -> None:
        """An item entered the ready set."""

    def reprioritized(self, old: int, new: int) -> None:
        """A ready item's priority rose: its depth moves to the new label."""

    def handed_out(self, priority: int, queued_for: float) -> None: ...

    def done(self, worked_for: float) -> None: ...

    def retry(self) -> None: ...


class PrometheusQueueMetrics(QueueMetrics):
    def __init__(
        self,
        *,
        name: str,
        registry: CollectorRegistry,
        in_flight_ages: Callable[[], list[float]],
    ) -> None:
        families = _families(registry)
        self._name = name
        self._depth = families.depth
        self._priorities: set[str] = set()
        self._adds = families.adds.labels(name, name)
        self._queue_duration = families.queue_duration.labels(name, name)
        self._work_duration = families.work_duration.labels(name, name)
        self._retries = families.retries.labels(name, name)
        # Computed at scrape time: always current, and no refresh task to start or stop.
        families.unfinished_work.labels(name, name).set_function(lambda: sum(in_flight_ages()))
        families.longest_running.labels(name, name).set_function(
            lambda: max(in_flight_ages(), default=0.0)
        )

    def _priority_label(self, priority: int) -> str:
        label = str(priority)
        if label in self._priorities:
            return label
        if len(self._priorities) < PRIORITY_CARDINALITY_LIMIT:
            self._priorities.add(label)
            return label
        return EXCEEDED_CARDINALITY_LIMIT

    def ready(self, priority: int) -> None:
        self._adds.inc()
        self._depth.labels(self._name, self._name, self._priority_label(priority)).inc()

    def reprioritized(self, old: int, new: int) -> None:
        self._depth.labels(self._name, self._name, self._priority_label(old)).dec()
        self._depth.labels(self._name, self._name, self._priority_label(new)).inc()

    def handed_out(self, priority: int, queued_for: float) -> None:
        self._depth.labels(self._name, self._name, self._priority_label(priority)).dec()
        self._queue_duration.observe(max(0.0, queued_for))

    def done(self, worked_for: float) -> None:
        self._work_duration.observe(max(0.0, worked_for))

    def retry(self) -> None:
        self._retries.inc()
