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
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

__all__ = ["HeapSettings", "freeze", "tune"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeapSettings:
    young_threshold: int = 10_000  # allocations between young collections (CPython: 700)
    freeze_after_sync: bool = True

    def __post_init__(self) -> None:
        if self.young_threshold < 1:
            raise ValueError(f"young_threshold must be >= 1, got {self.young_threshold!r}")


def tune(settings: HeapSettings) -> None:
    _, middle, old = gc.get_threshold()
    gc.set_threshold(settings.young_threshold, middle, old)


def freeze(settings: HeapSettings) -> int:
    """Collect once, then freeze what is left; returns how many objects were frozen."""
    if not settings.freeze_after_sync:
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
