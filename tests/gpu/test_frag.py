"""Fragmentation measure and typical pods, on hand-computed nodes.

Target workload used below (W = 4):
  A: 4 CPUs, 500 milli of one GPU, weight 1
  B: 8 CPUs, one whole GPU,         weight 1
  C: 2 CPUs, no GPU,                weight 2
"""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.gpu.frag import PodSpec, TypicalPods, node_terms, typical_pods

A = PodSpec(4000, 500, 1)
B = PodSpec(8000, 1000, 1)
C = PodSpec(2000, 0, 0)
TYP = TypicalPods((A, B, C), (1, 1, 2))


def frag_milli(free: list[int], cpu: int, typ: TypicalPods = TYP, model: str = "", gpus: int = 2) -> float:
    free_arr = np.zeros((1, max(gpus, len(free))), dtype=np.int64)
    free_arr[0, : len(free)] = free
    models = [model]
    terms = node_terms(typ, typ.accessible(models), free_arr, np.array([cpu]), np.array([0]))
    return float(terms.frag[0]) / typ.total


def test_node_where_every_typical_pod_fits_counts_only_too_small_gpus() -> None:
    # A: Q3, fragment = the 300 GPU; B: Q3, fragment = 300; C: CPU pod, all 1300 idle.
    assert frag_milli([1000, 300], 10000) == (300 + 300 + 2 * 1300) / 4 == 800


def test_gpus_too_small_for_every_gpu_pod_are_all_fragment() -> None:
    assert frag_milli([400, 400], 10000) == 800


def test_lack_of_cpu_makes_all_idle_gpu_fragment() -> None:
    assert frag_milli([1000, 1000], 3000) == 2000


def test_full_node_has_no_fragment() -> None:
    assert frag_milli([0, 0], 10000) == 0


def test_wrong_model_makes_all_idle_gpu_fragment_for_that_pod() -> None:
    pinned = TypicalPods((PodSpec(1000, 500, 1, ("V100M32",)),), (1,))
    assert frag_milli([1000, 300], 10000, pinned, model="T4") == 1300
    assert frag_milli([1000, 300], 10000, pinned, model="V100M32") == 300


def test_multi_gpu_typical_pod_needs_enough_gpus_with_room() -> None:
    two = TypicalPods((PodSpec(1000, 1000, 2),), (1,))
    assert frag_milli([1000, 1000, 600], 10000, two, gpus=3) == 600
    assert frag_milli([1000, 600, 600], 10000, two, gpus=3) == 2200


def test_typical_pods_take_the_most_popular_specs_up_to_the_threshold() -> None:
    specs = [A] * 50 + [B] * 30 + [C] * 15 + [PodSpec(1, 1, 1)] * 5
    typ = typical_pods(specs, threshold=95)
    assert typ.specs == (A, B, C) and typ.weights == (50, 30, 15)
    assert [round(p, 4) for _s, p in typ.probabilities()] == [round(50 / 95, 4), round(30 / 95, 4), round(15 / 95, 4)]
    assert typical_pods(specs, threshold=96).specs == (A, B, C, PodSpec(1, 1, 1))


def test_typical_pods_break_count_ties_by_the_larger_spec() -> None:
    typ = typical_pods([A, B, C, C], threshold=100)
    assert typ.specs == (C, B, A)


def test_cpu_pods_can_be_left_out_of_the_target_workload() -> None:
    typ = typical_pods([A, C, C, C], threshold=100, include_cpu=False)
    assert typ.specs == (A,)


def test_empty_workload_is_an_error() -> None:
    with pytest.raises(ValueError, match="no pods"):
        typical_pods([])
