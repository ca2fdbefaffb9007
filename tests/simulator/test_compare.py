"""``pyvolcano simulate --compare``: the same workload under two configurations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyvolcano.cli.simulate import run_simulate_command

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: a, labels: {kubernetes.io/hostname: a}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}, capacity: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {kubernetes.io/hostname: b}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}, capacity: {cpu: "4", memory: 16Gi, pods: "110"}}
"""


def _job(name: str, cpu: str, duration: str, at: str) -> str:
    return f"""
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{pyvolcano.io/submit-at: {at}}}}}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata: {{annotations: {{pyvolcano.io/duration: {duration}}}}}
      spec:
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


def test_binpack_lets_a_big_job_start_where_spreading_makes_it_wait(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Two small long-running pods, then a pod that needs a whole node. Spreading (upstream's
    # default nodeorder) puts one small pod on each node, so the big pod waits for them;
    # binpack puts both on one node and the big pod starts at once.
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "work.yaml").write_text(
        _job("small-1", "1", "1000s", "0s") + _job("small-2", "1", "1000s", "2s") + _job("big", "4", "10s", "10s")
    )
    code = run_simulate_command(
        cluster=tmp_path / "cluster.yaml", workload=tmp_path / "work.yaml", trace=None, trace_format=None,
        nodes=None, config=None, compare=ROOT / "examples" / "binpack.conf", until=None, seed=0,
        report=tmp_path / "report", output="json",
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    spread, packed = out["a"]["summary"], out["b"]["summary"]
    assert spread["max_wait_s"] > 900
    assert packed["max_wait_s"] <= 2
    assert out["diff"]["mean_wait_s"]["delta"] < 0
    assert (tmp_path / "report" / "report.html").exists()
