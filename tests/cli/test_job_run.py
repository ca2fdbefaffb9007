"""``pyvolcano job run --dry-run``: offline on a snapshot file, every output format and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "forecast"
CASE = str(DATA / "queue-top.yaml")
JOB = str(DATA / "job-big.yaml")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", "job", "run", *args], capture_output=True, text=True,
                          check=False)


def test_dry_run_table_says_admission_placement_reason_and_start() -> None:
    proc = run("--dry-run", "-f", JOB, "--cluster", CASE, "--default-runtime", "1m", "-o", "table")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "JOB        ns/big  (Job, dry run at 2024-01-01T00:15:00Z)"
    assert lines[1:3] == ["ADMISSION  allowed", "PLACED     no"]
    assert lines[3].startswith("START      2024-01-01T00:")
    assert lines[4] == "REASON     Queue.OverDeserved"
    assert lines[-1] == "EVICTS     nothing"


def test_dry_run_json_and_yaml_carry_the_same_document() -> None:
    args = ("--dry-run", "-f", JOB, "--cluster", CASE, "--default-runtime", "1m")
    as_json = json.loads(run(*args, "-o", "json").stdout)
    assert as_json == yaml.safe_load(run(*args, "-o", "yaml").stdout)
    assert as_json["admission"] == {"allowed": True, "errors": []}
    assert as_json["placed_now"] is False and as_json["start_in_seconds"] > 0
    assert as_json["diagnosis"]["reason"] == "Queue.OverDeserved"


def test_dry_run_refused_by_admission_exits_1_with_the_webhook_message() -> None:
    proc = run("--dry-run", "-f", str(DATA / "job-no-queue.yaml"), "--cluster", CASE, "-o", "table")
    assert proc.returncode == 1
    assert 'ADMISSION  refused: Job ns/lost: spec.queue: unable to find job queue' in proc.stdout


def test_job_run_refuses_bad_input_with_one_line_and_exit_2() -> None:
    for args, text in [
        (["-f", JOB, "--cluster", CASE], "only answers --dry-run"),
        (["--dry-run", "-f", CASE, "--cluster", CASE],
         "queue-top.yaml: document 0: apiVersion/kind scheduling.volcano.sh/v1beta1/Queue is not a job"),
        (["--dry-run", "-f", JOB, "--cluster", CASE, "--context", "c"], "not both"),
        (["--dry-run", "-f", str(DATA / "missing.yaml"), "--cluster", CASE], "missing.yaml"),
    ]:
        proc = run(*args, "-o", "json")
        assert proc.returncode == 2, (args, proc.stderr)
        assert text in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
