"""Shared pieces of the controllers: object accessors, owner references, work queues, time.

Controllers work on plain manifest-shaped dicts (the store's currency). The helpers here
read them defensively (a missing ``metadata.annotations`` is an empty mapping) and build the
few structures every controller writes (controller owner references, RFC 3339 timestamps).

:class:`WorkQueue` models client-go's rate-limited work queue on the virtual clock: items
are processed in FIFO order, an item that is already waiting is not added twice (when the
queue deduplicates, as the job controller's does for its value-typed requests), and a failed
item is re-added after the per-item exponential back-off of
``workqueue.DefaultControllerRateLimiter`` (5 ms doubling, capped). The bucket limiter that
upstream combines with it (10 qps, burst 100) is not modelled: it only matters under load
that a simulation does not need to reproduce.

An item that failed because the API server or etcd was unavailable
(:class:`~pyvolcano.store.base.Unavailable`) is re-added with :meth:`WorkQueue.add_unavailable`
instead: its own back-off (5 ms doubling, capped at :data:`UNAVAILABLE_MAX_DELAY`) that does not
count towards a controller's ``--max-requeue-num``. Upstream counts such failures too, and
terminates a job (or drops a queue request) whose retries run out during a long outage; here an
outage delays work but never abandons it, and the short cap resumes it within seconds of the
server's return.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pyvolcano.store.base import can_peek

__all__ = [
    "UNAVAILABLE_MAX_DELAY",
    "WorkQueue",
    "annotations_of",
    "controller_of",
    "controller_ref",
    "go_duration",
    "labels_of",
    "meta",
    "name_of",
    "namespace_of",
    "peek",
    "resource_version",
    "spec",
    "status",
    "uid_of",
]

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)

UNAVAILABLE_MAX_DELAY = 5.0
"""The longest wait, in seconds, before an item that met an unavailable server is tried again."""


# ---------------------------------------------------------------------- object accessors
def peek(store: Any, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
    """The stored object itself when the store is :class:`~pyvolcano.store.base.Peekable`, else
    a copy from ``get``. Read-only: the caller must not mutate it. NotFound as ``get``."""
    if can_peek(store):
        return store.peek(kind, namespace, name)
    result: dict[str, Any] = store.get(kind, namespace, name)
    return result


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    sp = obj.get("spec")
    return sp if isinstance(sp, dict) else {}


def status(obj: Mapping[str, Any]) -> dict[str, Any]:
    st = obj.get("status")
    return st if isinstance(st, dict) else {}


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    a = meta(obj).get("annotations")
    return a if isinstance(a, dict) else {}


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    lb = meta(obj).get("labels")
    return lb if isinstance(lb, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name", "") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace", "") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid", "") or "")


def resource_version(obj: Mapping[str, Any]) -> int:
    """``metadata.resourceVersion`` as an integer (-1 when missing or not numeric)."""
    rv = meta(obj).get("resourceVersion")
    try:
        return int(str(rv))
    except (TypeError, ValueError):
        return -1


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """``metav1.NewControllerRef``: a controlling, deletion-blocking owner reference."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


# ---------------------------------------------------------------------- durations
_GO_UNITS = (("h", 3600 * 10**9), ("m", 60 * 10**9))


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` ("1h2m3.5s", "750ms", "0s") for a number of seconds."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size or unit == "ns":
                return sign + _frac(ns, size) + unit
    out = ""
    for unit, size in _GO_UNITS:
        if ns >= size:
            out += f"{ns // size}{unit}"
            ns %= size
        elif out:
            out += f"0{unit}"
    return sign + out + _frac(ns, 10**9) + "s"


def _frac(value: int, size: int) -> str:
    whole, rest = divmod(value, size)
    if rest == 0:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + f"{rest:0{digits}d}".rstrip("0")


# ---------------------------------------------------------------------- work queues
@dataclass(slots=True)
class _Delayed(Generic[T]):
    at: float
    seq: int
    item: T


class WorkQueue(Generic[T]):
    """A FIFO work queue with rate-limited re-adds on the virtual clock.

    Args:
        dedup: drop an ``add`` of an item that is already waiting (client-go semantics for
            comparable items; upstream's queue and command queues hold pointers, which are
            never equal, so those use ``dedup=False``).
        base_delay / max_delay: the per-item exponential back-off, in seconds.
    """

    def __init__(self, *, dedup: bool = True, base_delay: float = 0.005, max_delay: float = 1000.0):
        self._dedup = dedup
        self._base = base_delay
        self._max = max_delay
        self._items: deque[T] = deque()
        self._waiting: set[T] = set()
        self._delayed: list[_Delayed[T]] = []
        self._seq = 0
        self._requeues: dict[T, int] = {}
        self._unavailable: dict[T, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def idle(self) -> bool:
        """Nothing waiting, now or later: a controller's ``run`` has nothing to do."""
        return not self._items and not self._delayed

    def add(self, item: T) -> None:
        if self._dedup:
            if item in self._waiting:
                return
            self._waiting.add(item)
        self._items.append(item)

    def add_after(self, item: T, at: float) -> None:
        """Add ``item`` at virtual time ``at``; a deduplicating queue keeps one, earliest, entry."""
        if self._dedup:
            for d in self._delayed:
                if d.item == item:
                    d.at = min(d.at, at)
                    return
        self._seq += 1
        self._delayed.append(_Delayed(at, self._seq, item))

    def add_rate_limited(self, item: T, now: float) -> None:
        n = self._requeues.get(item, 0)
        self._requeues[item] = n + 1
        delay = min(self._base * math.pow(2, n), self._max)
        self.add_after(item, now + delay)

    def add_unavailable(self, item: T, now: float) -> None:
        """Re-add ``item`` after a failure of the server rather than of the item: a back-off of
        its own, capped at :data:`UNAVAILABLE_MAX_DELAY`, not counted by :meth:`num_requeues`."""
        n = self._unavailable.get(item, 0)
        self._unavailable[item] = n + 1
        self.add_after(item, now + min(self._base * math.pow(2, n), UNAVAILABLE_MAX_DELAY))

    def num_requeues(self, item: T) -> int:
        return self._requeues.get(item, 0)

    def forget(self, item: T) -> None:
        self._requeues.pop(item, None)
        self._unavailable.pop(item, None)

    def promote(self, now: float) -> None:
        """Move delayed items whose time has come into the queue (in due order)."""
        if not self._delayed:
            return
        due = sorted((d for d in self._delayed if d.at <= now), key=lambda d: (d.at, d.seq))
        if not due:
            return
        self._delayed = [d for d in self._delayed if d.at > now]
        for d in due:
            self.add(d.item)

    def pop(self) -> T:
        item = self._items.popleft()
        if self._dedup:
            self._waiting.discard(item)
        return item

    def drain(self, now: float) -> Iterator[T]:
        """Yield items until the queue is empty, promoting due delayed items as time allows."""
        self.promote(now)
        while self._items:
            yield self.pop()
            self.promote(now)

    def next_wakeup(self) -> float | None:
        return min((d.at for d in self._delayed), default=None)
