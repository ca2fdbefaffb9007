"""The six placement scorers on small hand-computed nodes."""

from __future__ import annotations

import numpy as np

from pyvolcano.gpu.devices import TAG_COLUMNS
from pyvolcano.gpu.frag import PodSpec, TypicalPods, node_terms
from pyvolcano.gpu.policies import (
    NodeView,
    Request,
    bestfit_scores,
    dotprod_scores,
    fgd_scores,
    gpuclustering_scores,
    gpupacking_scores,
    random_gpu,
)


def view(free: list[list[int]], cpu: list[int], tags: list[dict[int, int]] | None = None,
         typ: TypicalPods | None = None) -> NodeView:
    width = max(len(f) for f in free)
    arr = np.zeros((len(free), width), dtype=np.int64)
    for i, f in enumerate(free):
        arr[i, : len(f)] = f
    tag_arr = np.zeros((len(free), TAG_COLUMNS), dtype=np.int64)
    for i, t in enumerate(tags or []):
        for col, n in t.items():
            tag_arr[i, col] = n
    cpu_arr = np.array(cpu, dtype=np.float64)
    model = np.zeros(len(free), dtype=np.int64)
    terms = None
    if typ is not None:
        terms = node_terms(typ, typ.accessible([""]), arr, cpu_arr, model)
    return NodeView(cpu_arr, arr, arr.sum(axis=1), np.array([len(f) for f in free]), model, tag_arr, terms)


ONE_GPU = Request(cpu=16000, count=1, milli=1000, tag=2)


def test_dotprod_prefers_the_smaller_dot_product_of_free_and_demand() -> None:
    # A: (64/128, 8/8)·(16/128, 1/8) = 0.1875 → 100·(1 − 0.09375) = 90
    # B: (32/128, 2/8)·(16/128, 1/8) = 0.0625 → 100·(1 − 0.03125) = 96
    v = view([[1000] * 8, [1000, 1000]], [64000, 32000])
    assert dotprod_scores(ONE_GPU, v).tolist() == [90, 96]


def test_bestfit_prefers_the_least_leftover() -> None:
    # A: ½·48/128 + ½·7/8 = 0.625 → 37;  B: ½·16/128 + ½·1/8 = 0.125 → 87
    v = view([[1000] * 8, [1000, 1000]], [64000, 32000])
    assert bestfit_scores(ONE_GPU, v).tolist() == [37, 87]


def test_gpupacking_ranks_shared_gpu_then_used_node_then_free_node() -> None:
    share = Request(cpu=1000, count=1, milli=300, shared=True, tag=1)
    v = view([[1000] * 8, [1000, 400], [1000, 200], [1000, 1000]], [8000] * 4)
    # shared GPU with 400 free: 100 − 40/10 = 96; free GPU on a used node: 50 − 1 = 49;
    # free nodes: max(33 − free GPUs, free GPUs) = 25 for 8 GPUs and 31 for 2.
    assert gpupacking_scores(share, v).tolist() == [25, 96, 49, 31]


def test_gpupacking_scores_multi_gpu_and_cpu_pods() -> None:
    v = view([[1000, 1000, 1000, 0]], [8000])
    assert gpupacking_scores(Request(cpu=1000, count=2, milli=1000), v).tolist() == [48]
    assert gpupacking_scores(Request(cpu=1000), v).tolist() == [0]


def test_gpuclustering_keeps_gpu_kinds_together() -> None:
    share = Request(cpu=1000, count=1, milli=300, shared=True, tag=1)
    v = view([[1000] * 6 + [0, 0], [1000] * 4 + [0] * 4, [1000] * 8, [1000] + [0] * 7], [8000] * 4,
             tags=[{1: 2}, {1: 1, 2: 1}, {}, {2: 3}])
    # base 25·used/8000 (integer): 6, 12, 0, 21; +75 only share pods, +50 mixed, +25 empty, +0 other kinds
    assert gpuclustering_scores(share, v).tolist() == [81, 62, 25, 21]
    assert gpuclustering_scores(Request(cpu=1000), v).tolist() == [0, 0, 0, 0]


TYP = TypicalPods((PodSpec(4000, 500, 1), PodSpec(8000, 1000, 1), PodSpec(2000, 0, 0)), (1, 1, 2))


def test_fgd_picks_the_node_and_gpu_that_add_least_fragmentation() -> None:
    pod = Request(cpu=1000, count=1, milli=500, shared=True, tag=1)
    # X [1000, 300]: F 800 → GPU0 gives 675: Δ125 → 100·σ(0.125) = 53; GPU1 too small.
    # V [1000, 500]: F 875 → GPU1 gives 500 (Δ375 → 59), GPU0 gives 750 (Δ125 → 53).
    # W [1000, 1000]: F 1000 → 875 on either GPU: 53, first GPU.
    v = view([[1000, 300], [1000, 500], [1000, 1000]], [10000] * 3, typ=TYP)
    scores, slots = fgd_scores(pod, v, TYP, TYP.accessible([""]))
    assert scores.tolist() == [53, 59, 53]
    assert slots.tolist() == [0, 1, 0]
    # BestFit would take X, the node with the least free GPU.
    assert int(np.argmax(bestfit_scores(pod, v))) == 0


def test_fgd_scores_whole_gpu_and_cpu_pods_by_their_effect() -> None:
    v = view([[1000, 1000], [1000, 300]], [10000, 5000], typ=TYP)
    whole = Request(cpu=1000, count=1, milli=1000)
    # [1000,1000], 10 CPUs: F 1000 → [0,1000], 9 CPUs: A, B still fit, C sees 1000: F 500, Δ500 → 62.
    # [1000,300], 5 CPUs (B lacks CPU): F 1050 → [0,300], 4 CPUs: nothing fits, F 300, Δ750 → 67.
    scores, slots = fgd_scores(whole, v, TYP, TYP.accessible([""]))
    assert scores.tolist() == [62, 67] and slots.tolist() == [-1, -1]
    # A CPU-only pod of 3 CPUs: 10 → 7 CPUs makes B lack CPU (F 1000 → 1500, Δ−500 → 37);
    # 5 → 2 CPUs makes A lack CPU too (F 1050 → 1300, Δ−250 → 43).
    assert fgd_scores(Request(cpu=3000), v, TYP, TYP.accessible([""]))[0].tolist() == [37, 43]


def test_fgd_unchanged_fragmentation_scores_50() -> None:
    v = view([[0, 0]], [10000], typ=TYP)
    assert fgd_scores(Request(cpu=1000), v, TYP, TYP.accessible([""]))[0].tolist() == [50]


def test_random_gpu_picks_only_fitting_gpus() -> None:
    rng = np.random.default_rng(0)
    free = np.array([100, 900, 0, 600])
    picks = {random_gpu(free, 500, rng) for _ in range(50)}
    assert picks == {1, 3}
    assert random_gpu(free, 950, rng) is None
