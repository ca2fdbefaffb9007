"""A simulation run as a dashboard source: ``simulate --report DIR`` writes ``run.json``, and
the views rebuilt from it at a time t agree with what the run printed; bad ``--report`` and
``--cluster`` arguments are one-line errors with exit status 2."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pyvolcano.cli.app import app
from pyvolcano.dashboard.run_views import ReportSource
from pyvolcano.dashboard.server import create_app

GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def run(example_run: tuple[Path, dict]) -> tuple[Path, dict]:
    return example_run


def test_the_report_directory_holds_the_run_data(run: tuple[Path, dict]) -> None:
    out, doc = run
    data = json.loads((out / "run.json").read_text())
    assert data["version"] == 1 and data["end"] == doc["stats"]["virtual_seconds"]
    starts = dict(zip(data["jobs"]["key"], data["jobs"]["start"], strict=True))
    assert starts == {k: j["started"] for k, j in doc["jobs"].items()}
    assert set(data["pods"]["job"]) == set(doc["jobs"])
    assert len(data["samples"]["t"]) == len(data["samples"]["gpu_allocated"]) > 0


def test_jobs_at_time_t_are_pending_running_or_done_as_the_run_says(run: tuple[Path, dict]) -> None:
    out, doc = run
    source = ReportSource(out)
    for t in (0.5, 100.0, 400.0, source.end):
        rows = {r["key"]: r for r in source.views(t).jobs()["jobs"]}
        for key, job in doc["jobs"].items():
            if job["submitted"] > t:
                assert key not in rows
            elif job["started"] > t:
                assert rows[key]["phase"] == "Pending" and rows[key]["start_in_seconds"] == job["started"] - t
            elif job["finished"] > t:
                assert rows[key]["phase"] == "Running"
            else:
                assert rows[key]["phase"] == job["phase"]


def test_nodes_at_time_t_hold_the_gpus_of_the_pods_on_them(run: tuple[Path, dict]) -> None:
    out, _doc = run
    views = ReportSource(out).views(100.0)  # pytorch-job: one GPU on gpu-1, two on gpu-2
    nodes = {n["name"]: n for n in views.nodes()["nodes"]}
    assert (nodes["gpu-1"]["gpu_allocated"], nodes["gpu-2"]["gpu_allocated"]) == (1, 2)
    assert [g["used"] for g in nodes["gpu-2"]["gpus"]] == [1000, 1000, 0, 0]
    page = views.job("default/pytorch-job")
    assert page is not None and sorted(page["nodes"]) == ["gpu-1", "gpu-2"]
    queues = {q["name"]: q for q in views.queues()["queues"]}
    gpu = next(r for r in queues["default"]["resources"] if r["name"] == GPU)
    assert gpu["allocated"] == 3 and queues["default"]["running"] >= 1
    assert ReportSource(out).views(700.0).nodes()["fragmentation"]["gpu_allocated"] == 0


def test_the_timeline_endpoint_serves_the_runs_series(run: tuple[Path, dict]) -> None:
    out, _doc = run
    client = TestClient(create_app(ReportSource(out)), base_url="http://localhost")
    meta = client.get("/api/meta").json()
    assert meta["kind"] == "report" and meta["start"] == 0 and meta["end"] > 600
    series = client.get("/api/timeline").json()
    assert len(series["t"]) == len(series["pending_jobs"]) == len(series["queue_share"]["default"])
    early = client.get("/api/jobs", params={"t": 50}).json()
    assert {j["key"] for j in early["jobs"]} == {"default/test-job", "default/lm-mpi-job"}


def _error(*args: str) -> str:
    result = CliRunner().invoke(app, ["dashboard", *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_bad_sources_are_one_line_errors(tmp_path: Path) -> None:
    assert "no such directory" in _error("--report", str(tmp_path / "none"))
    assert "no run.json" in _error("--report", str(tmp_path))
    (tmp_path / "run.json").write_text("{")
    assert "not readable as JSON" in _error("--report", str(tmp_path))
    assert "no such file" in _error("--cluster", str(tmp_path / "none.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 1x}}\n")
    assert "bad.yaml" in _error("--cluster", str(bad))
    assert "give one source" in _error("--cluster", str(bad), "--report", str(tmp_path))


def test_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    from dashboard_cluster import write

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _error("--cluster", str(write(tmp_path / "c.yaml")), "--port", str(port))
    assert line.startswith(f"error: --listen-address/--port 127.0.0.1:{port}: ")
