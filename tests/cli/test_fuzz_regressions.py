"""The fuzzer's crash and hang inputs (``tests/data/fuzz``), run as a user runs them.

Each folder's ``cmd.json`` holds the command line that once raised a traceback or never
returned; now it must exit 2 within a bounded time with one ``error:`` line naming the input
(``validate`` prints its per-object lines on stdout instead), never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "fuzz"
CASES = sorted(p.name for p in DATA.iterdir() if p.is_dir())
TIMEOUT = 120.0  # generous for a loaded machine; each case takes a few seconds

# Valid workloads that run for hours of virtual time: bounded with --until, they must succeed.
LONG_RUNS = {"007-HANG_pyvolcano_gpu_devices.py__container_total", "025-HANG_pyvolcano_gpu_devices.py_genexpr"}
# A bad object in a workload is rejected at submission and the run goes on.
WORKLOAD_REJECTIONS = {"014-OverflowError_pyvolcano_api_resource.py_97",
                       "022-OverflowError_pyvolcano_api_resource.py_105"}
# Command-line values rather than files are at fault: the message names the parameter.
# Refused where the flag enters, naming the flag (cli/options.py), before any file is read.
PARAMETER_ERRORS = {"012-ValueError_numpy_random_bit_generator.pyx_69": "Invalid value for '--seed'",
                    "015-HANG_pyvolcano_controllers__common.py_next_wakeup": "Invalid value for '--schedule-period'",
                    "018-HANG_pyvolcano_cli_simulate.py__fmt_secs": "Invalid value for '--schedule-period'"}


def _run(folder: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    # Run from the case's folder, as recorded, with this tree's package first on the path.
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "pyvolcano", *argv], cwd=folder, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False, env={**os.environ, "PYTHONPATH": path})


def _inputs(folder: Path, argv: list[str]) -> set[str]:
    named = {a for a in argv if a.endswith((".yaml", ".conf", ".csv"))}
    return named | {p.name for p in folder.iterdir() if p.name != "cmd.json"}


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], names: set[str]) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert any(lines[0].startswith(f"error: {n}") for n in names), lines[0]


@pytest.fixture
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[str]]:
    folder = tmp_path / request.param
    shutil.copytree(DATA / request.param, folder)
    return folder, json.loads((folder / "cmd.json").read_text(encoding="utf-8"))["argv"]


@pytest.mark.parametrize("case", CASES, indirect=True)
def test_fuzz_input_exits_2_with_one_line_naming_the_input(case: tuple[Path, list[str]]) -> None:
    folder, argv = case
    name = folder.name
    if name in LONG_RUNS:
        proc = _run(folder, [*argv, "--until", "5m"])
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout)["stats"]["virtual_seconds"] == 300
        return
    proc = _run(folder, argv)
    if name in WORKLOAD_REJECTIONS:
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        return
    if name in PARAMETER_ERRORS:
        _assert_one_line_error(proc, {PARAMETER_ERRORS[name]})
        return
    if argv[0] == "validate":
        assert proc.returncode == 2 and not proc.stderr, proc.stderr[-2000:]
        bad = [line for line in proc.stdout.splitlines() if not line.startswith("OK ")]
        assert bad and all(any(line.startswith(f"{n}: ") for n in _inputs(folder, argv)) for line in bad), proc.stdout
        return
    _assert_one_line_error(proc, _inputs(folder, argv))
    if argv[0] == "schedule" and not (folder / "sched.conf").exists():
        # The missing --config is reported first; the snapshot's own fault must be named too.
        _assert_one_line_error(_run(folder, ["schedule", argv[1]]), {argv[1]})


def test_workload_quantity_beyond_kubernetes_limit_is_rejected_at_submission(tmp_path: Path) -> None:
    name = "022-OverflowError_pyvolcano_api_resource.py_105"
    shutil.copytree(DATA / name, tmp_path / name)
    argv = json.loads((DATA / name / "cmd.json").read_text(encoding="utf-8"))["argv"]
    # The recorded cluster lost its Nodes to another mutation (refused on its own: "no Node
    # objects"); give it one so that the workload's fault is the one reported.
    with open(tmp_path / name / "cluster.yaml", "a", encoding="utf-8") as f:
        f.write("\n---\napiVersion: v1\nkind: Node\nmetadata: {name: extra}\n"
                "status: {capacity: {cpu: '8', memory: 32Gi}, allocatable: {cpu: '8', memory: 32Gi}}\n")
    proc = _run(tmp_path / name, argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rejected = {r["name"]: r["error"] for r in json.loads(proc.stdout)["rejected"]}
    assert "nvidia.com/gpu" in rejected["default/ranker-tf"]
