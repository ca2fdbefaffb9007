"""The ``pyvolcano schedule`` contract: one JSON object on stdout, exit 2 on bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False)


def test_schedule_prints_one_json_object_on_stdout() -> None:
    proc = run("schedule", str(ROOT / "examples" / "cluster.yaml"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"binds", "evictions", "pipelined", "podgroups", "diagnoses", "stats"}
    assert out["podgroups"]["team/train-llm"] == "Inqueue"


def test_schedule_json_diagnoses_every_job_left_short() -> None:
    proc = run("schedule", str(ROOT / "examples" / "cluster.yaml"), "--sessions", "2", "-o", "json")
    out = json.loads(proc.stdout)
    diag = out["diagnoses"]["team/too-big"]
    assert diag["stage"] == "node-fit"
    assert diag["reason"] == "NodeFit.InsufficientResource"
    gpu = next(r for r in diag["resources"] if r["name"] == "nvidia.com/gpu")
    assert gpu["requested"] == 24.0 and gpu["shortfall"] > 0
    assert diag["node_failures"] == {"Insufficient nvidia.com/gpu": 12}
    assert diag["hint"].startswith("needs 8 nvidia.com/gpu on one node; the largest free block is ")
    assert "team/train-llm" not in out["diagnoses"]


def test_two_sessions_bind_admitted_gangs() -> None:
    proc = run("schedule", str(ROOT / "examples" / "cluster.yaml"), "--sessions", "2", "-o", "json")
    out = json.loads(proc.stdout)
    assert len([p for p in out["binds"] if p.startswith("team/train-llm")]) == 4
    assert out["podgroups"]["team/train-llm"] == "Running"
    assert out["podgroups"]["team/too-big"] != "Running"


def test_bad_manifest_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: lots}}\n")
    proc = run("schedule", str(bad), "-o", "json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert "document 0 (Node n): status.allocatable.cpu" in proc.stderr


def test_bad_config_exits_2(tmp_path: Path) -> None:
    conf = tmp_path / "s.conf"
    conf.write_text('actions: "allocate, teleport"\ntiers: []\n')
    proc = run("schedule", str(ROOT / "examples" / "cluster.yaml"), "--config", str(conf), "-o", "json")
    assert proc.returncode == 2
    assert "teleport" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    proc = run("schedule", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert "nope.yaml" in proc.stderr


def test_table_output_lists_decisions_and_pending_reasons() -> None:
    proc = run("schedule", str(ROOT / "examples" / "cluster.yaml"), "--sessions", "2", "-o", "table")
    assert proc.returncode == 0
    assert "team/train-llm-worker-0" in proc.stdout
    assert "NodeFit.InsufficientResource" in proc.stdout
    assert "needs 8 nvidia.com/gpu on one node" in proc.stdout


def test_schedule_in_process_leaves_nothing_frozen_and_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    import gc

    from pyvolcano.cli.schedule import run_schedule

    gc.unfreeze()
    assert run_schedule(ROOT / "examples" / "cluster.yaml", None, sessions=1, output="json", seed=0) == 0
    assert json.loads(capsys.readouterr().out)["podgroups"]["team/train-llm"] == "Inqueue"
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
