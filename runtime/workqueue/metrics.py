"""Work queue metrics under controller-runtime's names, labels and buckets, so existing
dashboards keep working.

The hot path records plain numbers: a queue bumps its own integer counters and appends raw
durations to its `QueueMetrics` histograms (no `.labels()` lookup, no lock, no bucket search per
item). Everything shaped like a
depth (`workqueue_depth` by priority, unfinished work, the longest running processor) is not
recorded at all: one collector per registry computes it from the queue's state when Prometheus
scrapes. Each queue reports under its own `{name, controller}` labels (both the queue's name);
queues sharing a name in one registry are summed.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

__all__ = [
    "DURATION_BUCKETS",
    "EXCEEDED_CARDINALITY_LIMIT",
    "PRIORITY_CARDINALITY_LIMIT",
    "QueueMetrics",
    "QueueState",
    "queue_metrics",
]

# ExponentialBuckets(10e-9, 10, 12): 10 ns … 1000 s.
DURATION_BUCKETS: tuple[float, ...] = tuple(10e-9 * 10.0**i for i in range(12))
# Beyond this many distinct priorities a queue reports the rest under one label value, so a
# caller passing arbitrary integers cannot blow up the series count.
PRIORITY_CARDINALITY_LIMIT = 25
EXCEEDED_CARDINALITY_LIMIT = "exceeded_cardinality_limit"

_LABELS = ("name", "controller")
_go_float: Callable[[float], str] = floatToGoString  # the `le` text prometheus_client writes
_LE = (*(_go_float(b) for b in DURATION_BUCKETS), "+Inf")


class QueueState(Protocol):
    """What the collector reads from a queue at scrape time."""

    @property
    def adds(self) -> int:
        """Entries that became ready so far."""
        ...

    @property
    def retries(self) -> int:
        """Adds with a delay so far."""
        ...

    def ready_priorities(self) -> Iterable[int]:
        """The priority of every ready item."""
        ...

    def priorities_seen(self) -> Iterable[int]:
        """Every priority an item was ready with so far, in the order they first were."""
        ...

    def in_flight_ages(self) -> list[float]:
        """Seconds each handed-out item has been in flight."""
        ...


class Durations:
    """A histogram of durations. Observations are appended raw to `pending` (all the hot path
    does) and folded into bucket counts a batch at a time: one sort per batch, then one search per
    bucket bound, instead of a bucket search per observation."""

    __slots__ = ("counts", "pending", "sum")

    BATCH = 512

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)  # per bucket, not cumulative; last: +Inf
        self.sum = 0.0
        self.pending: list[float] = []

    def observe(self, seconds: float) -> None:
        """What the queue does inline: append, and fold once a batch is full."""
        self.pending.append(seconds)
        if len(self.pending) >= self.BATCH:
            self.fold()

    def fold(self) -> None:
        batch = sorted(self.pending)
        self.pending.clear()  # in place: the queue holds this very list
        self.sum += _fold(batch, self.counts)

    def snapshot(self) -> tuple[list[int], float]:
        """Counts and sum including pending observations, without folding them: a scrape only
        reads, whichever thread it runs on."""
        counts = list(self.counts)
        return counts, self.sum + _fold(sorted(list(self.pending)), counts)


def _fold(batch: list[float], counts: list[int]) -> float:
    """Add a sorted batch to per-bucket counts; its sum (durations below 0 count as 0)."""
    previous = 0
    for i, bound in enumerate(DURATION_BUCKETS):
        upto = bisect_right(batch, bound, lo=previous)  # Prometheus' `le`: v <= bound
        counts[i] += upto - previous
        previous = upto
    counts[-1] += len(batch) - previous
    return sum(batch[bisect_left(batch, 0.0):])


class QueueMetrics:
    """The histograms one queue records as it runs (its counters are the queue's own)."""

    __slots__ = ("name", "queue_duration", "state", "work_duration")

    def __init__(self, name: str, state: QueueState) -> None:
        self.name = name
        self.state = state
        self.queue_duration = Durations()
        self.work_duration = Durations()


class _Labels:
    """Which priorities of one queue name have a depth series (first come, first labelled; a
    series once reported stays, at 0 when nothing of that priority is ready)."""

    __slots__ = ("priorities",)

    def __init__(self) -> None:
        self.priorities: dict[int, str] = {}

    def label(self, priority: int) -> str:
        label = self.priorities.get(priority)
        if label is not None:
            return label
        if len(self.priorities) < PRIORITY_CARDINALITY_LIMIT:
            label = self.priorities[priority] = str(priority)
            return label
        return EXCEEDED_CARDINALITY_LIMIT


@dataclass(frozen=True, slots=True)
class _Families:
    """One scrape's worth of families, filled by `_Collector.collect`."""

    depth: GaugeMetricFamily
    adds: CounterMetricFamily
    queue_duration: HistogramMetricFamily
    work_duration: HistogramMetricFamily
    retries: CounterMetricFamily
    unfinished_work: GaugeMetricFamily
    longest_running: GaugeMetricFamily

    @classmethod
    def empty(cls) -> _Families:
        return cls(
            depth=GaugeMetricFamily(
                "workqueue_depth", "Current depth of workqueue by workqueue and priority",
                labels=(*_LABELS, "priority")),
            adds=CounterMetricFamily(
                "workqueue_adds_total", "Total number of adds handled by workqueue",
                labels=_LABELS),
            queue_duration=HistogramMetricFamily(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                labels=_LABELS),
            work_duration=HistogramMetricFamily(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.", labels=_LABELS),
            retries=CounterMetricFamily(
                "workqueue_retries_total", "Total number of retries handled by workqueue",
                labels=_LABELS),
            unfinished_work=GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads. One can deduce "
                "the number of stuck threads by observing the rate at which this increases.",
                labels=_LABELS),
            longest_running=GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                labels=_LABELS),
        )

    def all(self) -> tuple[Metric, ...]:
        return (self.depth, self.adds, self.queue_duration, self.work_duration, self.retries,
                self.unfinished_work, self.longest_running)


class _Collector:
    """Every queue registered into one registry, turned into metric families at scrape time."""

    def __init__(self) -> None:
        self._queues: list[QueueMetrics] = []
        self._labels: dict[str, _Labels] = {}
        self._lock = threading.Lock()  # a scrape may come from another thread

    def add(self, metrics: QueueMetrics) -> None:
        with self._lock:
            self._queues.append(metrics)
            self._labels.setdefault(metrics.name, _Labels())

    def describe(self) -> Iterator[Metric]:
        yield from _Families.empty().all()

    def collect(self) -> Iterator[Metric]:
        families = _Families.empty()
        with self._lock:
            by_name: dict[str, list[QueueMetrics]] = {}
            for queue in self._queues:
                by_name.setdefault(queue.name, []).append(queue)
            for name, queues in by_name.items():
                self._collect_one(families, name, queues)
        yield from families.all()

    def _collect_one(self, families: _Families, name: str, queues: list[QueueMetrics]) -> None:
        labels = [name, name]
        label = self._labels[name].label
        depth: dict[str, int] = dict.fromkeys(self._labels[name].priorities.values(), 0)
        ages: list[float] = []
        for queue in queues:
            for priority in queue.state.priorities_seen():  # a series from the first item on
                depth.setdefault(label(priority), 0)
        for queue in queues:
            for priority in list(queue.state.ready_priorities()):
                key = label(priority)
                depth[key] = depth.get(key, 0) + 1
            ages.extend(queue.state.in_flight_ages())
        for priority_label, n in depth.items():
            families.depth.add_metric([*labels, priority_label], n)
        families.adds.add_metric(labels, sum(q.state.adds for q in queues))
        families.retries.add_metric(labels, sum(q.state.retries for q in queues))
        _add_histogram(families.queue_duration, labels, [q.queue_duration for q in queues])
        _add_histogram(families.work_duration, labels, [q.work_duration for q in queues])
        families.unfinished_work.add_metric(labels, sum(ages))
        families.longest_running.add_metric(labels, max(ages, default=0.0))


def _add_histogram(family: HistogramMetricFamily, labels: list[str],
                   parts: list[Durations]) -> None:
    snapshots = [part.snapshot() for part in parts]
    running = 0
    buckets: list[tuple[str, float]] = []
    for i, le in enumerate(_LE):
        running += sum(counts[i] for counts, _ in snapshots)
        buckets.append((le, running))
    family.add_metric(labels, buckets, sum_value=sum(total for _, total in snapshots))


_COLLECTORS: weakref.WeakKeyDictionary[CollectorRegistry, _Collector] = (
    weakref.WeakKeyDictionary())
_COLLECTORS_LOCK = threading.Lock()


def queue_metrics(registry: CollectorRegistry, name: str, state: QueueState) -> QueueMetrics:
    """The metrics of queue `name`, registered into `registry` (whose one work queue collector
    is created on first use)."""
    with _COLLECTORS_LOCK:
        collector = _COLLECTORS.get(registry)
        if collector is None:
            collector = _COLLECTORS[registry] = _Collector()
            registry.register(collector)
    metrics = QueueMetrics(name, state)
    collector.add(metrics)
    return metrics
