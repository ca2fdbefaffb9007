"""Where results go and how they look: deterministic JSON/YAML, untruncated colourless tables
off a terminal, notes on stderr, ``-o yaml`` and ``-o wide``."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pyvolcano.cli.app import run
from pyvolcano.cli.output import strip_timings

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "simulate"
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
SIM = ["simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml")]


def pyvolcano(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *argv], capture_output=True, check=False,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("argv", [["schedule", CLUSTER, "--sessions", "2", "-o", "json"], [*SIM, "-o", "json"],
                                  [*SIM, "-o", "yaml"]])
def test_same_command_twice_prints_the_same_bytes(argv: list[str]) -> None:
    first, second = pyvolcano(*argv), pyvolcano(*argv)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert b"wall_seconds" not in first.stdout and b"session_seconds" not in first.stdout


def test_timings_flag_adds_wall_clock_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", CLUSTER, "--sessions", "2", "-o", "json", "--timings"]) == 0
    stats = json.loads(capsys.readouterr().out)["stats"]
    assert stats["sessions"] == 2
    assert len(stats["session_seconds"]) == 2


def test_schedule_json_keeps_the_conformance_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", CLUSTER, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"binds", "evictions", "pipelined", "podgroups", "diagnoses", "stats"}
    assert out["stats"] == {"sessions": 1}


def test_strip_timings_removes_wall_clock_keys_at_any_depth() -> None:
    data = {"a": {"stats": {"sessions": 3, "wall_seconds": 1.5, "session_p99_s": 0.1}}, "runs": [{"seconds": 2}]}
    assert strip_timings(data) == {"a": {"stats": {"sessions": 3}}, "runs": [{"seconds": 2}]}
    assert strip_timings(data, frozenset({"seconds"}))["runs"] == [{}]


def test_yaml_output_is_the_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", CLUSTER, "--sessions", "2", "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert run(["schedule", CLUSTER, "--sessions", "2", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_tables_are_not_truncated_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", CLUSTER, "--sessions", "2", "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    reason = next(line for line in out.splitlines() if "team/too-big" in line and "Inqueue" in line)
    assert "NodeFit.InsufficientResource" in reason
    assert "the cluster has only 21 nvidia.com/gpu free" in reason  # the hint's end, on the same line


def test_wide_adds_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", CLUSTER, "--sessions", "2", "-o", "wide"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "PHASE" in line)
    assert header.split()[:4] == ["PODGROUP", "PHASE", "QUEUE", "MINMEMBER"]
    assert "team/train-llm-worker-0  bind      node-04  team/train-llm" in out
    assert run([*SIM, "-o", "wide"]) == 0
    jobs_header = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("JOB"))
    assert jobs_header.split()[:3] == ["JOB", "QUEUE", "PHASE"]


def test_simulate_table_prints_notes_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available,name\n"
                    "0,60,default,1,1,1Gi,0,,,a\n")
    assert run(["simulate", "--trace", str(jobs), "--trace-format", "csv", "--nodes", str(EX / "cluster.yaml"),
                "-o", "table"]) == 0
    captured = capsys.readouterr()
    assert "note: CSV: 1 of 1 jobs." in captured.err.splitlines()
    assert "note:" not in captured.out
    assert "Summary" in captured.out
    assert "\x1b[" not in captured.out


def _on_a_terminal(*argv: str, env: dict[str, str]) -> bytes:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pyvolcano", *argv], stdout=follower, stderr=subprocess.DEVNULL,
                            env={**os.environ, "COLUMNS": "200", **env})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks)


def _colours(output: bytes) -> set[str]:
    """The colour parameters (30-38, 40-48, 90-107) of the SGR escape sequences in ``output``."""
    found = set()
    for params in re.findall(rb"\x1b\[([0-9;]*)m", output):
        for p in params.decode().split(";"):
            if p and (30 <= int(p) <= 48 or 90 <= int(p) <= 107):
                found.add(p)
    return found


def test_no_color_is_honoured_on_a_terminal() -> None:
    argv = (*SIM, "--compare", str(ROOT / "examples" / "binpack.conf"), "-o", "table")
    coloured = _on_a_terminal(*argv, env={"NO_COLOR": "", "TERM": "xterm-256color"})
    plain = _on_a_terminal(*argv, env={"NO_COLOR": "1", "TERM": "xterm-256color"})
    assert b"Queue wait" in coloured and b"Queue wait" in plain
    assert _colours(coloured)
    assert not _colours(plain)


def test_validate_prints_the_admitted_objects_with_defaults(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
                   "  - replicas: 2\n    template: {spec: {containers: [{name: c, image: i}]}}\n")
    assert run(["validate", "-o", "json", str(job)]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["kind"] == "Job"
    assert obj["spec"]["queue"] == "default"
    assert obj["spec"]["minAvailable"] == 2
    assert obj["spec"]["tasks"][0]["name"] == "default0"
    assert run(["validate", "-o", "yaml", CLUSTER]) == 0
    listed = yaml.safe_load(capsys.readouterr().out)
    assert listed["kind"] == "List"
    assert len(listed["items"]) > 10


def test_validate_json_sends_errors_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-o", "json", str(EX / "jobs.yaml")]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["kind"] == "List"
    assert "duplicated task name 'shard'" in captured.err
    assert "duplicated" not in captured.out


def test_validate_wide_names_the_source_of_every_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-o", "wide", str(EX / "cluster.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines
    assert all(line.startswith(f"{EX / 'cluster.yaml'}: document ") and ": OK " in line for line in lines)


def test_a_value_with_a_line_break_stays_on_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text('apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: "1\\nx"}}\n')
    assert run(["schedule", str(bad), "-o", "json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: {bad}: document 0 (Node n): status.allocatable.cpu")
    assert "\\n" in err


def test_validate_lines_stay_one_per_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text('apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: "a\\nb"}\n')
    assert run(["validate", str(bad)]) == 2
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_progress_bar_never_shows_an_unknown_total() -> None:
    import io
    import math

    from rich.console import Console

    from pyvolcano.cli.simulate import _run_once
    from pyvolcano.conf import default_configuration
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.workload import load_workload

    cluster, _ = load_workload(EX / "cluster.yaml", cluster=True)
    work, events = load_workload(EX / "jobs.yaml")
    buf = io.StringIO()
    terminal = Console(file=buf, force_terminal=True, width=120, color_system=None)
    res, _ = _run_once(default_configuration(), default_registry(), 0, cluster, work, events, math.inf, terminal,
                       label="default", show=True)
    assert res.jobs
    shown = buf.getvalue()
    assert "default virtual" in shown
    assert "None" not in shown


def test_trace_simulation_and_experiment_print_the_same_bytes_twice(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available,name\n"
                    "0,60,default,2,1,1Gi,0,,,a\n5,30,default,1,2,1Gi,0,,,b\n")
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},32000,65536,4,T4\n" for i in range(4)))
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                    + "".join(f"p{i},2000,1024,1,{(300, 500, 1000)[i % 3]},\n" for i in range(20)))
    for argv in (["simulate", "--trace", str(jobs), "--nodes", str(EX / "cluster.yaml"), "-o", "json"],
                 ["experiment", "fgd", "--nodes", str(nodes), "--pods", str(pods), "--seed", "1-2", "-o", "json"]):
        first, second = pyvolcano(*argv), pyvolcano(*argv)
        assert first.returncode == 0, first.stderr
        assert first.stdout == second.stdout
        assert b"wall_seconds" not in first.stdout and b'"seconds"' not in first.stdout
