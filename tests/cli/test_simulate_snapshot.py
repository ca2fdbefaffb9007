"""``pyvolcano simulate --cluster SNAPSHOT``: a snapshot's state run forward from its instant."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from builders import node, queue
from pyvolcano.conf import default_configuration
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.forecast.eta import estimate_starts
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.snapshot import snapshot_documents
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.state import newest_timestamp
from pyvolcano.simulator.workload import Submission


def _vcjob(name: str, replicas: int, cpu: str, duration: str) -> dict[str, Any]:
    template = {"metadata": {"annotations": {"pyvolcano.io/duration": duration}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "q",
                     "tasks": [{"name": "w", "replicas": replicas, "template": template}]}}


def _snapshot(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A cluster 40 s into its life: job a (100 s) running, job b (2 × 1.5 CPU) waiting for it."""
    sim = Simulation(config=default_configuration(), registry=default_registry())
    sim.submit([Submission(at=0.0, document=i, source="s", obj=d)
                for i, d in enumerate([queue("q"), node("n1"), _vcjob("a", 1, "3", "100s")])])
    sim.submit([Submission(at=30.0, document=0, source="later", obj=_vcjob("b", 2, "1500m", "50s"))])
    sim.run(until=40.0)
    docs = snapshot_documents(lambda kind: sim.store.list(kind), DEFAULT_SCHEDULER_CONF)
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path, docs


def _simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", *args], capture_output=True, text=True,
                          check=False)


def test_simulate_runs_a_snapshot_forward_from_its_instant(tmp_path: Path) -> None:
    path, docs = _snapshot(tmp_path)
    proc = _simulate("--cluster", str(path), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    # time 0 is the snapshot's instant (its newest timestamp): a's pod started at 1 s and runs
    # 100 s; b's controller creates b's pods once its PodGroup is admitted
    now = newest_timestamp(docs)
    assert 30.0 <= now <= 40.0
    assert jobs["ns/a"]["started"] == 0.0 and jobs["ns/a"]["finished"] == 101.0 - now
    assert jobs["ns/b"]["phase"] == "Completed" and jobs["ns/b"]["pods"]["succeeded"] == 2
    # the same start queue top / the ETA give for the same state
    [group] = [d for d in docs if d["kind"] == "PodGroup" and d["metadata"]["name"].startswith("b-")]
    key = f"ns/{group['metadata']['name']}"
    est, _fc = estimate_starts([d for d in docs if d["kind"] != "ConfigMap"], [key], default_configuration(),
                               default_registry(), now=now, policy=RuntimePolicy())
    assert est[key].start is not None and jobs["ns/b"]["started"] == est[key].start - now


def test_a_workload_added_to_a_snapshot_is_submitted_relative_to_its_instant(tmp_path: Path) -> None:
    path, _docs = _snapshot(tmp_path)
    extra = _vcjob("c", 1, "1", "10s")
    extra["metadata"]["annotations"] = {"pyvolcano.io/submit-at": "5s"}
    work = tmp_path / "more.yaml"
    work.write_text(yaml.safe_dump(extra))
    proc = _simulate("--cluster", str(path), "--workload", str(work), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    assert jobs["ns/c"]["submitted"] == 5.0 and jobs["ns/c"]["phase"] == "Completed"


def test_a_cluster_file_without_workload_objects_still_needs_a_workload(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([queue("q"), node("n1")]))
    proc = _simulate("--cluster", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --cluster needs --workload")
