"""GPU devices: node inventories, pod demands, and the per-GPU ledger's accounting."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.gpu.devices import (
    MILLI,
    DemandKind,
    GpuDemand,
    GpuLedger,
    NodeGpus,
    format_gpu_index,
    node_gpus,
    parse_gpu_index,
    pod_demand,
)

NODES = """
apiVersion: v1
kind: Node
metadata:
  name: a
  labels: {nvidia.com/gpu.product: T4, nvidia.com/gpu.memory: "15109"}
  annotations: {volcano.sh/gpu-unhealthy-ids: "1,x"}
status:
  allocatable: {cpu: "8", memory: 16Gi, nvidia.com/gpu: "4"}
  capacity: {cpu: "8", memory: 16Gi, nvidia.com/gpu: "4"}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status:
  allocatable: {cpu: "8", memory: 16Gi, volcano.sh/gpu-number: "2", volcano.sh/gpu-memory: "32000"}
  capacity: {cpu: "8", memory: 16Gi, volcano.sh/gpu-number: "2", volcano.sh/gpu-memory: "32000"}
---
apiVersion: v1
kind: Node
metadata: {name: c}
status:
  allocatable: {cpu: "8", memory: 16Gi}
  capacity: {cpu: "8", memory: 16Gi}
"""


def pod_yaml(annotations: dict[str, str] | None = None, requests: dict[str, str] | None = None,
             limits: dict[str, str] | None = None, init_limits: dict[str, str] | None = None) -> str:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {
        "requests": requests or {"cpu": "1"}, "limits": limits or {}}}]}
    if init_limits:
        spec["initContainers"] = [{"name": "init", "resources": {"limits": init_limits}}]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "p", "namespace": "ns", "annotations": annotations or {}},
                           "spec": spec})


def demand(**kwargs: dict[str, str] | None) -> GpuDemand:
    objs = load_manifest_text(pod_yaml(**kwargs), "pod.yaml")  # type: ignore[arg-type]
    return pod_demand(objs.pods[0])


def test_node_inventory_reads_count_model_memory_and_drops_unhealthy_gpus() -> None:
    a, b, c = load_manifest_text(NODES, "nodes.yaml").nodes
    assert node_gpus(a) == NodeGpus(4, "T4", 15109, frozenset({1}))
    assert node_gpus(a).healthy == (0, 2, 3)
    assert node_gpus(b) == NodeGpus(2, "", 16000, frozenset())
    assert node_gpus(c) == NodeGpus()


def test_whole_gpu_request_wins_over_the_share_annotation() -> None:
    d = demand(requests={"cpu": "1", "nvidia.com/gpu": "2"}, annotations={"pyvolcano.io/gpu-milli": "300"})
    assert d == GpuDemand(DemandKind.WHOLE, 2, MILLI)
    assert d.exclusive and d.total_milli == 2000 and d.tag == 3


def test_gpu_number_and_memory_come_from_limits_with_the_init_container_rule() -> None:
    assert demand(limits={"volcano.sh/gpu-number": "1"}, init_limits={"volcano.sh/gpu-number": "3"}) == GpuDemand(
        DemandKind.NUMBER, 3, MILLI)
    d = demand(limits={"volcano.sh/gpu-memory": "4000"})
    assert d.kind is DemandKind.MEMORY and d.memory == 4000 and d.count == 1 and d.shared


def test_milli_annotation_is_a_share_and_1000_is_a_whole_gpu() -> None:
    assert demand(annotations={"pyvolcano.io/gpu-milli": "460"}) == GpuDemand(DemandKind.SHARE, 1, 460)
    assert demand(annotations={"pyvolcano.io/gpu-milli": "1000"}) == GpuDemand(DemandKind.WHOLE, 1, MILLI)


@pytest.mark.parametrize("bad", ["0", "1001", "half", "-5"])
def test_invalid_milli_annotation_is_reported_not_guessed(bad: str) -> None:
    d = demand(annotations={"pyvolcano.io/gpu-milli": bad})
    assert d.kind is DemandKind.INVALID
    assert "pyvolcano.io/gpu-milli" in d.error and repr(bad) in d.error


def test_model_annotation_is_a_sorted_set() -> None:
    d = demand(annotations={"pyvolcano.io/gpu-milli": "300", "pyvolcano.io/gpu-models": "V100M32| V100M16|V100M32"})
    assert d.models == ("V100M16", "V100M32")


def test_pods_without_gpu_demand_are_none() -> None:
    assert not demand().is_gpu


def test_gpu_index_round_trip() -> None:
    assert parse_gpu_index("0,3") == (0, 3)
    assert parse_gpu_index("0-3") is None
    assert format_gpu_index((2, 5)) == "2,5"


def ledger(*counts: int, models: tuple[str, ...] | None = None) -> GpuLedger:
    names = models or ("",) * len(counts)
    return GpuLedger([NodeGpus(c, m) for c, m in zip(counts, names)])


def test_share_pods_pack_on_one_gpu_until_it_is_full() -> None:
    led = ledger(2)
    share = GpuDemand(DemandKind.SHARE, 1, 400)
    led.assign("a", 0, (0,), share)
    led.assign("b", 0, (0,), share)
    assert led.free[0].tolist() == [200, 1000]
    assert led.best_fit_choice(GpuDemand(DemandKind.SHARE, 1, 200), 0) == (0,)
    assert led.best_fit_choice(share, 0) == (1,)
    assert not led.fits_on(share, 0, (0,))
    assert led.full[0] == 1 and led.max_free[0] == 1000 and led.total_free[0] == 1200


def test_whole_gpu_pods_take_only_gpus_nobody_uses() -> None:
    led = ledger(4)
    led.assign("s", 0, (1,), GpuDemand(DemandKind.SHARE, 1, 100))
    whole = GpuDemand(DemandKind.WHOLE, 3, MILLI)
    assert led.exclusive_choice(0, 3) == (0, 2, 3)
    assert led.fit_mask(whole, np.array([0])).tolist() == [True]
    led.assign("w", 0, (0, 2, 3), whole)
    assert led.free[0].tolist() == [0, 900, 0, 0]
    assert led.fit_mask(GpuDemand(DemandKind.WHOLE, 1, MILLI), np.array([0])).tolist() == [False]
    assert led.exclusive_choice(0, 1) is None


def test_model_constraint_filters_nodes() -> None:
    led = ledger(1, 1, 1, models=("T4", "V100M32", ""))
    d = GpuDemand(DemandKind.SHARE, 1, 100, models=("V100M16", "V100M32"))
    assert led.fit_mask(d, np.arange(3)).tolist() == [False, True, False]
    assert led.fit_mask(GpuDemand(DemandKind.SHARE, 1, 100), np.arange(3)).tolist() == [True, True, True]


def test_memory_shares_use_card_memory_and_count_in_milli() -> None:
    led = GpuLedger([NodeGpus(2, "", 16000)])
    mem = GpuDemand(DemandKind.MEMORY, 1, 0, 6000)
    assert led.default_choice(mem, 0) == (0,)
    led.assign("m1", 0, (0,), mem)
    led.assign("m2", 0, (0,), mem)
    assert led.mem_used[0, 0] == 12000
    assert led.free[0, 0] == 1000 - 2 * 375
    assert led.default_choice(mem, 0) == (1,)
    led.assign("s", 0, (1,), GpuDemand(DemandKind.SHARE, 1, 700))
    assert led.mem_used[0, 1] == 11200
    assert led.fit_mask(mem, np.array([0])).tolist() == [False]


def test_release_restores_the_ledger() -> None:
    led = ledger(2)
    before = (led.free.copy(), led.full.copy(), led.tags.copy())
    led.assign("a", 0, (0, 1), GpuDemand(DemandKind.WHOLE, 2, MILLI))
    assert led.tags[0, 3] == 1
    led.release("a")
    assert np.array_equal(led.free, before[0]) and np.array_equal(led.full, before[1])
    assert np.array_equal(led.tags, before[2])
    assert led.release("a") is None


shares = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 1, 2, 4]), st.integers(1, 1000)), max_size=60)


@given(shares)
@settings(max_examples=60, deadline=None)
def test_a_gpu_is_never_allocated_over_1000_milli(ops: list[tuple[int, int, int]]) -> None:
    led = ledger(2, 4, 8)
    for k, (node, count, milli) in enumerate(ops):
        d = GpuDemand(DemandKind.SHARE, 1, milli) if count == 0 else GpuDemand(DemandKind.WHOLE, count, MILLI)
        if not led.fit_mask(d, np.array([node]))[0]:
            assert led.default_choice(d, node) is None
            continue
        gpus = led.default_choice(d, node)
        assert gpus is not None and led.fits_on(d, node, gpus)
        led.assign(str(k), node, gpus, d)
        assert (led.used <= MILLI).all()
        assert (led.free >= 0).all()
        if d.exclusive:
            assert all(led.holders[node, g] == 1 and led.used[node, g] == MILLI for g in gpus)
    assert led.allocated_milli == int(led.used[led.present].sum())


def test_gpu_milli_annotation_of_unicode_digits_is_invalid() -> None:
    got = demand(annotations={"pyvolcano.io/gpu-milli": "\u0665\u0660\u0660"})
    assert got.kind is DemandKind.INVALID
