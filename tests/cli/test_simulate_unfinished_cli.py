"""``pyvolcano simulate`` / ``schedule`` from the command line: jobs that never end or never start."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NEVER_START = ROOT / "tests" / "data" / "never-start"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False)


def _simulate(example: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run("simulate", "--cluster", str(NEVER_START / "cluster.yaml"), "--workload", str(NEVER_START / example),
               *extra)


def test_jobs_without_duration_are_named_once_on_stderr() -> None:
    proc = _simulate("node-selector-job.yaml", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: 1 job(s) have pods without a pyvolcano.io/duration annotation: default/selective; their pods run "
        "until nothing else can happen, and the run then stops (give --default-duration, e.g. 10m, or annotate "
        "the pod templates)"]
    out = json.loads(proc.stdout)
    assert out["stats"]["end_reason"] == "stalled"
    assert out["summary"]["end_reason"] == "stalled"


def test_default_duration_silences_the_warning_and_bad_values_exit_2() -> None:
    proc = _simulate("node-selector-job.yaml", "--default-duration", "10m", "-o", "json")
    assert proc.returncode == 0 and "warning:" not in proc.stderr
    bad = _simulate("node-selector-job.yaml", "--default-duration", "soon")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --default-duration: got 'soon'; expected a duration such as 90s, 10m, 1h30m"


def test_never_started_jobs_carry_their_reason_in_json_and_table() -> None:
    proc = _simulate("ephemeral-storage-job.yaml", "-o", "json")
    job = json.loads(proc.stdout)["jobs"]["default/storage-hungry"]
    assert job["started"] is None and "Insufficient ephemeral-storage" in job["reason"]
    table = _simulate("node-selector-job.yaml", "-o", "table")
    assert table.returncode == 0
    flat = " ".join(table.stdout.split())
    assert "Not finished" in flat
    assert "didn't match Pod's node affinity/selector" in flat


def test_schedule_table_names_the_missing_ephemeral_storage(tmp_path: Path) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(
        (NEVER_START / "cluster.yaml").read_text()
        + "\n---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: pg1, namespace: default}\nspec: {minMember: 1, queue: default}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default, "
        "annotations: {scheduling.k8s.io/group-name: pg1}}\n"
        "spec: {schedulerName: volcano, containers: [{name: c, image: busybox, "
        "resources: {requests: {cpu: '1', ephemeral-storage: 10Gi}}}]}\n")
    proc = run("schedule", str(snap), "-o", "table")
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "Insufficient ephemeral-storage: a pod requests 10Gi, the largest node has 0" in flat


def test_builtin_scenario_runs_with_its_own_configuration_and_names_the_horizon() -> None:
    proc = run("simulate", "--until", "1h", "-o", "table")
    assert proc.returncode == 0, proc.stderr
    assert "warning:" not in proc.stderr  # every trace pod has a duration
    flat = " ".join(proc.stdout.split())
    assert "config builtin.conf" in flat
    assert "job(s) still running" in flat and "the run stopped at its --until horizon" in flat
