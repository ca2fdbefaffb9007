"""client_golang's histogram bucket helpers (``prometheus.ExponentialBucketsRange``)."""

from __future__ import annotations

__all__ = ["exponential_buckets_range"]


def exponential_buckets_range(minimum: float, maximum: float, count: int) -> tuple[float, ...]:
    """``count`` upper bounds growing geometrically from ``minimum`` to ``maximum`` (both included):
    ``minimum * growth**i`` with ``growth = (maximum / minimum) ** (1 / (count - 1))``."""
    if count < 1:
        raise ValueError("exponential_buckets_range needs a positive count")
    if minimum <= 0:
        raise ValueError("exponential_buckets_range needs a positive minimum")
    if count == 1:
        return (float(minimum),)
    growth = (maximum / minimum) ** (1.0 / (count - 1))
    return tuple(minimum * growth ** i for i in range(count))
