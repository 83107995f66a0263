"""Work queue metrics, scraped the way Prometheus would."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from runtime.clock import FakeClock
from runtime.reconcile import LOW
from runtime.workqueue import PriorityQueue

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(registry: CollectorRegistry) -> Samples:
    text = generate_latest(registry).decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    return samples[(metric, frozenset(labels.items()))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


async def test_names_labels_and_depth_by_priority() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    queue: PriorityQueue[str] = PriorityQueue("ingress", clock=clock, registry=registry)
    queue.add("a")
    queue.add("b")
    queue.add("c", priority=LOW)
    queue.add("d", priority=5)
    queue.add("e", after=3.0)  # waiting: not in depth, not an add yet
    queue.add("a")  # merged: not a second add
    s = scrape(registry)
    q = {"name": "ingress", "controller": "ingress"}
    assert value(s, "workqueue_depth", priority="0", **q) == 2
    assert value(s, "workqueue_depth", priority="-100", **q) == 1
    assert value(s, "workqueue_depth", priority="5", **q) == 1
    assert value(s, "workqueue_adds_total", **q) == 4
    assert value(s, "workqueue_retries_total", **q) == 1

    queue.add("b", priority=5)  # a rise moves depth between labels without counting an add
    s = scrape(registry)
    assert value(s, "workqueue_depth", priority="0", **q) == 1
    assert value(s, "workqueue_depth", priority="5", **q) == 2
    assert value(s, "workqueue_adds_total", **q) == 4

    await clock.advance(2.0)
    key, _ = queue.get_nowait()
    assert key == "d"
    await clock.advance(3.0)  # e becomes ready
    s = scrape(registry)
    assert value(s, "workqueue_depth", priority="5", **q) == 1
    assert value(s, "workqueue_depth", priority="0", **q) == 2
    assert value(s, "workqueue_adds_total", **q) == 5
    assert value(s, "workqueue_queue_duration_seconds_count", **q) == 1
    assert value(s, "workqueue_queue_duration_seconds_sum", **q) == pytest.approx(2.0)
    assert value(s, "workqueue_unfinished_work_seconds", **q) == pytest.approx(3.0)
    assert value(s, "workqueue_longest_running_processor_seconds", **q) == pytest.approx(3.0)

    queue.get_nowait()
    await clock.advance(1.0)
    s = scrape(registry)
    assert value(s, "workqueue_unfinished_work_seconds", **q) == pytest.approx(4.0 + 1.0)
    assert value(s, "workqueue_longest_running_processor_seconds", **q) == pytest.approx(4.0)
    queue.done("d")
    s = scrape(registry)
    assert value(s, "workqueue_work_duration_seconds_count", **q) == 1
    assert value(s, "workqueue_work_duration_seconds_sum", **q) == pytest.approx(4.0)
    assert value(s, "workqueue_longest_running_processor_seconds", **q) == pytest.approx(1.0)
    assert names(s) >= {
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    }
    await queue.shutdown()


async def test_duration_buckets_are_controller_runtime_s() -> None:
    registry = CollectorRegistry()
    queue: PriorityQueue[str] = PriorityQueue("q", clock=FakeClock(), registry=registry)
    queue.add("a")
    queue.get_nowait()
    s = scrape(registry)
    bounds = sorted(
        float(dict(labels)["le"])
        for name, labels in s
        if name == "workqueue_queue_duration_seconds_bucket"
    )
    expected = [10e-9 * 10**i for i in range(12)] + [math.inf]
    assert bounds == pytest.approx(expected)


async def test_several_queues_share_one_registry() -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    one: PriorityQueue[str] = PriorityQueue("service", clock=clock, registry=registry)
    two: PriorityQueue[str] = PriorityQueue("tgb", clock=clock, registry=registry)
    one.add("a")
    two.add("a")
    two.add("b", priority=LOW)
    s = scrape(registry)
    assert value(s, "workqueue_adds_total", name="service", controller="service") == 1
    assert value(s, "workqueue_adds_total", name="tgb", controller="tgb") == 2
    assert value(s, "workqueue_depth", name="tgb", controller="tgb", priority="-100") == 1


async def test_priority_label_cardinality_is_capped() -> None:
    registry = CollectorRegistry()
    queue: PriorityQueue[int] = PriorityQueue("q", clock=FakeClock(), registry=registry)
    for p in range(30):
        queue.add(p, priority=p)
    s = scrape(registry)
    labels = {dict(lbl)["priority"]: v for (n, lbl), v in s.items() if n == "workqueue_depth"}
    assert len(labels) == 26
    assert labels["exceeded_cardinality_limit"] == 5
    assert sum(labels.values()) == 30


@pytest.mark.parametrize("name", ["", "named"])
async def test_no_metrics_without_registry_or_name(name: str) -> None:
    registry = CollectorRegistry()
    queue: PriorityQueue[str] = PriorityQueue(
        name, clock=FakeClock(), registry=None if name else registry
    )
    queue.add("a")
    queue.get_nowait()
    queue.done("a")
    assert not any(n.startswith("workqueue_") for n in names(scrape(registry)))


def bucket(samples: Samples, metric: str, le: str, **labels: str) -> float:
    return value(samples, metric + "_bucket", le=le, **labels)


async def test_histograms_stay_exact_across_batches() -> None:
    """Durations are folded into buckets a batch at a time; scrapes before, between and after
    folds all see every observation, with Prometheus' `le` (a bound counts its own value)."""
    clock = FakeClock()
    registry = CollectorRegistry()
    queue: PriorityQueue[int] = PriorityQueue("q", clock=clock, registry=registry)
    q = {"name": "q", "controller": "q"}
    for i in range(1300):
        queue.add(i)
    await clock.advance(1.0)
    taken = [queue.get_nowait()[0] for _ in range(700)]  # waited exactly 1.0 s
    await clock.advance(0.5)
    taken += [queue.get_nowait()[0] for _ in range(600)]  # 1.5 s
    s = scrape(registry)
    assert bucket(s, "workqueue_queue_duration_seconds", "0.1", **q) == 0
    assert bucket(s, "workqueue_queue_duration_seconds", "1.0", **q) == 700
    assert bucket(s, "workqueue_queue_duration_seconds", "10.0", **q) == 1300
    await clock.advance(10.0)
    for key in taken[:1000]:  # folds twice on the way (every 512 observations)
        queue.done(key)
    s = scrape(registry)
    assert bucket(s, "workqueue_work_duration_seconds", "10.0", **q) == 300
    assert bucket(s, "workqueue_work_duration_seconds", "100.0", **q) == 1000
    for key in taken[1000:]:
        queue.done(key)
    s = scrape(registry)
    assert value(s, "workqueue_queue_duration_seconds_count", **q) == 1300
    assert value(s, "workqueue_queue_duration_seconds_sum", **q) == pytest.approx(1600.0)
    assert value(s, "workqueue_work_duration_seconds_count", **q) == 1300
    assert value(s, "workqueue_work_duration_seconds_sum", **q) == pytest.approx(
        700 * 10.5 + 600 * 10.0)
    assert bucket(s, "workqueue_work_duration_seconds", "10.0", **q) == 600
    assert bucket(s, "workqueue_work_duration_seconds", "+Inf", **q) == 1300
    assert value(s, "workqueue_depth", priority="0", **q) == 0  # the series stays, at 0
    assert value(s, "workqueue_unfinished_work_seconds", **q) == 0


async def test_queues_sharing_a_name_are_summed() -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    first: PriorityQueue[str] = PriorityQueue("dup", clock=clock, registry=registry)
    second: PriorityQueue[str] = PriorityQueue("dup", clock=clock, registry=registry)
    first.add("a")
    second.add("a")
    second.add("b", after=1.0)
    first.get_nowait()
    await clock.advance(2.0)
    s = scrape(registry)
    d = {"name": "dup", "controller": "dup"}
    assert value(s, "workqueue_adds_total", **d) == 3
    assert value(s, "workqueue_retries_total", **d) == 1
    assert value(s, "workqueue_depth", priority="0", **d) == 2
    assert value(s, "workqueue_longest_running_processor_seconds", **d) == pytest.approx(2.0)
    assert len([k for k in s if k[0] == "workqueue_adds_total"]) == 1
