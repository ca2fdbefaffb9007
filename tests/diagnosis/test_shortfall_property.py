"""The node-fit shortfall is sufficient: adding it to the best node makes the job schedulable."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from builders import node, pod, podgroup, queue, schedule
from pyvolcano.api.quantity import milli_value, value

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

GPU = "nvidia.com/gpu"


def with_gpus(d: dict[str, Any], gpus: int) -> dict[str, Any]:
    if gpus:
        d["spec"]["containers"][0]["resources"]["requests"][GPU] = str(gpus)
    return d


@st.composite
def clusters(draw: Any) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [queue("q")]
    for i in range(draw(st.integers(1, 4))):
        docs.append(node(f"n{i}", cpu=str(draw(st.integers(1, 8))), memory=f"{draw(st.integers(1, 8))}Gi",
                         nvidia_com__gpu=str(draw(st.integers(0, 8)))))
        for k in range(draw(st.integers(0, 2))):
            busy = with_gpus(pod(f"busy-{i}-{k}", "", node_name=f"n{i}", phase="Running",
                                 cpu=draw(st.sampled_from(["500m", "1", "2"])),
                                 memory=draw(st.sampled_from(["256Mi", "1Gi"]))), draw(st.integers(0, 3)))
            busy["metadata"]["annotations"] = {}
            docs.append(busy)
    size = draw(st.integers(1, 3))
    docs.append(podgroup("job", min_member=size))
    cpu = draw(st.sampled_from(["500m", "1", "2", "3", "5"]))
    mem = draw(st.sampled_from(["512Mi", "1Gi", "3Gi", "6Gi"]))
    gpus = draw(st.integers(0, 6))
    for k in range(size):
        docs.append(with_gpus(pod(f"job-{k}", "job", cpu=cpu, memory=mem), gpus))
    return docs


def add_to_node(docs: list[dict[str, Any]], name: str, resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(docs)
    n = next(d for d in out if d["kind"] == "Node" and d["metadata"]["name"] == name)
    alloc = n["status"]["allocatable"]
    for r in resources:
        if r["shortfall"] <= 0:
            continue
        key = r["name"]
        if key in ("memory", "pods"):
            alloc[key] = str(value(alloc.get(key, "0")) + int(r["shortfall"]))
        else:
            alloc[key] = f"{milli_value(alloc.get(key, '0')) + round(r['shortfall'] * 1000)}m"
    n["status"]["capacity"] = dict(alloc)
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(clusters())
def test_node_fit_shortfall_added_to_the_best_node_makes_the_job_schedulable(docs: list[dict[str, Any]]) -> None:
    out = schedule(*docs, conf=CONF)
    diag = out["diagnoses"].get("ns/job")
    assume(diag is not None and diag["reason"] == "NodeFit.InsufficientResource")
    assert diag is not None
    short = [r for r in diag["resources"] if r["shortfall"] > 0]
    assert short, diag
    best = {r["best_node"] for r in diag["resources"]}
    assert len(best) == 1
    fixed = schedule(*add_to_node(docs, best.pop(), diag["resources"]), conf=CONF)
    placed = [p for p in fixed["binds"] if p.startswith("ns/job-")]
    assert len(placed) == diag["tasks"]["min_available"], (diag, fixed["diagnoses"])
