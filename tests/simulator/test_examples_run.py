"""Example manifests run to completion in ``simulate`` on a cluster that fits them.

Each directory's files form one workload (queues and priority classes first); the cluster is
big enough for every example (8 nodes of 96 CPUs, 768Gi, 8 GPUs, ephemeral storage, the usual
well-known labels), and pods without ``pyvolcano.io/duration`` run for ``--default-duration``.
Every Volcano Job must end Completed. Two sets: the hand-written manifests of
``tests/data/manifests/valid`` (always), and upstream Volcano's ``example/`` when
``VOLCANO_EXAMPLES_DIR`` names it (its files are not part of this repository).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

OWN = Path(__file__).resolve().parents[1] / "data" / "manifests" / "valid"
SKIPPED_DIRS = frozenset({"invalid", "invalid_jobs"})
# Upstream examples that are not Volcano Jobs for this scheduler or that never end by design.
UPSTREAM_NOT_RUN: dict[str, str] = {
    "kubecon-2019-china/task-priority/elastic-job.yaml": "rejected by strict field validation (priorityClass)",
}


WORKLOAD_KINDS = frozenset({("batch.volcano.sh/v1alpha1", "Job"), ("scheduling.volcano.sh/v1beta1", "Queue"),
                            ("scheduling.volcano.sh/v1beta1", "PodGroup"), ("scheduling.k8s.io/v1", "PriorityClass"),
                            ("v1", "Pod")})


def _cluster(path: Path) -> Path:
    docs = []
    for i in range(8):
        name = f"node-{i}"
        cap = {"cpu": "96", "memory": "768Gi", "pods": "110", "nvidia.com/gpu": "8", "ephemeral-storage": "2Ti"}
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                           "kubernetes.io/arch": "amd64"}},
                     "status": {"capacity": cap, "allocatable": cap}})
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _workload(files: list[Path], out: Path) -> Path | None:
    docs = []
    for f in files:
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8")):
            if isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) in WORKLOAD_KINDS:
                docs.append(d)
    docs.sort(key=lambda d: 0 if d["kind"] in ("Queue", "PriorityClass") else 1)
    if not any(d["kind"] == "Job" for d in docs):
        return None
    out.write_text(yaml.safe_dump_all(docs))
    return out


def _run_all(root: Path, tmp: Path, not_run: dict[str, str]) -> list[str]:
    cluster = _cluster(tmp / "cluster.yaml")
    dirs: dict[Path, list[Path]] = {}
    for p in sorted(root.rglob("*.yaml")):
        rel = p.relative_to(root).as_posix()
        if any(part in SKIPPED_DIRS for part in p.relative_to(root).parts) or rel in not_run:
            continue
        dirs.setdefault(p.parent, []).append(p)
    failures = []
    ran = 0
    for i, (d, files) in enumerate(sorted(dirs.items())):
        work = _workload(files, tmp / f"work-{i}.yaml")
        if work is None:
            continue
        ran += 1
        proc = subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", "--cluster", str(cluster), "--workload",
                               str(work), "--default-duration", "1m", "--until", "24h", "-o", "json"],
                              capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode != 0:
            failures.append(f"{d.relative_to(root)}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            continue
        out = json.loads(proc.stdout)
        for key, job in out["jobs"].items():
            if job["phase"] != "Completed":
                failures.append(f"{d.relative_to(root)}: {key} ended {job['phase']} ({job.get('reason')})")
        for r in out.get("rejected") or []:
            failures.append(f"{d.relative_to(root)}: rejected {r['kind']} {r['name']}: {r['error']}")
    assert ran, f"no Volcano Job under {root}"
    return failures


def test_own_example_jobs_run_to_completion(tmp_path: Path) -> None:
    assert _run_all(OWN, tmp_path, {}) == []


def test_upstream_example_jobs_run_to_completion(tmp_path: Path) -> None:
    examples = os.environ.get("VOLCANO_EXAMPLES_DIR")
    if not examples:
        pytest.skip("VOLCANO_EXAMPLES_DIR is not set (it names the example/ directory of an upstream Volcano checkout)")
    assert _run_all(Path(examples), tmp_path, UPSTREAM_NOT_RUN) == []
