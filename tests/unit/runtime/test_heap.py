"""The garbage collector's tuning for long-lived caches (process-wide: each test restores it)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from runtime.heap import HeapSettings, freeze, tune


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@pytest.mark.usefixtures("restored")
def test_tune_sets_the_young_threshold_only() -> None:
    _, middle, old = gc.get_threshold()
    tune(HeapSettings(young_threshold=12_345))
    assert gc.get_threshold() == (12_345, middle, old)


@pytest.mark.usefixtures("restored")
def test_freeze_moves_what_survives_a_collection_out_of_every_collection() -> None:
    kept = [{"cached": [i]} for i in range(1000)]
    assert freeze(HeapSettings()) == gc.get_freeze_count() >= 2 * len(kept)
    walked = {id(obj) for generation in range(3) for obj in gc.get_objects(generation)}
    assert not any(id(k) in walked or id(k["cached"]) in walked for k in kept)
    gc.unfreeze()
    assert freeze(HeapSettings(freeze_after_sync=False)) == 0
    assert gc.get_freeze_count() == 0


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="young_threshold"):
        HeapSettings(young_threshold=0)
