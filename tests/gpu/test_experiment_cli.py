"""``pyvolcano experiment fgd`` (cli/experiment.py): output contract, report files, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyvolcano.cli.experiment import UsageError, parse_policies, parse_seeds, run_experiment_fgd
from pyvolcano.gpu.policies import POLICIES

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},32000,65536,{2 + 2 * (i % 2)},T4\n" for i in range(6))
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "".join(
    f"p{i},{2000 + 500 * (i % 3)},1024,{1 if i % 4 else 0},{(300, 500, 1000, 700)[i % 4]},\n" for i in range(30))


@pytest.fixture
def trace(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "tiny_pods.csv"
    nodes.write_text(NODES, encoding="utf-8")
    pods.write_text(PODS, encoding="utf-8")
    return nodes, pods


def test_json_output_is_one_object_with_a_run_per_seed_and_policy(
    trace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_experiment_fgd(trace[0], trace[1], ["fgd", "bestfit"], [1, 2], 1.3, "json", None)
    out, err = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert [(r["policy"], r["seed"]) for r in doc["runs"]] == [("fgd", 1), ("bestfit", 1), ("fgd", 2), ("bestfit", 2)]
    run = doc["runs"][0]
    assert run["trace"] == "tiny_pods" and run["gpu_capacity"] == 18
    assert {"pods", "curve"} <= set(run)
    assert "seconds" not in run  # wall clock: only with --timings
    assert [p["arrived"] for p in run["curve"]] == sorted(p["arrived"] for p in run["curve"])
    assert "fgd seed 1" in err


def test_timings_add_each_runs_wall_clock_seconds(trace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_experiment_fgd(trace[0], trace[1], ["fgd"], [1], 1.3, "json", None, timings=True) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["seconds"] >= 0


def test_table_output_and_report_files(trace: tuple[Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report"
    code = run_experiment_fgd(trace[0], trace[1], ["random", "fgd"], [5], 1.3, "table", report)
    out, _err = capsys.readouterr()
    assert code == 0
    assert "POLICY" in out and "fgd" in out and "random" in out
    for name in ("curves.csv", "summary.csv", "runs.json"):
        assert (report / name).is_file()
    pytest.importorskip("matplotlib")
    assert (report / "allocation.png").stat().st_size > 0 and (report / "fragmentation.png").is_file()


@pytest.mark.parametrize(("args", "message"), [
    ({"policies": ["tetris"]}, "--policy"),
    ({"seeds": []}, "--seed"),
    ({"tune": 0.0}, "--tune"),
    ({"tune": float("inf")}, "--tune"),
    ({"tune": float("nan")}, "--tune"),
    ({"output": "xml"}, "--output"),
])
def test_usage_errors_exit_2_with_one_line(trace: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                            args: dict[str, object], message: str) -> None:
    kwargs: dict[str, object] = {"policies": ["fgd"], "seeds": [1], "tune": 1.3, "output": "json", "report": None}
    kwargs.update(args)
    code = run_experiment_fgd(trace[0], trace[1], **kwargs)  # type: ignore[arg-type]
    _out, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1


def test_unreadable_trace_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,two,T4\n", encoding="utf-8")
    assert run_experiment_fgd(bad, None, ["fgd"], [1], 1.3, "json", None) == 2
    assert "bad.csv: line 2: column gpu" in capsys.readouterr().err


def test_seed_and_policy_parsing() -> None:
    assert parse_seeds("42-44,50") == [42, 43, 44, 50]
    assert parse_policies("all") == list(POLICIES)
    assert parse_policies("FGD, bestfit") == ["fgd", "bestfit"]
    for bad in ("51-42", "x", ""):
        with pytest.raises(UsageError, match="--seed"):
            parse_seeds(bad)
    with pytest.raises(UsageError, match="--policy"):
        parse_policies("fgd,nope")
