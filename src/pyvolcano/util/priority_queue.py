"""A binary heap with a ``less`` callback, popping in the same order as Go's container/heap.

Upstream's ``util.PriorityQueue`` wraps ``container/heap`` and re-evaluates its comparator on
every push and pop, so an element pushed back after work was done is re-ranked with current
shares. Reproducing Go's sift-up/sift-down exactly means that, for the same insertion order,
elements that compare equal come out in the same order as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["PriorityQueue"]


class PriorityQueue(Generic[T]):
    __slots__ = ("_items", "_less")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()):
        self._less = less
        self._items: list[T] = []
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        self._items.append(item)
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        h = self._items
        n = len(h) - 1
        h[0], h[n] = h[n], h[0]
        self._down(0, n)
        return h.pop()

    def clone(self) -> PriorityQueue[T]:
        """A queue with the same comparator and elements (the heap layout copied as it is)."""
        out: PriorityQueue[T] = PriorityQueue(self._less)
        out._items = list(self._items)
        return out

    def empty(self) -> bool:
        return not self._items

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def _up(self, j: int) -> None:
        h, less = self._items, self._less
        while True:
            i = (j - 1) // 2
            if j <= 0 or i == j or not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        h, less = self._items, self._less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(h[j2], h[j1]):
                j = j2
            if not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            i = j
