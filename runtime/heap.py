"""The cyclic garbage collector, tuned for a process whose heap is mostly long-lived caches.

An informer cache holds millions of containers that live until the object changes. CPython's
defaults suit short scripts: a young collection every 700 allocations (decoding one large watch
event allocates more than that), and full collections that walk every cached container. Two
changes, both process-wide and so made by the process's entry point only (`Manager` with
`ManagerOptions.heap`):
- a larger young threshold: most temporaries of an event die by reference count before a
  collection would have looked at them, so collections are fewer and find the same garbage;
- freezing after the initial sync: what the first lists put in the caches moves to the
  collector's permanent generation, which no collection walks. Frozen objects are still freed
  when their last reference goes (a replaced cache entry); only a reference cycle among them
  would outlive its use, and cached objects are plain JSON, which has none.

And the C allocator (glibc's, where the process has it), whose free memory stays in the
process unless handed back:
- a fixed mmap threshold (`mmap_threshold`): glibc serves a large block from its own mapping,
  returned to the system when freed, but raises that threshold to the size of each such block
  freed, up to 32 MiB. After the first list pages (megabytes of response body, decoded and
  dropped) every later buffer of that size comes from the heap, whose freed holes the process
  keeps: about 20 MiB of a large cluster's memory. A fixed threshold keeps them mapped.
  `MALLOC_MMAP_THRESHOLD_` in the environment, if set, is left to rule;
- once the caches are synced, `malloc_trim` hands back what the initial lists left free;
- and from then on every `trim_interval` seconds (`scavenge`), as Go's runtime scavenger hands
  back a heap's free pages: under churn, buffers of every size are freed between live ones,
  and the holes glibc keeps grew the RSS of a large cluster's controller by ~20 MiB over ten
  minutes (1.11x its steady size) though the live heap had not grown. A trim costs a few
  milliseconds (tens when there is much to hand back) and runs off the event loop's thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import logging
import os
import sys
from dataclasses import dataclass

from runtime.clock import Clock

__all__ = ["HeapSettings", "freeze", "release_free_memory", "scavenge", "tune"]

log = logging.getLogger(__name__)

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


@dataclass(frozen=True, slots=True, kw_only=True)
class HeapSettings:
    young_threshold: int = 10_000  # allocations between young collections (CPython: 700)
    freeze_after_sync: bool = True
    # Bytes from which the C allocator maps a block of its own (None: the allocator's default).
    mmap_threshold: int | None = 256 * 1024
    trim_after_sync: bool = True
    # Seconds between hand-backs of free memory once synced (None: none after the sync's).
    trim_interval: float | None = 60.0

    def __post_init__(self) -> None:
        if self.young_threshold < 1:
            raise ValueError(f"young_threshold must be >= 1, got {self.young_threshold!r}")
        if self.mmap_threshold is not None and self.mmap_threshold < 1:
            raise ValueError(f"mmap_threshold must be >= 1, got {self.mmap_threshold!r}")
        if self.trim_interval is not None and not self.trim_interval > 0:
            raise ValueError(f"trim_interval must be > 0, got {self.trim_interval!r}")


@functools.cache  # looked up once: the scavenger asks every trim_interval
def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc (mallopt and malloc_trim are glibc's)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (only glibc has it)
        libc.mallopt  # noqa: B018
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def tune(settings: HeapSettings) -> None:
    _, middle, old = gc.get_threshold()
    gc.set_threshold(settings.young_threshold, middle, old)
    libc = _glibc()
    if (settings.mmap_threshold is not None and libc is not None
            and "MALLOC_MMAP_THRESHOLD_" not in os.environ
            and not libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(settings.mmap_threshold))):
        log.debug("mallopt refused an mmap threshold of %d", settings.mmap_threshold)


def release_free_memory() -> bool:
    """Hand the C allocator's free memory back to the system; False where it cannot."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(ctypes.c_size_t(0))
    return True


def freeze(settings: HeapSettings) -> int:
    """Collect the young generations, then freeze what is left (and hand back what the initial
    lists left free); returns how many objects were frozen.

    Not a full collection: it would walk every object the initial lists just cached (hundreds
    of milliseconds at a thousand Ingresses, the loop blocked just as the controllers start
    and a restart's first real change waits for them). The cached objects are plain JSON, with
    no cycles to find; what a full collection could find besides (a cycle that became garbage
    earlier and reached the old generation) stays frozen for good: a one-off of kilobytes."""
    frozen = 0
    if settings.freeze_after_sync:
        gc.collect(1)
        gc.freeze()
        frozen = gc.get_freeze_count()
    if settings.trim_after_sync:
        release_free_memory()
    return frozen


async def scavenge(settings: HeapSettings, clock: Clock) -> None:
    """Hand the C allocator's free memory back every `trim_interval` seconds, until cancelled;
    returns at once where there is nothing to do (no interval, no glibc). The trim runs in a
    worker thread (ctypes lets go of the interpreter): the loop goes on meanwhile."""
    if settings.trim_interval is None or _glibc() is None:
        return
    while True:
        await clock.sleep(settings.trim_interval)
        await asyncio.to_thread(release_free_memory)
