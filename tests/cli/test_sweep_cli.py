"""``pyvolcano sweep`` from the command line: each cell is simulate's run, failures are kept apart."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "simulate"
BINPACK = ROOT / "examples" / "binpack.conf"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False)


def _trace(tmp_path: Path) -> tuple[Path, Path]:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available,name\n"
                    "0,60,default,2,1,1Gi,1,,,a\n5,30,default,1,2,1Gi,2,,,b\n9,90,default,3,1,1Gi,1,,,c\n")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},32000,65536,2,T4\n" for i in range(3)))
    return jobs, nodes


def test_every_cell_prints_the_bytes_simulate_prints_for_the_same_options(tmp_path: Path) -> None:
    report = tmp_path / "report"
    proc = run("sweep", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"),
               "--config", "default", "--config", str(BINPACK), "--seed", "0-1", "--default-duration", "10m",
               "--workers", "2", "--report", str(report), "--csv", str(tmp_path / "cells.csv"), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [(c["cell"], c["config"], c["seed"], c["status"]) for c in out["cells"]] == [
        ("001", "default", 0, "ok"), ("002", "default", 1, "ok"), ("003", "binpack.conf", 0, "ok"),
        ("004", "binpack.conf", 1, "ok")]
    for cell in out["cells"]:
        alone = run("simulate", *cell["simulate"], "-o", "json")
        assert alone.returncode == 0, alone.stderr
        assert (report / "cells" / cell["cell"] / "result.json").read_text() == alone.stdout
        assert json.dumps(cell["result"]) + "\n" == alone.stdout
    assert "cell 004 (binpack.conf · seed 1 · jobs.yaml · cluster.yaml): ok" in proc.stderr
    rows = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert [(r["cell"], r["status"], r["jobs"]) for r in rows] == [(f"00{i}", "ok", "5") for i in range(1, 5)]
    page = (report / "report.html").read_text()
    for cell in ("001", "004"):
        assert f'src="cells/{cell}/allocation.png"' in page
        assert (report / "cells" / cell / "allocation.png").stat().st_size > 0
    assert (report / "sweep.csv").exists() and (report / "groups.csv").exists()
    assert [g["runs"] for g in out["groups"]] == [2, 2]


def test_a_trace_cell_on_each_machine_list_is_simulate_with_that_nodes_file(tmp_path: Path) -> None:
    trace, nodes = _trace(tmp_path)
    small = tmp_path / "small.csv"
    small.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n")
    proc = run("sweep", "--trace", str(trace), "--trace-format", "csv", "--nodes", str(nodes), "--nodes", str(small),
               "-j", "1", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)["cells"]
    assert [c["cluster"] for c in cells] == ["nodes.csv", "small.csv"]
    for cell in cells:
        alone = run("simulate", *cell["simulate"], "-o", "json")
        assert json.dumps(cell["result"]) + "\n" == alone.stdout
    assert cells[0]["result"]["summary"]["mean_wait_s"] < cells[1]["result"]["summary"]["mean_wait_s"]


def test_a_failed_cell_is_named_with_its_error_and_the_others_are_kept(tmp_path: Path) -> None:
    empty = tmp_path / "empty-cluster.yaml"
    empty.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 1}\n")
    proc = run("sweep", "--cluster", str(EX / "cluster.yaml"), "--cluster", str(empty), "--workload",
               str(EX / "jobs.yaml"), "--default-duration", "10m", "-j", "2", "-o", "json")
    assert proc.returncode == 1
    cells = json.loads(proc.stdout)["cells"]
    assert [c["status"] for c in cells] == ["ok", "failed"]
    assert cells[0]["result"]["summary"]["completed"] == 5
    assert "no Node objects" in cells[1]["error"]
    assert "cell 002 (default · seed 0 · jobs.yaml · empty-cluster.yaml): FAILED:" in proc.stderr
    assert "error: 1 of 2 cell(s) failed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_table_lists_every_cell_and_the_means_over_seeds(tmp_path: Path) -> None:
    proc = run("sweep", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"),
               "--seed", "3", "--seed", "4", "--default-duration", "10m", "-j", "2", "-o", "table")
    assert proc.returncode == 0, proc.stderr
    assert "Sweep: one row per cell" in proc.stdout
    assert "Means over seeds" in proc.stdout
    assert proc.stdout.count("jobs.yaml") == 3


@pytest.mark.parametrize(("text", "expected"), [
    ("seeds: [1]\nworkloads: [x.yaml]\n", "sweep.yaml: workloads[0]: "),
    ("configs: [missing.conf]\n", "sweep.yaml: configs[0]: "),
    ("seeds: 'one'\n", "sweep.yaml: seeds[0]: got 'one'; expected a seed such as 42"),
])
def test_a_bad_sweep_file_exits_2_before_anything_runs(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    proc = run("sweep", str(path))
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "sweep:" not in proc.stderr  # no cell started
    assert "Traceback" not in proc.stderr


def test_a_bad_configuration_exits_2_naming_its_file(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("actions: \"enqueue, nosuchaction\"\n")
    proc = run("sweep", "--config", str(conf), "--cluster", str(EX / "cluster.yaml"), "--workload",
               str(EX / "jobs.yaml"))
    assert proc.returncode == 2
    assert "bad.conf" in proc.stderr
    assert "nosuchaction" in proc.stderr
