"""Vectorised score kernels shared by the node-order plugins.

Two families of resource scores live here, each computed for many nodes at once with numpy:

* the kube-scheduler scorers that ``nodeorder`` wraps (``pkg/scheduler/framework/plugins/
  noderesources/{least_allocated,most_allocated,balanced_allocation,resource_allocation}.go``):
  integer arithmetic on ``int64`` with Go's truncating division, a resource whose allocatable
  is 0 is left out of the weighted mean, BalancedAllocation works on float fractions capped at
  1 and truncates ``(1 - std) * 100``;
* Volcano's own float scorers used by ``binpack`` (``plugins/binpack/binpack.go``
  ``ResourceBinPackingScore``) and ``resource-strategy-fit`` (``leastRequestedScore`` /
  ``mostRequestedScore``): a resource with zero weight or zero allocatable contributes 0, and a
  request that does not fit (``request + used > allocatable``) zeroes the *whole* node score.

Design: every kernel takes per-node column slices (``table.allocatable[d][idx]`` ...) and the
pod's scalar request, and returns an array aligned with those slices; no Python loop runs per
node. The float kernels evaluate their expressions in upstream's operand order so that results
are bit-identical to the Go code (ties between nodes are decided on exact equality).

Invariants: inputs are never modified; results are fresh arrays; nothing here keeps state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_NODE_SCORE",
    "FloatArray",
    "IntArray",
    "balanced_allocation",
    "go_div",
    "least_requested",
    "most_requested",
    "volcano_resource_term",
    "weighted_mean",
]

MAX_NODE_SCORE = 100

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def go_div(a: IntArray, b: IntArray) -> IntArray:
    """Go ``int64`` division (truncates toward zero); entries where ``b == 0`` give 0."""
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    q = np.where((a < 0) != (safe < 0), -q, q)
    return np.where(b == 0, 0, q).astype(np.int64)


def least_requested(requested: IntArray, capacity: IntArray) -> IntArray:
    """kube-scheduler ``leastRequestedScore``: ``(capacity - requested) * 100 / capacity``.

    0 when ``capacity == 0`` or ``requested > capacity``.
    """
    ok = (capacity != 0) & (requested <= capacity)
    return np.where(ok, go_div((capacity - requested) * MAX_NODE_SCORE, capacity), 0).astype(np.int64)


def most_requested(requested: IntArray, capacity: IntArray) -> IntArray:
    """kube-scheduler ``mostRequestedScore``: ``requested * 100 / capacity``, requested capped at capacity.

    0 when ``capacity == 0``.
    """
    capped = np.minimum(requested, capacity)
    return np.where(capacity != 0, go_div(capped * MAX_NODE_SCORE, capacity), 0).astype(np.int64)


def weighted_mean(terms: Sequence[tuple[IntArray, IntArray, int]]) -> IntArray:
    """The weighted mean of per-resource scores as ``leastResourceScorer``/``mostResourceScorer`` form it.

    ``terms`` holds ``(score, capacity, weight)`` per resource; a resource whose capacity is 0
    on a node is skipped for that node (its weight is not counted); the mean is
    ``Σ score·weight / Σ weight`` with Go integer division, 0 when no resource counted.
    """
    if not terms:
        return np.zeros(0, dtype=np.int64)
    size = len(terms[0][0])
    total = np.zeros(size, dtype=np.int64)
    weight_sum = np.zeros(size, dtype=np.int64)
    for score, capacity, weight in terms:
        counted = capacity != 0
        total += np.where(counted, score * weight, 0)
        weight_sum += np.where(counted, weight, 0)
    return go_div(total, weight_sum)


def balanced_allocation(requested: Sequence[FloatArray], allocatable: Sequence[FloatArray]) -> IntArray:
    """kube-scheduler ``balancedResourceScorer`` over up to three resources, per node.

    Per node, the resources with non-zero allocatable give fractions ``requested/allocatable``
    capped at 1; with two fractions ``std = |f0 - f1| / 2``, with three the population standard
    deviation, otherwise 0; the score is ``int64((1 - std) * 100)``.
    """
    size = len(requested[0]) if requested else 0
    fracs: list[FloatArray] = []
    valid: list[npt.NDArray[np.bool_]] = []
    for req, alloc in zip(requested, allocatable):
        ok = alloc != 0
        f = np.where(ok, req / np.where(ok, alloc, 1.0), 0.0)
        fracs.append(np.minimum(f, 1.0))
        valid.append(ok)
    count = np.zeros(size, dtype=np.int64)
    for ok in valid:
        count += ok
    std = np.zeros(size, dtype=np.float64)
    # Two fractions: |first - second| / 2, in resource order.
    if len(fracs) >= 2:
        first = np.full(size, np.nan)
        second = np.full(size, np.nan)
        for f, ok in zip(fracs, valid):
            take_first = ok & np.isnan(first)
            take_second = ok & ~take_first & np.isnan(second)
            first = np.where(take_first, f, first)
            second = np.where(take_second, f, second)
        two = count == 2
        if two.any():
            std = np.where(two, np.abs((first - second) / 2), std)
    if len(fracs) == 3:
        three = count == 3
        if three.any():
            total = (fracs[0] + fracs[1]) + fracs[2]
            mean = total / 3
            sq = ((fracs[0] - mean) * (fracs[0] - mean) + (fracs[1] - mean) * (fracs[1] - mean)) \
                + (fracs[2] - mean) * (fracs[2] - mean)
            std = np.where(three, np.sqrt(sq / 3), std)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def volcano_resource_term(request: float, used: FloatArray, capacity: FloatArray, weight: int,
                          most: bool | None) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """One resource's contribution in binpack / resource-strategy-fit, and where it does not fit.

    ``most=True``: ``(request + used) * weight / capacity`` (binpack, MostAllocated);
    ``most=False``: ``(capacity - request - used) * weight / capacity`` (LeastAllocated);
    ``most=None``: an unknown scoring type, which contributes 0 and never fails. Nodes with
    ``capacity == 0`` contribute 0 and never fail; so does every node when ``weight == 0``.
    The returned mask marks nodes where ``request + used > capacity`` (the caller zeroes them).
    """
    size = len(capacity)
    if weight == 0 or most is None:
        return np.zeros(size, dtype=np.float64), np.zeros(size, dtype=bool)
    counted = capacity != 0
    used_finally = request + used
    over = counted & (used_finally > capacity)
    safe = np.where(counted, capacity, 1.0)
    if most:
        term = used_finally * float(weight) / safe
    else:
        term = (capacity - used_finally) * float(weight) / safe
    return np.where(counted & ~over, term, 0.0), over
