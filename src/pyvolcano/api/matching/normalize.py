"""Score normalisation helpers with Go integer semantics.

Reproduces ``pkg/scheduler/framework/plugins/helper/normalize_score.go``
(``DefaultNormalizeScore``): scores are int64; ``max`` starts at 0; if the maximum is 0 the
scores are left unchanged (or all set to ``max_priority`` when ``reverse``); otherwise each score
becomes ``max_priority * score / max`` with Go's truncating integer division, then
``max_priority - score`` when ``reverse``.

Invariant: the result is a fresh ``int64`` array of the same length; the input is not modified.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["default_normalize", "go_div", "go_round"]


def go_div(a: int, b: int) -> int:
    """Go ``int64`` division (truncates toward zero); ``b`` must be non-zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """Go ``math.Round``: half away from zero."""
    t = int(x)  # truncates toward zero, exactly
    frac = x - t
    if frac >= 0.5:
        t += 1
    elif frac <= -0.5:
        t -= 1
    return t


def default_normalize(scores: Sequence[float] | npt.NDArray[np.generic], *, max_priority: int = 100,
                      reverse: bool = False) -> npt.NDArray[np.int64]:
    """kube-scheduler ``helper.DefaultNormalizeScore`` over raw scores (floats are truncated)."""
    a = np.trunc(np.asarray(scores, dtype=np.float64)).astype(np.int64) if not (
        isinstance(scores, np.ndarray) and np.issubdtype(scores.dtype, np.integer)
    ) else np.asarray(scores, dtype=np.int64).copy()
    if a.size == 0:
        return a
    max_count = max(int(a.max()), 0)
    if max_count == 0:
        if reverse:
            return np.full(a.shape, max_priority, dtype=np.int64)
        return a
    prod = a * np.int64(max_priority)
    q = np.abs(prod) // np.int64(max_count)
    q = np.where(prod < 0, -q, q)
    if reverse:
        q = np.int64(max_priority) - q
    return q.astype(np.int64)
