"""GPU placement policies in an ordinary simulation, through volcano-scheduler.conf."""

from __future__ import annotations

from typing import Any

import yaml

from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.workload import Submission

FGD_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: deviceshare
  - name: fgd
"""


def _node() -> dict[str, Any]:
    res = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "g1", "labels": {"kubernetes.io/hostname": "g1", "nvidia.com/gpu.product": "T4"}},
            "status": {"capacity": res, "allocatable": res}}


def _job(name: str, milli: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "tasks": [{"name": "main", "replicas": 1, "template": {
                "metadata": {"annotations": {"pyvolcano.io/gpu-milli": str(milli), "pyvolcano.io/duration": "10m"}},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]}}


def test_fractional_gpu_pods_share_gpus_and_record_their_gpu_index() -> None:
    sim = Simulation(config=load_scheduler_conf(FGD_CONF), registry=default_registry(), seed=0)
    objs = [_node(), _job("a", 600), _job("b", 400), _job("c", 500)]
    sim.submit([Submission(float(i), i, "test", yaml.safe_load(yaml.safe_dump(o))) for i, o in enumerate(objs)])
    seen: dict[str, str] = {}

    def capture(now: float, result: Any) -> None:
        for b in result.bind_requests:
            seen[b.name] = b.annotations.get("volcano.sh/gpu-index", "")

    sim.on_session = capture
    res = sim.run(until=3600)
    assert all(r.phase == "Completed" for r in res.jobs.values()), res.jobs
    assert set(seen) == {"a-main-0", "b-main-0", "c-main-0"}
    # 600 + 400 fill one GPU exactly; the 500 share takes the other GPU.
    assert seen["a-main-0"] == seen["b-main-0"] != seen["c-main-0"]
