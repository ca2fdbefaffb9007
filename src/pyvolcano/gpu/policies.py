"""The six GPU placement policies of the FGD paper, vectorised over candidate nodes.

Mirrors the paper artifact's score plugins (hkust-adsl/kubernetes-scheduler-simulator
``pkg/simulator/plugin/{random,dot_product,gpu_clustering,gpu_packing,best_fit,fgd}_score.go``)
and their GPU selection inside a node (``open_gpu_share.go`` ``allocateGpuId*``), as the
paper's run script configures them:

=============== ====================================================== =====================
policy          node score (0..100, higher is better)                  GPU for a shared pod
=============== ====================================================== =====================
random          one uniformly random feasible node                     random fitting GPU
dotprod         100·(1 − ½·(node free · pod demand)), both divided by  tightest fit
                (128 CPUs, 8 GPUs); GPUs merged into one dimension
gpuclustering   25·used/8000 + 75 (node hosts only the pod's kind),    tightest fit
                +50 (its kind among others), +25 (empty), +0 (others);
                kinds: GPU-sharing, 1-GPU, 2-GPU, …; CPU pods score 0
gpupacking      shared GPUs (100 − free%/10 ≥ 50) > free GPUs on used  tightest fit
                nodes (50 − n ≥ 33) > free nodes (33 − n); CPU pods 0
bestfit         100·(1 − ½·cpu_left'/128000 − ½·gpu_left'/8000)        tightest fit
fgd             100·sigmoid(−ΔF/1000), ΔF the node fragmentation       the GPU with the
                increase (:mod:`pyvolcano.gpu.frag`)                   best score
=============== ====================================================== =====================

Whole-GPU pods always take the first fully free GPUs by index. Scores are truncated to
integers as the artifact's ``int64(...)`` does; that truncation creates the ties that the
caller breaks uniformly at random (kube-scheduler's ``selectHost``). Float expressions keep
the artifact's operation order so that truncation lands on the same integer.

Design: scorers are pure functions of a :class:`NodeView` (arrays over the candidate nodes)
and a :class:`Request`; the simulator's placement loop and the scheduler plugins
(:mod:`pyvolcano.plugins.gpu_policies`) call the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from pyvolcano.gpu.devices import MILLI
from pyvolcano.gpu.frag import NodeTerms, TypicalPods, fragmentation_from

__all__ = [
    "MAX_NODE_SCORE",
    "POLICIES",
    "NodeView",
    "Request",
    "bestfit_scores",
    "dotprod_scores",
    "fgd_scores",
    "gpuclustering_scores",
    "gpupacking_scores",
    "random_gpu",
]

POLICIES: Final = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")
MAX_NODE_SCORE: Final = 100
# Upstream (open-gpu-share/utils/const.go): the normalisers MaxSpecCpu / MaxSpecGpu.
MAX_SPEC_CPU: Final = 128000.0
MAX_SPEC_GPU: Final = 8000


@dataclass(frozen=True, slots=True)
class Request:
    """What the scorers need of a pod.

    ``milli`` is the per-GPU share (1000 for whole GPUs, 0 for CPU-only pods); it is an
    array over the candidate nodes when it depends on the card (memory-share demands).
    """

    cpu: float
    count: int = 0
    milli: int | np.ndarray = 0
    shared: bool = False
    tag: int = 0

    def total_milli(self) -> int | np.ndarray:
        return self.count * self.milli


@dataclass(frozen=True, slots=True)
class NodeView:
    """Candidate nodes as arrays (row k = the k-th candidate)."""

    cpu_left: np.ndarray      # free CPU, milli (float64)
    free: np.ndarray          # (n, G) free milli per GPU; 0 on absent slots
    total_free: np.ndarray    # Σ free
    n_gpus: np.ndarray        # GPUs on the node
    model: np.ndarray         # model ids
    tags: np.ndarray | None = None        # (n, TAG_COLUMNS) pods per affinity tag
    terms: NodeTerms | None = None        # FGD terms (required by fgd_scores)


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """Go's integer division (truncation toward zero)."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def dotprod_scores(req: Request, view: NodeView) -> np.ndarray:
    """DotProductScore with dimension "merge" and norm "max" (the paper's DotProd)."""
    n0 = view.cpu_left / MAX_SPEC_CPU
    n1 = view.total_free / float(MAX_SPEC_GPU)
    p0 = float(req.cpu) / MAX_SPEC_CPU
    p1 = np.asarray(req.total_milli(), dtype=np.float64) / float(MAX_SPEC_GPU)
    dot = n0 * p0 + n1 * p1
    # Upstream (dot_product_score.go): the larger the dot product, the lower the score.
    score = 1.0 - dot / 2.0
    out = (float(MAX_NODE_SCORE) * score).astype(np.int64)
    return np.where(view.cpu_left >= req.cpu, out, 0)


def bestfit_scores(req: Request, view: NodeView) -> np.ndarray:
    """BestFitScore: least weighted leftover of CPU and GPU after placing the pod."""
    cpu_part = (view.cpu_left - float(req.cpu)) / MAX_SPEC_CPU * 0.5
    gpu_part = (view.total_free - np.asarray(req.total_milli(), dtype=np.float64)) / float(MAX_SPEC_GPU) * 0.5
    score = (1.0 - (cpu_part + gpu_part)) * float(MAX_NODE_SCORE)
    fits = (view.cpu_left >= req.cpu) & (view.total_free >= req.total_milli())
    # NormalizeScore (min-max to 0..100) keeps the argmax set, so it is not applied.
    return np.where(fits, score.astype(np.int64), 0)


def gpupacking_scores(req: Request, view: NodeView) -> np.ndarray:
    """GpuPackingScore: prefer shared GPUs, then free GPUs on used nodes, then free nodes."""
    n = len(view.cpu_left)
    if req.count <= 0 or np.all(np.asarray(req.milli) <= 0):
        return np.zeros(n, dtype=np.int64)
    free = view.free
    fully_free = np.count_nonzero(free == MILLI, axis=1)
    milli = np.broadcast_to(np.asarray(req.milli, dtype=np.int64), (n,))
    ordered = np.sort(free, axis=1)  # least free first; absent slots (0) never fit
    eligible = ordered >= milli[:, None]
    rank = np.cumsum(eligible, axis=1)
    chosen = eligible & (rank <= req.count)
    feasible = rank[:, -1] >= req.count
    free_used = np.count_nonzero(chosen & (ordered == MILLI), axis=1)
    ratio = (np.where(chosen, ordered * 100 // MILLI, 0)).sum(axis=1)
    case1 = np.maximum(MAX_NODE_SCORE - ratio // 10, MAX_NODE_SCORE // 2)
    case2 = np.maximum(MAX_NODE_SCORE // 2 - free_used, MAX_NODE_SCORE // 3)
    # Upstream (gpu_packing_score.go): the "free node" case is capped from below by the number
    # of free GPUs, not by a constant.
    case3 = np.maximum(MAX_NODE_SCORE // 3 - fully_free, fully_free)
    out = np.where(free_used > 0, case2, case1)
    out = np.where(feasible, out, 0)
    return np.where(fully_free == view.n_gpus, case3, out).astype(np.int64)


def gpuclustering_scores(req: Request, view: NodeView) -> np.ndarray:
    """GpuClusteringScore: keep pods of one GPU kind together; CPU pods score 0."""
    n = len(view.cpu_left)
    if req.tag == 0:
        return np.zeros(n, dtype=np.int64)
    assert view.tags is not None
    tags = view.tags
    kinds = np.count_nonzero(tags[:, 1:] > 0, axis=1)
    same = tags[:, req.tag] > 0
    base = _trunc_div((MAX_NODE_SCORE // 4) * (MAX_SPEC_GPU - view.total_free.astype(np.int64)), MAX_SPEC_GPU)
    bonus = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
    return (base + bonus).astype(np.int64)


def _sigmoid_score(delta_w: np.ndarray, weight_total: int) -> np.ndarray:
    delta = delta_w / float(weight_total)
    with np.errstate(over="ignore"):
        sig = 1.0 / (1.0 + np.exp(-delta / 1000.0))
    return (sig * float(MAX_NODE_SCORE)).astype(np.int64)


def fgd_scores(req: Request, view: NodeView, typ: TypicalPods, acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FGDScore: how little placing the pod increases the node's fragmentation.

    Returns the scores and, per candidate, the GPU slot a shared pod should take (the
    first slot with the best score; −1 when none fits or the pod is not shared).
    """
    terms = view.terms
    assert terms is not None, "fgd_scores needs NodeView.terms"
    n = len(view.cpu_left)
    cpu_after = view.cpu_left - float(req.cpu)
    if req.shared:
        x = np.broadcast_to(np.asarray(req.milli, dtype=np.int64), (n,))[:, None]
        left = view.free
        valid = left >= x
        after = left - x
        mm = typ.milli
        before_ge = left[:, :, None] >= mm
        after_ge = after[:, :, None] >= mm
        cnt = terms.cnt[:, None, :] - before_ge + after_ge
        big = terms.big[:, None, :] - left[:, :, None] * before_ge + after[:, :, None] * after_ge
        frag_after = fragmentation_from(
            typ, acc, (view.total_free[:, None] - x), cpu_after[:, None], view.model[:, None], cnt, big)
        scores = _sigmoid_score((terms.frag[:, None] - frag_after).astype(np.float64), typ.total)
        scores = np.where(valid, scores, -1)
        slot = np.argmax(scores, axis=1)
        best = scores[np.arange(n), slot]
        return np.maximum(best, 0), np.where(best >= 0, slot, -1)
    k = req.count
    gpu_pod = typ.milli > 0
    cnt = terms.cnt - k * gpu_pod
    big = terms.big - (k * MILLI) * gpu_pod
    frag_after = fragmentation_from(typ, acc, view.total_free - k * MILLI, cpu_after, view.model, cnt, big)
    scores = _sigmoid_score((terms.frag - frag_after).astype(np.float64), typ.total)
    return scores, np.full(n, -1, dtype=np.int64)


def random_gpu(free: np.ndarray, milli: int, rng: np.random.Generator) -> int | None:
    """A uniformly random GPU of one node with at least ``milli`` free (gpusel "random")."""
    cands = np.flatnonzero(free >= milli)
    if not len(cands):
        return None
    return int(cands[int(rng.integers(len(cands)))])
