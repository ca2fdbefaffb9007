"""Client-side rate limiting of API requests: client-go's token bucket (``util/flowcontrol``).

``--kube-api-qps`` and ``--kube-api-burst`` become a :class:`TokenBucket` as in client-go's
``rest.RESTClientFor``: QPS 0 means client-go's default 5 (burst 0 its default 10), a negative
QPS means no limit, and a positive QPS needs a positive burst. Upstream's flag defaults are
2000 / 2000 for vc-scheduler and 50 / 100 for vc-controller-manager
(:data:`SCHEDULER_QPS`, :data:`CONTROLLER_MANAGER_QPS`, ...).

The bucket is ``golang.org/x/time/rate``'s ``Limiter`` as ``Wait(ctx)`` uses it: it starts
full with ``burst`` tokens and refills at ``qps`` tokens a second up to ``burst``; a request
*reserves* a token, letting the count go negative, and then sleeps until its token is due,
``-tokens / qps`` seconds. Reservations are taken under a lock and the sleep happens outside
it, so concurrent callers are served first come, first served at exactly ``qps`` once the
burst is spent. The clock and the sleep are injected; tests use a fake clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = [
    "CONTROLLER_MANAGER_BURST",
    "CONTROLLER_MANAGER_QPS",
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "SCHEDULER_BURST",
    "SCHEDULER_QPS",
    "RateLimitExceeded",
    "TokenBucket",
    "rate_limiter_for",
]

SCHEDULER_QPS: Final = 2000.0
SCHEDULER_BURST: Final = 2000
CONTROLLER_MANAGER_QPS: Final = 50.0
CONTROLLER_MANAGER_BURST: Final = 100
DEFAULT_QPS: Final = 5.0
"""client-go's ``rest.DefaultQPS``, used when the configured QPS is 0."""
DEFAULT_BURST: Final = 10
"""client-go's ``rest.DefaultBurst``, used when the configured burst is 0."""


class RateLimitExceeded(Exception):
    """A request's token would come later than its deadline (``rate: Wait(n=1) would exceed
    context deadline``); no token was taken."""


class TokenBucket:
    """A thread-safe token bucket of ``burst`` tokens refilled at ``qps`` tokens a second."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if qps <= 0:
            raise ValueError(f"rate limiter: qps must be greater than 0, got {qps:g}")
        if burst <= 0:
            raise ValueError("rate limiter: burst is required to be greater than 0 when QPS is set "
                             f"to greater than 0, got {burst}")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def _advance(self, now: float) -> float:
        """Tokens available at ``now`` (not stored); time going backwards adds nothing."""
        elapsed = max(now - self._last, 0.0)
        return min(self._tokens + elapsed * self.qps, float(self.burst))

    def tokens(self) -> float:
        """Tokens available now (negative while requests are queued)."""
        with self._lock:
            return self._advance(self._clock())

    def reserve(self, max_wait: float | None = None) -> float:
        """Take a token and return how long to wait before using it (0 when one is free).

        With ``max_wait``, a token due later than that is not taken: :class:`RateLimitExceeded`."""
        with self._lock:
            now = self._clock()
            tokens = self._advance(now) - 1.0
            wait = -tokens / self.qps if tokens < 0 else 0.0
            if max_wait is not None and wait > max_wait:
                raise RateLimitExceeded(f"rate: Wait(n=1) would exceed the deadline ({wait:.3f}s > {max_wait:.3f}s)")
            self._tokens = tokens
            self._last = max(now, self._last)
            return wait

    def try_accept(self) -> bool:
        """Take a token only if one is free now (client-go ``TryAccept``)."""
        try:
            self.reserve(max_wait=0.0)
        except RateLimitExceeded:
            return False
        return True

    def accept(self, max_wait: float | None = None) -> float:
        """Block until a token is ours (client-go ``Accept`` / ``Wait``); returns the seconds waited."""
        wait = self.reserve(max_wait)
        if wait > 0:
            self._sleep(wait)
        return wait


def rate_limiter_for(qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> TokenBucket | None:
    """The limiter client-go builds for a ``rest.Config`` with this QPS and burst; None = unlimited.

    ValueError naming the flag for a positive QPS with a negative burst."""
    if qps < 0:
        return None
    if qps == 0:
        qps = DEFAULT_QPS
    if burst == 0:
        burst = DEFAULT_BURST
    if burst < 0:
        raise ValueError(f"--kube-api-burst: got {burst}; expected a number greater than 0 when --kube-api-qps "
                         "is greater than 0")
    return TokenBucket(qps, burst, clock=clock, sleep=sleep)
