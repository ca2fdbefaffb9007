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
from pyvolcano.dashboard.run_views import BusiestMoment, ReportSource, busiest_moment
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
    views = ReportSource(out).views(100.0)  # resnet-ddp: one GPU on gpu-1, two on gpu-2
    nodes = {n["name"]: n for n in views.nodes()["nodes"]}
    assert (nodes["gpu-1"]["gpu_allocated"], nodes["gpu-2"]["gpu_allocated"]) == (1, 2)
    assert [g["used"] for g in nodes["gpu-2"]["gpus"]] == [1000, 1000, 0, 0]
    page = views.job("default/resnet-ddp")
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
    assert {j["key"] for j in early["jobs"]} == {"default/frame-render", "default/stencil-mpi"}


def samples(**series: list[float]) -> dict[str, list[float]]:
    return {"t": [0.0, 10.0, 20.0, 30.0], "gpu_allocated": [0.0] * 4, "cpu_allocated": [0.0] * 4,
            "running_jobs": [0.0] * 4, **series}


def test_the_busiest_moment_is_the_first_sample_with_the_most_gpus_allocated() -> None:
    got = busiest_moment(samples(gpu_allocated=[0.0, 8.0, 2.0, 8.0], cpu_allocated=[0.0, 1.0, 64.0, 1.0]), 40.0)
    assert got == BusiestMoment(10.0, "gpu_allocated", 8.0)


def test_without_gpus_the_busiest_moment_is_the_most_cores_then_the_most_running_jobs_then_the_end() -> None:
    assert busiest_moment(samples(cpu_allocated=[1.0, 3.0, 3.0, 2.0]), 40.0) == BusiestMoment(10.0, "cpu_allocated",
                                                                                                3.0)
    assert busiest_moment(samples(running_jobs=[0, 0, 2, 1]), 40.0) == BusiestMoment(20.0, "running_jobs", 2.0)
    assert busiest_moment(samples(), 40.0) == BusiestMoment(40.0, "end", 0.0)
    assert busiest_moment({"t": []}, 0.0) == BusiestMoment(0.0, "end", 0.0)


def test_the_meta_of_a_run_names_its_busiest_moment_not_its_empty_end(run: tuple[Path, dict]) -> None:
    out, _doc = run
    data = json.loads((out / "run.json").read_text())
    gpus = data["samples"]["gpu_allocated"]
    first_max = data["samples"]["t"][gpus.index(max(gpus))]
    meta = TestClient(create_app(ReportSource(out)), base_url="http://localhost").get("/api/meta").json()
    assert meta["busiest"] == {"t": first_max, "measure": "gpu_allocated", "value": max(gpus)}
    assert 0 < meta["busiest"]["t"] < meta["end"] and gpus[-1] < max(gpus)


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
