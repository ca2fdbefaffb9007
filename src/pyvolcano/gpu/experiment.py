"""The FGD paper's experiment: inflate a trace, place pods one by one, measure the curves.

Mirrors the paper artifact (hkust-adsl/kubernetes-scheduler-simulator): ``core.go``
``Simulate``, ``simulator.go`` ``SortClusterPods`` / ``TunePodsByNodeTotalResource`` /
``SchedulePods``, ``analysis.go`` ``ClusterGpuFragReport`` and the discrete curves of
``experiments/analysis/merge_{alloc,frag}_discrete.py``.

Procedure for one (trace, policy, seed):

1. The typical pods (FGD's target workload) come from the original pod list.
2. One random generator, seeded with ``seed``, drives everything that follows, so every
   policy sees the same pod sequence for a seed. The pods, sorted by name, are shuffled.
3. Workload tuning to ``tune`` × the cluster's GPU capacity: while the total GPU request
   is below the target, pods drawn uniformly with replacement from the name-sorted original
   list are *appended* after the shuffled pods; above the target, uniformly random pods are
   removed. (The artifact shuffles before tuning, so copies come last.)
4. The nodes get a random rank (a permutation): the artifact renames nodes ``%04d-<name>``
   with a random permutation, and its vendored kube-scheduler fork gives equal scores to the
   lexicographically smallest name.
5. Each pod in turn is filtered (CPU, memory, GPU model, a GPU with enough free share or
   enough fully free GPUs), scored by the policy, placed on a best-scoring node (ties to the
   lowest rank; ``tie_break="random"`` draws uniformly instead) and given GPUs
   (:mod:`pyvolcano.gpu.policies`). No pod leaves; a pod that does not fit stays unscheduled.
6. After every pod: arrived GPU (requests of all pods so far), allocated GPU, and the
   cluster's fragmentation (:mod:`pyvolcano.gpu.frag`). The curve has one point per whole
   percent of GPU capacity arrived: the mean over the pods whose arrived share rounds to
   that percent (or, if none, to within one percent), as the artifact's analysis does.

Performance design: node state is columnar (free CPU and memory arrays plus the
:class:`~pyvolcano.gpu.devices.GpuLedger`); each placement changes one node, so the FGD terms
and the node's fragmentation are recomputed for that node only, and the scores of every
policy but random are cached per pod shape and refreshed only for the feasible nodes that
changed since (node versions).

Invariant: a run is a pure function of (nodes, pods, policy, seed, tune, tie-break rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.gpu.devices import MILLI, DemandKind, GpuDemand, GpuLedger, NodeGpus
from pyvolcano.gpu.frag import (
    DEFAULT_POPULARITY_THRESHOLD,
    NodeTerms,
    PodSpec,
    TypicalPods,
    node_terms,
    typical_pods,
)
from pyvolcano.gpu.openb import TraceNode, TracePod
from pyvolcano.gpu.policies import (
    POLICIES,
    NodeView,
    Request,
    bestfit_scores,
    dotprod_scores,
    fgd_scores,
    gpuclustering_scores,
    gpupacking_scores,
    random_gpu,
)

__all__ = [
    "CurvePoint",
    "PlacementTrace",
    "RunResult",
    "discrete_curve",
    "inflate",
    "place_pods",
    "run_experiment",
    "trace_typical_pods",
]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    arrived: float
    allocated: float
    fragmentation: float


@dataclass(frozen=True)
class PlacementTrace:
    """Per-pod measurements of one run, in milli-GPU (fragmentation: ``W ×`` milli)."""

    arrived: np.ndarray
    allocated: np.ndarray
    frag_w: np.ndarray
    weight_total: int
    capacity_milli: int
    failed: int
    nodes_of: np.ndarray  # node row per pod, −1 if unscheduled


@dataclass(frozen=True)
class RunResult:
    trace: str
    policy: str
    seed: int
    pods: int
    gpu_capacity: int
    seconds: float
    failed: int
    curve: tuple[CurvePoint, ...] = field(repr=False)
    tune: float = 1.3

    def at(self, percent: int) -> CurvePoint | None:
        target = percent / 100.0
        for p in self.curve:
            if abs(p.arrived - target) < 1e-9:
                return p
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "policy": self.policy,
            "seed": self.seed,
            "pods": self.pods,
            "gpu_capacity": self.gpu_capacity,
            "seconds": round(self.seconds, 3),
            "failed_pods": self.failed,
            "curve": [{"arrived": p.arrived, "allocated": p.allocated, "fragmentation": p.fragmentation}
                      for p in self.curve],
        }


def trace_spec(pod: TracePod) -> PodSpec:
    return PodSpec(pod.cpu_milli, pod.gpu_milli, pod.num_gpu, pod.models)


def trace_typical_pods(pods: Sequence[TracePod], threshold: float = DEFAULT_POPULARITY_THRESHOLD) -> TypicalPods:
    return typical_pods((trace_spec(p) for p in pods), threshold=threshold, include_cpu=True)


def trace_demand(pod: TracePod) -> GpuDemand:
    if pod.num_gpu <= 0:
        return GpuDemand()
    if pod.num_gpu == 1 and pod.gpu_milli < MILLI:
        return GpuDemand(DemandKind.SHARE, 1, pod.gpu_milli, models=pod.models)
    return GpuDemand(DemandKind.WHOLE, pod.num_gpu, MILLI, models=pod.models)


def inflate(pods: Sequence[TracePod], capacity_milli: int, tune: float, rng: np.random.Generator) -> list[int]:
    """Shuffle then tune the workload; returns indices into ``pods`` sorted by name."""
    order = sorted(range(len(pods)), key=lambda i: pods[i].name)
    seq = [order[int(k)] for k in rng.permutation(len(order))]
    if tune <= 0:
        return seq
    target = tune * capacity_milli
    total = sum(pods[i].total_milli for i in seq)
    if total < target:
        while True:
            pick = order[int(rng.integers(len(order)))]
            # Upstream (simulator.go tuneUpPods): the stop test adds the pod's per-GPU milli,
            # while the running total adds its full request.
            if total + pods[pick].gpu_milli > target:
                break
            seq.append(pick)
            total += pods[pick].total_milli
    else:
        while total > target and seq:
            drop = seq.pop(int(rng.integers(len(seq))))
            total -= pods[drop].total_milli
    return seq


_SCORERS: dict[str, Callable[[Request, NodeView], np.ndarray]] = {
    "dotprod": dotprod_scores,
    "bestfit": bestfit_scores,
    "gpupacking": gpupacking_scores,
    "gpuclustering": gpuclustering_scores,
}


class _Placement:
    """Columnar cluster state for the placement loop."""

    def __init__(self, nodes: Sequence[TraceNode], typ: TypicalPods):
        self.cpu_left = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
        self.mem_left = np.array([n.memory_mib for n in nodes], dtype=np.int64)
        self.ledger = GpuLedger([NodeGpus(n.gpus, n.model) for n in nodes])
        self.version = np.zeros(len(nodes), dtype=np.int64)
        self.typ = typ
        self.acc = typ.accessible(self.ledger.models)
        led = self.ledger
        terms = node_terms(typ, self.acc, led.free, self.cpu_left, led.model)
        self.cnt = terms.cnt
        self.big = terms.big
        self.frag = terms.frag
        self.frag_total = int(self.frag.sum())
        self._cache: dict[tuple[str, tuple[int, int, int]], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def feasible(self, pod: TracePod, demand: GpuDemand) -> np.ndarray:
        led = self.ledger
        ok = (self.cpu_left >= pod.cpu_milli) & (self.mem_left >= pod.memory_mib)
        if demand.models:
            ok &= led.model_mask(demand.models)[led.model]
        if demand.shared:
            ok &= led.max_free >= demand.milli
        elif demand.exclusive:
            ok &= led.full >= demand.count
        return ok

    def view(self, idx: np.ndarray | slice) -> NodeView:
        led = self.ledger
        return NodeView(
            cpu_left=self.cpu_left[idx].astype(np.float64),
            free=led.free[idx],
            total_free=led.total_free[idx],
            n_gpus=led.n_gpus[idx],
            model=led.model[idx],
            tags=led.tags[idx],
            terms=NodeTerms(self.cnt[idx], self.big[idx], self.frag[idx]),
        )

    def scores(
        self, policy: str, req: Request, key: tuple[int, int, int], ok: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scores (and FGD's GPU slots) of every node, fresh on the feasible ones.

        Every policy but random scores a node from that node's state alone, so scores are
        cached per pod shape and recomputed only on feasible nodes whose version changed.
        """
        entry = self._cache.get((policy, key))
        n = len(self.cpu_left)
        if entry is None:
            entry = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
            self._cache[(policy, key)] = entry
        scores, slots, snap = entry
        stale = np.flatnonzero(ok & (snap != self.version))
        if len(stale):
            view = self.view(stale)
            if policy == "fgd":
                s, g = fgd_scores(req, view, self.typ, self.acc)
                slots[stale] = g
            else:
                s = _SCORERS[policy](req, view)
            scores[stale] = s
            snap[stale] = self.version[stale]
        return scores, slots

    def apply(self, uid: str, i: int, pod: TracePod, demand: GpuDemand, gpus: Sequence[int]) -> None:
        self.cpu_left[i] -= pod.cpu_milli
        self.mem_left[i] -= pod.memory_mib
        if demand.is_gpu:
            self.ledger.assign(uid, i, gpus, demand)
        self.version[i] += 1
        row = slice(i, i + 1)
        led = self.ledger
        terms = node_terms(self.typ, self.acc, led.free[row], self.cpu_left[row], led.model[row])
        self.cnt[i] = terms.cnt[0]
        self.big[i] = terms.big[0]
        self.frag_total += int(terms.frag[0]) - int(self.frag[i])
        self.frag[i] = terms.frag[0]


def place_pods(
    nodes: Sequence[TraceNode],
    pods: Sequence[TracePod],
    sequence: Sequence[int],
    policy: str,
    typ: TypicalPods,
    rng: np.random.Generator,
    rank: np.ndarray | None = None,
) -> PlacementTrace:
    """Place ``pods[sequence[k]]`` one by one with ``policy``; no departures, no retries.

    Equal best scores go to the node of lowest ``rank`` (the artifact's tie-break), or to a
    uniformly random one when ``rank`` is None (kube-scheduler's and Volcano's).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    state = _Placement(nodes, typ)
    led = state.ledger
    total = len(sequence)
    arrived = np.zeros(total, dtype=np.int64)
    allocated = np.zeros(total, dtype=np.int64)
    frag_w = np.zeros(total, dtype=np.int64)
    nodes_of = np.full(total, -1, dtype=np.int64)
    demands = [trace_demand(p) for p in pods]
    arrived_milli = 0
    allocated_milli = 0
    failed = 0

    def choose(scores: np.ndarray) -> int:
        best = scores.max()
        ties = np.flatnonzero(scores == best)
        if len(ties) == 1:
            return int(ties[0])
        if rank is not None:
            return int(ties[np.argmin(rank[ties])])
        return int(ties[int(rng.integers(len(ties)))])

    for k, p_idx in enumerate(sequence):
        pod = pods[p_idx]
        demand = demands[p_idx]
        arrived_milli += pod.total_milli
        ok = state.feasible(pod, demand)
        if not ok.any():
            failed += 1
        else:
            req = Request(float(pod.cpu_milli), pod.num_gpu, pod.gpu_milli, demand.shared, demand.tag)
            slot = -1
            if policy == "random":
                cand = np.flatnonzero(ok)
                node = int(cand[int(rng.integers(len(cand)))])
            else:
                scores, slots = state.scores(policy, req, (pod.cpu_milli, pod.num_gpu, pod.gpu_milli), ok)
                node = choose(np.where(ok, scores, -1))
                slot = int(slots[node])
            gpus: Sequence[int] = ()
            if demand.exclusive:
                gpus = led.exclusive_choice(node, demand.count) or ()
            elif demand.shared:
                if policy == "random":
                    g = random_gpu(led.free[node], demand.milli, rng)
                    gpus = (g,) if g is not None else ()
                elif policy == "fgd" and slot >= 0:
                    gpus = (slot,)
                else:
                    gpus = led.best_fit_choice(demand, node) or ()
            state.apply(str(k), node, pod, demand, gpus)
            allocated_milli += pod.total_milli
            nodes_of[k] = node
        arrived[k] = arrived_milli
        allocated[k] = allocated_milli
        frag_w[k] = state.frag_total
    return PlacementTrace(arrived, allocated, frag_w, typ.total, led.capacity_milli, failed, nodes_of)


def discrete_curve(trace: PlacementTrace) -> tuple[CurvePoint, ...]:
    """One point per whole percent of capacity arrived (the artifact's discrete analysis)."""
    cap = float(trace.capacity_milli)
    if not len(trace.arrived) or cap <= 0:
        return ()
    # Python's round() is the artifact's (banker's) rounding of the arrived percentage.
    bins = np.array([round(v) for v in (trace.arrived / cap * 100.0).tolist()], dtype=np.int64)
    alloc_pct = trace.allocated / cap * 100.0
    frag_pct = trace.frag_w / float(trace.weight_total) / cap * 100.0
    top = int(bins.max())
    counts = np.bincount(bins, minlength=top + 2)
    alloc_sum = np.bincount(bins, weights=alloc_pct, minlength=top + 2)
    frag_sum = np.bincount(bins, weights=frag_pct, minlength=top + 2)
    points: list[CurvePoint] = []
    for a in range(0, top + 1):
        lo, hi = max(a - 1, 0), a + 1
        if counts[a]:
            n, al, fr = counts[a], alloc_sum[a], frag_sum[a]
        else:
            n = counts[lo:hi + 1].sum()
            if not n:
                continue
            al, fr = alloc_sum[lo:hi + 1].sum(), frag_sum[lo:hi + 1].sum()
        points.append(CurvePoint(a / 100.0, round(float(al / n) / 100.0, 6), round(float(fr / n) / 100.0, 6)))
    return tuple(points)


def run_experiment(
    nodes: Sequence[TraceNode],
    pods: Sequence[TracePod],
    policies: Sequence[str],
    seeds: Sequence[int],
    *,
    tune: float = 1.3,
    trace: str = "openb_pod_list_default",
    tie_break: str = "rank",
    progress: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every (seed, policy) run; results in seed-major order.

    ``tie_break="rank"`` reproduces the artifact (ties go to the lowest node of a per-run
    random permutation); ``"random"`` draws uniformly among tied nodes at every placement.
    """
    if tie_break not in ("rank", "random"):
        raise ValueError(f"tie_break: got {tie_break!r}; expected rank or random")
    typ = trace_typical_pods(pods)
    capacity = sum(n.gpus for n in nodes) * MILLI
    results: list[RunResult] = []
    for seed in seeds:
        for policy in policies:
            t0 = time.perf_counter()
            rng = np.random.default_rng(seed)
            seq = inflate(pods, capacity, tune, rng)
            # Upstream (simulator.go syncClusterResourceList, and the vendored kube-scheduler
            # fork's selectHost): nodes are renamed "%04d-<name>" with a random permutation and
            # equal scores go to the lexicographically smallest name, i.e. the lowest rank.
            rank = rng.permutation(len(nodes)) if tie_break == "rank" else None
            placed = place_pods(nodes, pods, seq, policy, typ, rng, rank)
            curve = discrete_curve(placed)
            seconds = time.perf_counter() - t0
            res = RunResult(trace, policy, seed, len(seq), capacity // MILLI, seconds, placed.failed, curve, tune)
            results.append(res)
            if progress is not None:
                progress(res)
    return results
