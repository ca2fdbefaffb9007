"""Wall time in the store's seconds, and an event loop of timers on it.

The store protocol measures time in seconds after :data:`pyvolcano.store.base.EPOCH`; on a
real cluster that is simply the wall clock shifted, so every RFC 3339 timestamp a controller
writes is the real time. :class:`WallLoop` is the simulator's
:class:`~pyvolcano.runtime.event_loop.EventLoop` (``now``, ``at``, ``after``, ``fire_due``,
``next_time``) on that clock, so the components both runtimes run (the kubelets of
:mod:`pyvolcano.runtime.kubelet`) are the same; ``speed`` divides every delay (``--speed 10`` runs a 10-minute pod
in one minute).
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
import zoneinfo
from collections.abc import Callable

from pyvolcano.runtime.event_loop import EventLoop, Timer
from pyvolcano.store.base import EPOCH

__all__ = ["WallLoop", "local_time_zone", "wall_seconds"]

_EPOCH_UNIX = EPOCH.timestamp()


def wall_seconds() -> float:
    """Now, in the store's seconds after EPOCH."""
    return time.time() - _EPOCH_UNIX


def local_time_zone() -> str:
    """The process's time zone as ``SchedulerOptions.time_zone`` takes it: the ``TZ`` environment
    variable when it names a zone, else the current UTC offset (``+08:00``)."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
        else:
            return name
    offset = _dt.datetime.now().astimezone().utcoffset() or _dt.timedelta()
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


class WallLoop(EventLoop):
    """Timers on the wall clock; thread-safe scheduling, firing from one thread."""

    def __init__(self, *, speed: float = 1.0, clock: Callable[[], float] = wall_seconds):
        super().__init__()
        if not speed > 0:
            raise ValueError(f"speed: got {speed}; expected a positive number")
        self.speed = speed
        self.clock = clock
        self._mutex = threading.RLock()
        self.now = clock()

    def at(self, time: float, fn: Callable[[], None], label: str = "") -> Timer:
        with self._mutex:
            return super().at(time, fn, label)

    def after(self, delay: float, fn: Callable[[], None], label: str = "") -> Timer:
        with self._mutex:
            self.now = max(self.now, self.clock())
            return super().at(self.now + max(delay, 0.0) / self.speed, fn, label)

    def fire_due(self) -> int:
        with self._mutex:
            self.now = max(self.now, self.clock())
            return super().fire_due()

    def next_time(self) -> float | None:
        with self._mutex:
            return super().next_time()
