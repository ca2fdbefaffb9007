"""``pyvolcano simulate`` and ``validate`` from the command line: contract and bad input."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "simulate"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False)


def test_example_jobs_run_to_completed_and_the_bad_one_is_rejected() -> None:
    proc = run("simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {k: v["phase"] for k, v in out["jobs"].items()} == {
        "default/frame-render": "Completed", "default/stencil-mpi": "Completed", "default/resnet-ddp": "Completed",
        "default/ranker-tf": "Completed", "default/nightly-etl": "Completed",
    }
    assert out["jobs"]["default/nightly-etl"]["retryCount"] == 1
    assert [r["name"] for r in out["rejected"]] == ["default/twin-tasks"]
    assert {"summary", "queues", "stats", "podgroups"} <= set(out)


def test_workload_without_cluster_is_a_usage_error() -> None:
    proc = run("simulate", "--workload", str(EX / "jobs.yaml"))
    assert proc.returncode == 2
    assert "--cluster" in proc.stderr


def test_malformed_workload_names_file_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: j\n"
                   "  annotations: {pyvolcano.io/submit-at: soon}\n")
    proc = run("simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(bad))
    assert proc.returncode == 2
    assert "w.yaml: document 0 (Job): metadata.annotations.pyvolcano.io/submit-at" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_validate_reports_each_object_and_exits_2_on_a_bad_one() -> None:
    proc = run("validate", str(EX / "jobs.yaml"))
    assert proc.returncode == 2
    assert "OK Job default/frame-render" in proc.stdout
    assert "duplicated task name 'shard'" in proc.stdout + proc.stderr
