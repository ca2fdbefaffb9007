"""A deterministic discrete-event loop with a virtual clock.

Timers are kept in a heap keyed by ``(time, sequence)``: equal times fire in the order they
were scheduled. Virtual time only moves forward, and jumps straight to the next timer, so
idle periods cost nothing. The simulator runs on it; the live components run on
:class:`~pyvolcano.runtime.clock.WallLoop`, the same loop on the wall clock, so the kubelets
(:mod:`pyvolcano.runtime.kubelet`) are written once for both.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["EventLoop", "Timer"]


@dataclass(order=True)
class Timer:
    time: float
    seq: int
    fn: Callable[[], None] = field(compare=False)
    label: str = field(compare=False, default="")
    cancelled: bool = field(compare=False, default=False)


class EventLoop:
    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[Timer] = []
        self._seq = 0

    def at(self, time: float, fn: Callable[[], None], label: str = "") -> Timer:
        if time < self.now:
            time = self.now
        self._seq += 1
        timer = Timer(time, self._seq, fn, label)
        heapq.heappush(self._heap, timer)
        return timer

    def after(self, delay: float, fn: Callable[[], None], label: str = "") -> Timer:
        return self.at(self.now + max(delay, 0.0), fn, label)

    def next_time(self) -> float | None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].time if self._heap else None

    def fire_due(self) -> int:
        """Fire every timer due at or before ``now``; returns how many fired."""
        fired = 0
        while self._heap and self._heap[0].time <= self.now:
            timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                timer.fn()
                fired += 1
        return fired

    def advance_to(self, time: float) -> None:
        self.now = max(self.now, time)

    def pending(self) -> int:
        return sum(1 for t in self._heap if not t.cancelled)
