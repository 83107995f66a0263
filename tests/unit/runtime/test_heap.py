"""The garbage collector's tuning for long-lived caches (process-wide: each test restores it)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from runtime.heap import HeapSettings, freeze, release_free_memory, tune
from tests.support.paths import REPO


@pytest.mark.usefixtures("gc_restored")
def test_tune_sets_the_young_threshold_only() -> None:
    _, middle, old = gc.get_threshold()
    tune(HeapSettings(young_threshold=12_345))
    assert gc.get_threshold() == (12_345, middle, old)


@pytest.mark.usefixtures("gc_restored")
def test_freeze_moves_what_survives_a_collection_out_of_every_collection() -> None:
    kept = [{"cached": [i]} for i in range(1000)]
    # Held in a name: a temporary settings object would be frozen and then freed, and the
    # count would drop by one after the call.
    settings = HeapSettings()
    frozen = freeze(settings)
    assert frozen >= 2 * len(kept)
    # Objects only leave the permanent generation when freed; in a long test run something
    # frozen (another test's leftovers) may be freed between the two counts.
    assert frozen >= gc.get_freeze_count() >= 2 * len(kept)
    walked = {id(obj) for generation in range(3) for obj in gc.get_objects(generation)}
    assert not any(id(k) in walked or id(k["cached"]) in walked for k in kept)
    gc.unfreeze()
    assert freeze(HeapSettings(freeze_after_sync=False)) == 0
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("gc_restored")
def test_freeze_collects_the_young_generations_only() -> None:
    """Freezing right after the initial sync walks what is young, not every cached object:
    a young cycle of garbage is collected, the old generation is left as it is."""
    old = [{"cached": [i]} for i in range(1000)]
    gc.collect()  # `old` is now in the oldest generation
    ring: list[object] = []
    ring.append(ring)  # young garbage with a cycle
    del ring
    collected: list[tuple[int, int]] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append((info["generation"], info["collected"]))

    gc.callbacks.append(seen)
    try:
        settings = HeapSettings(trim_after_sync=False)
        freeze(settings)
    finally:
        gc.callbacks.remove(seen)
    assert collected
    assert max(generation for generation, _ in collected) <= 1
    assert sum(n for _, n in collected) >= 1  # the ring
    assert gc.get_freeze_count() >= 2 * len(old)


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="young_threshold"):
        HeapSettings(young_threshold=0)


_RSS = """
def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
"""


def given_back(probe: str, arg: str) -> float:
    """MiB a probe script (with `rss_mib()`) reports handed back, run in a process of its own
    with the C allocator's environment settings left out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _RSS + probe, arg],
                         capture_output=True, text=True, check=True, cwd=REPO, env=env)
    return float(out.stdout)


_ALLOCATOR_PROBE = """
import gc, sys
from runtime.heap import HeapSettings, tune

if sys.argv[1] == "tuned":
    tune(HeapSettings())
big = bytearray(8 << 20)  # a list page's body, freed: glibc raises its threshold past 1 MiB
del big
blocks = [bytearray(1 << 20) for _ in range(64)]  # decoded and dropped later
# Still alive, above them in the heap: too large for a hole earlier imports left free.
top = [bytearray(200_000) for _ in range(4)]
before = rss_mib()
del blocks
gc.collect()
print(before - rss_mib())
"""


@pytest.mark.parametrize("tuned", [True, False])
def test_a_fixed_mmap_threshold_gives_large_freed_blocks_back(tuned: bool) -> None:
    """glibc's dynamic threshold keeps megabyte blocks freed below live ones in the process;
    with the tuned threshold they are mapped on their own and handed back when freed."""
    freed = given_back(_ALLOCATOR_PROBE, "tuned" if tuned else "default")
    if tuned:
        assert freed > 48, freed  # of the 64 MiB freed
    else:
        assert freed < 16, freed


def test_release_free_memory_works_here() -> None:
    assert release_free_memory() is True  # Linux with glibc, as the image and CI are


_SCAVENGER_PROBE = """
import asyncio, sys
from runtime.clock import FakeClock
from runtime.heap import HeapSettings, scavenge, tune

settings = HeapSettings(trim_interval=float(sys.argv[1]) if sys.argv[1] != "none" else None)
tune(settings)
blocks = [bytearray(100_000) for _ in range(1024)]  # below the mmap threshold: in the heap
del blocks[::2]  # ~50 MiB of holes between live blocks: free() cannot give them back

async def main():
    before = rss_mib()
    clock = FakeClock()
    task = asyncio.create_task(scavenge(settings, clock))
    await asyncio.sleep(0)
    for _ in range(5):  # half a second of 0.1 s intervals
        await clock.advance(0.1)
        # The trim runs in a worker thread; it is done once the scavenger sleeps again.
        while not task.done() and not clock.sleepers:
            await asyncio.sleep(0.001)
    task.cancel()
    print(before - rss_mib())

asyncio.run(main())
"""


@pytest.mark.parametrize("interval", ["0.1", "none"])
def test_the_scavenger_hands_back_memory_freed_between_live_blocks(interval: str) -> None:
    """Churn frees buffers between live ones; glibc keeps those holes resident until trimmed.
    The scavenger trims every `trim_interval` seconds; with no interval it does nothing."""
    freed = given_back(_SCAVENGER_PROBE, interval)
    if interval == "none":
        assert freed < 10, freed
    else:
        assert freed > 35, freed  # of ~50 MiB of holes


def test_settings_refuse_a_nonsense_trim_interval() -> None:
    with pytest.raises(ValueError, match="trim_interval"):
        HeapSettings(trim_interval=0)
