"""Where cells run: local processes by default, a Ray cluster with --ray (optional, imported lazily)."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyvolcano.simulator.sweep.executors import ExecutorError, import_ray, run_local
from pyvolcano.simulator.sweep.grid import SweepSpec

ROOT = Path(__file__).resolve().parents[3]
EX = ROOT / "examples" / "simulate"
HAS_RAY = importlib.util.find_spec("ray") is not None


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False,
                          env=env)


def test_local_workers_return_outcomes_in_cell_order_and_report_each_as_it_finishes() -> None:
    spec = SweepSpec(clusters=[EX / "cluster.yaml", EX / "jobs.yaml"], workloads=[EX / "jobs.yaml"],
                     default_duration="10m")
    seen: list[int] = []
    outcomes = run_local(spec.cells(), workers=2, on_done=lambda o: seen.append(o.index))
    assert sorted(seen) == [0, 1]
    assert [o.index for o in outcomes] == [0, 1]
    assert outcomes[0].ok and outcomes[0].document is not None
    assert not outcomes[1].ok and "no Node objects" in (outcomes[1].error or "")


def test_without_ray_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ExecutorError, match=r"pip install 'pyvolcano\[ray\]'"):
        import_ray()


def test_sweep_with_ray_but_without_ray_installed_exits_2_before_any_cell(tmp_path: Path) -> None:
    fake = tmp_path / "ray"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = run("sweep", "--ray", "local", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"),
               env=env)
    assert proc.returncode == 2
    assert "error: --ray needs the ray package" in proc.stderr
    assert "pip install 'pyvolcano[ray]'" in proc.stderr
    assert "sweep:" not in proc.stderr


@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (pip install 'pyvolcano[ray]')")
def test_a_local_ray_cluster_runs_a_2x2_grid_with_the_results_of_simulate_alone() -> None:
    proc = run("sweep", "--ray", "local", "-j", "2", "--cluster", str(EX / "cluster.yaml"), "--workload",
               str(EX / "jobs.yaml"), "--config", "default", "--config", str(ROOT / "examples" / "binpack.conf"),
               "--seed", "0-1", "--default-duration", "10m", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert "on Ray cluster local" in proc.stderr
    cells = json.loads(proc.stdout)["cells"]
    assert [(c["config"], c["seed"], c["status"]) for c in cells] == [
        ("default", 0, "ok"), ("default", 1, "ok"), ("binpack.conf", 0, "ok"), ("binpack.conf", 1, "ok")]
    for cell in cells:
        alone = run("simulate", *cell["simulate"], "-o", "json")
        assert json.dumps(cell["result"]) + "\n" == alone.stdout


KILLER = '''
import functools, os
import pyvolcano.simulator.sweep.cell as cell_module

_run_cell = cell_module.run_cell


@functools.wraps(_run_cell)
def run_cell(cell, report=False):
    if cell.seed == 1:
        os._exit(3)  # the worker dies as if killed
    return _run_cell(cell, report)


cell_module.run_cell = run_cell
'''


def test_a_cell_whose_worker_dies_fails_alone_and_the_cells_beside_it_run_again(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = run("sweep", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"), "--seed", "0-2",
               "--default-duration", "10m", "-j", "2", "-o", "json", env=env)
    assert proc.returncode == 1
    cells = json.loads(proc.stdout)["cells"]
    assert [(c["seed"], c["status"]) for c in cells] == [(0, "ok"), (1, "failed"), (2, "ok")]
    assert "the worker process died while running this cell" in cells[1]["error"]
    assert proc.stderr.count("): ok in ") == 2
