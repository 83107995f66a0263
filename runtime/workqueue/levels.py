"""Ready entries of one lane (normal or LOW): a FIFO per priority, highest priority first.

Entries join in readiness order (the queue makes due entries ready before it ranks anything), so
each FIFO is already ordered by ready time, then FIFO, and the whole structure by the queue's
rank, without comparing anything: a priority queue in O(1) per item instead of a heap's
O(log n) tuple comparisons.

Deletion is lazy: an entry is an immutable tuple that is live only while the queue's `ready`
mapping holds that very tuple under its key; replacing or removing it there leaves a stale copy
here, skipped when it reaches the front.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Levels", "Ready"]

K = TypeVar("K", bound=Hashable)

# (key, priority, ready_at). No sequence number: within a FIFO the order is the FIFO's, and the
# heads of two FIFOs differ in priority, which breaks their ties.
Ready = tuple[K, int, float]

SEEN_LIMIT = 64  # priorities remembered for metrics; more than the metrics' label limit


class Levels(Generic[K]):
    __slots__ = ("fifos", "seen", "top")

    def __init__(self, seen: dict[int, None]) -> None:
        self.fifos: dict[int, deque[Ready[K]]] = {}
        self.top = 0  # the highest priority with a FIFO; meaningless while there is none
        # Every priority that ever had a FIFO, first come first (shared by a queue's levels, for
        # its metrics: a FIFO is made per level, not per item, so this costs the hot path nothing).
        self.seen = seen

    def push(self, entry: Ready[K]) -> None:
        priority = entry[1]
        fifo = self.fifos.get(priority)
        if fifo is None:
            fifo = self.fifos[priority] = deque()
            if len(self.fifos) == 1 or priority > self.top:
                self.top = priority
            if priority not in self.seen and len(self.seen) < SEEN_LIMIT:
                self.seen[priority] = None
        fifo.append(entry)

    def pop(self, ready: dict[K, Ready[K]]) -> Ready[K]:
        """Remove and return the first live entry (the caller knows there is one)."""
        while True:
            fifo = self.fifos[self.top]
            while fifo:
                entry = fifo.popleft()
                if ready.get(entry[0]) is entry:
                    if not fifo:
                        self._drop_top()
                    return entry
            self._drop_top()

    def settle(self, popped: Ready[K], ready: dict[K, Ready[K]]) -> Ready[K]:
        """The queue's inlined pop took `popped` off the top FIFO and found it stale, or found
        that FIFO empty after it: finish the job."""
        if ready.get(popped[0]) is popped:
            self._drop_top()
            return popped
        return self.pop(ready)

    def pop_head(self, priority: int) -> Ready[K]:
        """Remove and return the front of one FIFO (a live head `heads` just returned)."""
        fifo = self.fifos[priority]
        entry = fifo.popleft()
        if not fifo:
            self._drop(priority)
        return entry

    def heads(self, ready: dict[K, Ready[K]]) -> list[Ready[K]]:
        """The first live entry of every priority (stale ones at the front are dropped)."""
        heads: list[Ready[K]] = []
        for priority in list(self.fifos):
            fifo = self.fifos[priority]
            while fifo and ready.get(fifo[0][0]) is not fifo[0]:
                fifo.popleft()
            if fifo:
                heads.append(fifo[0])
            else:
                self._drop(priority)
        return heads

    def stored(self) -> int:
        return sum(len(fifo) for fifo in self.fifos.values())

    def compact(self, ready: dict[K, Ready[K]]) -> None:
        for priority in list(self.fifos):
            live = deque(e for e in self.fifos[priority] if ready.get(e[0]) is e)
            if live:
                self.fifos[priority] = live
            else:
                self._drop(priority)

    def clear(self) -> None:
        self.fifos.clear()

    def _drop_top(self) -> None:
        self._drop(self.top)

    def _drop(self, priority: int) -> None:
        del self.fifos[priority]
        if priority == self.top and self.fifos:
            self.top = max(self.fifos)
