"""Metrics registries and get-or-create access to metric families.

A process serves one registry on `/metrics` (like controller-runtime's global `metrics.Registry`).
Several components write into it; each asks for its families through `counter`, `gauge` and
`histogram` here, so two components (or two instances of one) that name the same family share it
instead of failing with prometheus_client's duplicate-registration error.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = [
    "collector",
    "counter",
    "default_registry",
    "gauge",
    "histogram",
    "new_registry",
]

_Metric = TypeVar("_Metric", Counter, Gauge, Histogram)
_Collector = TypeVar("_Collector", bound=Collector)

# Families created through this module, per registry. Weak keys: a test's registry and its
# families go away together.
_FAMILIES: weakref.WeakKeyDictionary[
    CollectorRegistry, dict[str, Counter | Gauge | Histogram]
] = weakref.WeakKeyDictionary()
_COLLECTORS: weakref.WeakKeyDictionary[CollectorRegistry, dict[str, Collector]] = \
    weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_DEFAULT: CollectorRegistry | None = None


def new_registry() -> CollectorRegistry:
    """A registry with the process, platform and garbage-collector collectors registered: the
    Python counterpart of the process and Go collectors controller-runtime registers."""
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def default_registry() -> CollectorRegistry:
    """The process-wide registry, created on first use. Components given `registry=None` write
    here; tests pass their own registry instead."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is None:
            _DEFAULT = new_registry()
        return _DEFAULT


def _get_or_create(registry: CollectorRegistry, kind: type[_Metric], name: str,
                   labelnames: Sequence[str], create: Callable[[], _Metric]) -> _Metric:
    with _LOCK:
        families = _FAMILIES.setdefault(registry, {})
        existing = families.get(name)
        if existing is None:
            metric = create()
            families[name] = metric
            return metric
        if not isinstance(existing, kind):
            raise ValueError(
                f"metric {name!r} is already registered as a {type(existing).__name__}, "
                f"not a {kind.__name__}")
        if tuple(existing._labelnames) != tuple(labelnames):
            raise ValueError(
                f"metric {name!r} is already registered with labels "
                f"{list(existing._labelnames)}, not {list(labelnames)}")
        return existing


def counter(registry: CollectorRegistry, name: str, documentation: str,
            labelnames: Sequence[str] = ()) -> Counter:
    """The counter family `name` in `registry`, created on first request."""
    return _get_or_create(registry, Counter, name, labelnames, lambda: Counter(
        name, documentation, tuple(labelnames), registry=registry))


def gauge(registry: CollectorRegistry, name: str, documentation: str,
          labelnames: Sequence[str] = ()) -> Gauge:
    """The gauge family `name` in `registry`, created on first request."""
    return _get_or_create(registry, Gauge, name, labelnames, lambda: Gauge(
        name, documentation, tuple(labelnames), registry=registry))


def histogram(registry: CollectorRegistry, name: str, documentation: str,
              labelnames: Sequence[str] = (), *,
              buckets: Sequence[float] = Histogram.DEFAULT_BUCKETS) -> Histogram:
    """The histogram family `name` in `registry`, created on first request. Buckets are fixed by
    the first caller."""
    return _get_or_create(registry, Histogram, name, labelnames, lambda: Histogram(
        name, documentation, tuple(labelnames), registry=registry, buckets=tuple(buckets)))



def collector(registry: CollectorRegistry, name: str, kind: type[_Collector],
              create: Callable[[], _Collector]) -> _Collector:
    """The custom collector `name` in `registry` (one that reads its samples at scrape time),
    created and registered on first request, so that every component writing into the registry
    shares one."""
    with _LOCK:
        collectors = _COLLECTORS.setdefault(registry, {})
        existing = collectors.get(name)
        if existing is None:
            created = create()
            registry.register(created)
            collectors[name] = created
            return created
        if not isinstance(existing, kind):
            raise ValueError(f"collector {name!r} is already registered as a "
                             f"{type(existing).__name__}, not a {kind.__name__}")
        return existing
