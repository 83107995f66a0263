"""Entries waiting for their ready time (client-go's delaying queue, reduced to its store): one
entry per key, and a heap by ready time that the queue drains as time passes.

Entries are immutable tuples `(ready_at, -priority, seq, key)`; a key's current one is in
`entries`. Replacing or removing it there leaves a stale copy in `heap`, skipped when it surfaces
(and swept out once stale copies dominate).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Delayed", "Later"]

K = TypeVar("K", bound=Hashable)

Later = tuple[float, int, int, K]


class Delayed(Generic[K]):
    __slots__ = ("entries", "heap")

    def __init__(self) -> None:
        # Both are read directly on the queue's hot path, so they are never rebound.
        self.entries: dict[K, Later[K]] = {}
        self.heap: list[Later[K]] = []

    def put(self, key: K, priority: int, ready_at: float, seq: int) -> None:
        entry = (ready_at, -priority, seq, key)
        self.entries[key] = entry
        heapq.heappush(self.heap, entry)
        if len(self.heap) > 2 * len(self.entries) + 64:
            self._compact()

    def remove(self, key: K) -> None:
        del self.entries[key]  # its heap copy is stale now

    def pop_due(self, now: float) -> list[tuple[K, int, float]]:
        """Remove every entry due by `now`: `(key, priority, ready_at)`, in ready-time order
        (ties: higher priority, then the older entry)."""
        due: list[tuple[K, int, float]] = []
        heap = self.heap
        entries = self.entries
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            key = entry[3]
            if entries.get(key) is entry:
                del entries[key]
                due.append((key, -entry[1], entry[0]))
        return due

    def next_ready_at(self) -> float | None:
        heap = self.heap
        entries = self.entries
        while heap:
            head = heap[0]
            if entries.get(head[3]) is head:
                return head[0]
            heapq.heappop(heap)
        return None

    def clear(self) -> None:
        self.entries.clear()
        self.heap.clear()

    def _compact(self) -> None:
        entries = self.entries
        self.heap[:] = [e for e in self.heap if entries.get(e[3]) is e]
        heapq.heapify(self.heap)
