"""Per-informer state as metrics, read from the informers at scrape time:

- `aiolbc_informer_synced{resource}`: 1 once the initial list is in the cache and handed out;
- `aiolbc_informer_healthy{resource}`: 1 while the last list or watch attempt succeeded (what
  `/readyz` checks);
- `aiolbc_informer_list_watch_failures_total{resource}`: failed lists and watches since start.

`resource` is `plural[.group]`. Informers of one resource with different scopes (namespace,
selectors) share a series: synced and healthy are their minimum, failures their sum.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from runtime import metrics
from runtime.informer import SharedInformerFactory

__all__ = ["InformerMetrics", "register_informer_metrics"]

SYNCED = "aiolbc_informer_synced"
HEALTHY = "aiolbc_informer_healthy"
FAILURES = "aiolbc_informer_list_watch_failures"


class InformerMetrics(Collector):
    def __init__(self) -> None:
        # Weak: a test's Manager and its informers go away while the registry lives on.
        self._factories: weakref.WeakSet[SharedInformerFactory] = weakref.WeakSet()

    def add(self, factory: SharedInformerFactory) -> None:
        self._factories.add(factory)

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily, CounterMetricFamily]:
        return (
            GaugeMetricFamily(SYNCED, "Whether the informer's initial list has been cached "
                              "and delivered (1) or not yet (0).", labels=["resource"]),
            GaugeMetricFamily(HEALTHY, "Whether the informer's last list or watch attempt "
                              "succeeded (1) or failed (0).", labels=["resource"]),
            CounterMetricFamily(FAILURES, "Failed list and watch attempts of the informer.",
                                labels=["resource"]),
        )

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        state: dict[str, list[int]] = {}
        for factory in list(self._factories):
            for informer in factory.informers:
                reflector = informer.reflector
                synced, healthy = int(informer.has_synced), int(reflector.healthy)
                entry = state.setdefault(str(informer.resource), [1, 1, 0])
                entry[0] = min(entry[0], synced)
                entry[1] = min(entry[1], healthy)
                entry[2] += reflector.failures
        synced_family, healthy_family, failures_family = self._families()
        for resource, (synced, healthy, failures) in sorted(state.items()):
            synced_family.add_metric([resource], synced)
            healthy_family.add_metric([resource], healthy)
            failures_family.add_metric([resource], failures)
        return (synced_family, healthy_family, failures_family)


def register_informer_metrics(registry: CollectorRegistry,
                              factory: SharedInformerFactory) -> InformerMetrics:
    collector = metrics.collector(registry, "informers", InformerMetrics, InformerMetrics)
    collector.add(factory)
    return collector
