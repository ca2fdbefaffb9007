"""The FGD experiment: workload inflation, one-by-one placement, discrete curves."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.gpu.experiment import (
    PlacementTrace,
    discrete_curve,
    inflate,
    place_pods,
    run_experiment,
    trace_typical_pods,
)
from pyvolcano.gpu.openb import TraceNode, TracePod
from pyvolcano.gpu.policies import POLICIES

NODES = [
    TraceNode("n0", 16000, 65536, 2, "T4"),
    TraceNode("n1", 16000, 65536, 2, "T4"),
    TraceNode("n2", 32000, 131072, 4, "V100M32"),
]
CAPACITY = 8000


def pod(name: str, cpu: int, num: int = 0, milli: int = 0, models: tuple[str, ...] = ()) -> TracePod:
    return TracePod(name, cpu, 1024, num, milli if num else 0, models)


PODS = [
    pod("p0", 2000, 1, 500),
    pod("p1", 2000, 1, 300),
    pod("p2", 4000, 1, 1000),
    pod("p3", 1000),
    pod("p4", 4000, 2, 1000),
    pod("p5", 2000, 1, 700, ("V100M32",)),
    pod("p6", 1000, 1, 250),
    pod("p7", 3000),
]


def total(pods: list[TracePod], seq: list[int]) -> int:
    return sum(pods[i].total_milli for i in seq)


def test_inflation_keeps_every_original_pod_then_appends_draws_up_to_the_target() -> None:
    seq = inflate(PODS, CAPACITY, 1.3, np.random.default_rng(7))
    assert sorted(seq[: len(PODS)]) == list(range(len(PODS)))
    assert len(seq) > len(PODS)
    assert total(PODS, seq) <= 1.3 * CAPACITY
    assert all(0 <= i < len(PODS) for i in seq)


def test_inflation_is_deterministic_for_a_seed() -> None:
    a = inflate(PODS, CAPACITY, 1.3, np.random.default_rng(42))
    b = inflate(PODS, CAPACITY, 1.3, np.random.default_rng(42))
    c = inflate(PODS, CAPACITY, 1.3, np.random.default_rng(43))
    assert a == b
    assert a != c


def test_inflation_removes_random_pods_when_the_trace_is_above_the_target() -> None:
    seq = inflate(PODS, CAPACITY, 0.5, np.random.default_rng(1))
    assert total(PODS, seq) <= 0.5 * CAPACITY
    assert len(seq) < len(PODS) and len(set(seq)) == len(seq)


def test_inflation_without_tuning_only_shuffles() -> None:
    seq = inflate(PODS, CAPACITY, 0, np.random.default_rng(1))
    assert sorted(seq) == list(range(len(PODS)))


def test_inflation_stop_test_uses_the_per_gpu_share_as_upstream_does() -> None:
    # One 2-GPU pod (2000 milli), target 1.25 × 4000 = 5000: copies are appended while
    # total + 1000 ≤ 5000, so the total ends at 6000, above the target.
    pods = [pod("a", 1000, 2, 1000)]
    seq = inflate(pods, 4000, 1.25, np.random.default_rng(0))
    assert seq == [0, 0, 0]
    assert total(pods, seq) == 6000


def run(policy: str, seed: int = 3, rank: bool = True) -> PlacementTrace:
    rng = np.random.default_rng(seed)
    seq = inflate(PODS, CAPACITY, 1.3, rng)
    ranks = rng.permutation(len(NODES)) if rank else None
    return place_pods(NODES, PODS, seq, policy, trace_typical_pods(PODS), rng, ranks)


@pytest.mark.parametrize("policy", POLICIES)
def test_placement_accounts_gpu_and_respects_models(policy: str) -> None:
    rng = np.random.default_rng(3)
    seq = inflate(PODS, CAPACITY, 1.3, rng)
    out = place_pods(NODES, PODS, seq, policy, trace_typical_pods(PODS), rng, rng.permutation(3))
    placed = [k for k in range(len(seq)) if out.nodes_of[k] >= 0]
    assert out.allocated[-1] == sum(PODS[seq[k]].total_milli for k in placed) <= CAPACITY
    assert out.arrived[-1] == total(PODS, seq)
    assert out.failed == len(seq) - len(placed)
    assert np.all(np.diff(out.allocated) >= 0) and np.all(out.allocated <= out.arrived)
    pinned = [int(out.nodes_of[k]) for k in placed if PODS[seq[k]].models]
    assert pinned and set(pinned) == {2}
    assert np.all(out.frag_w >= 0)


@pytest.mark.parametrize("policy", POLICIES)
def test_placement_is_deterministic_for_a_seed(policy: str) -> None:
    a, b = run(policy), run(policy)
    assert np.array_equal(a.nodes_of, b.nodes_of) and np.array_equal(a.frag_w, b.frag_w)


def test_equal_scores_go_to_the_lowest_ranked_node() -> None:
    # Two identical empty nodes: a CPU-only pod scores the same on both under bestfit.
    nodes = [TraceNode("a", 8000, 8192, 1, "T4"), TraceNode("b", 8000, 8192, 1, "T4")]
    pods = [pod("c", 1000)]
    typ = trace_typical_pods([pod("g", 1000, 1, 500)])
    for ranks, expected in (([1, 0], 1), ([0, 1], 0)):
        out = place_pods(nodes, pods, [0], "bestfit", typ, np.random.default_rng(0), np.array(ranks))
        assert out.nodes_of.tolist() == [expected]


def test_discrete_curve_averages_pods_per_whole_percent_of_capacity() -> None:
    trace = PlacementTrace(
        arrived=np.array([100, 200, 205, 400]), allocated=np.array([100, 150, 150, 300]),
        frag_w=np.array([40, 40, 80, 20]), weight_total=2, capacity_milli=1000, failed=2,
        nodes_of=np.array([0, -1, -1, 0]))
    pts = {round(p.arrived * 100): p for p in discrete_curve(trace)}
    # 20.5 % rounds half to even (20), so pods 2 and 3 share the 20 % point.
    assert pts[20].allocated == pytest.approx(0.15) and pts[20].fragmentation == pytest.approx(0.03)
    assert pts[10].allocated == pytest.approx(0.10) and pts[10].fragmentation == pytest.approx(0.02)
    # No pod at 21 %: the neighbours within one percent stand in; none near 30 %.
    assert pts[21].allocated == pytest.approx(0.15)
    assert 30 not in pts
    assert pts[40].allocated == pytest.approx(0.30)
    assert max(pts) == 40


def test_run_experiment_gives_one_result_per_seed_and_policy() -> None:
    res = run_experiment(NODES, PODS, ["bestfit", "fgd"], [1, 2], tune=1.3, trace="tiny")
    assert [(r.seed, r.policy) for r in res] == [(1, "bestfit"), (1, "fgd"), (2, "bestfit"), (2, "fgd")]
    doc = res[0].to_json()
    assert doc["trace"] == "tiny" and doc["gpu_capacity"] == 8 and doc["pods"] == res[0].pods
    assert doc["curve"] and set(doc["curve"][0]) == {"arrived", "allocated", "fragmentation"}
    again = run_experiment(NODES, PODS, ["bestfit", "fgd"], [1, 2], tune=1.3, trace="tiny")
    assert [r.curve for r in again] == [r.curve for r in res]
