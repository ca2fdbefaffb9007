"""The sweep's grid: its axes from a file or options, checked before anything runs, and its cells."""

from pathlib import Path

import pytest

from pyvolcano.simulator.sweep.grid import SweepFileError, SweepSpec, load_sweep_file, spec_from_options

ROOT = Path(__file__).resolve().parents[3]
EX = ROOT / "examples" / "simulate"


def _file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def _options(**given: object) -> dict[str, object]:
    base: dict[str, object] = {"configs": [], "seeds": [], "traces": [], "trace_format": None, "nodes": [],
                               "clusters": [], "workloads": [], "until": None, "default_duration": None,
                               "schedule_period": None, "workers": None}
    return {**base, **given}


def test_cells_vary_the_seed_fastest_then_config_then_cluster_then_input(tmp_path: Path) -> None:
    for name in ("a.csv", "b.csv", "m1.csv", "m2.csv"):
        (tmp_path / name).write_text("x\n")
    spec = SweepSpec(configs=[None, ROOT / "examples" / "binpack.conf"], seeds=[0, 1],
                     traces=[tmp_path / "a.csv", tmp_path / "b.csv"], nodes=[tmp_path / "m1.csv", tmp_path / "m2.csv"])
    cells = spec.cells()
    assert len(cells) == 16
    assert [c.id for c in cells[:3]] == ["001", "002", "003"]
    assert [(c.input_name, c.cluster_name, c.config_name, c.seed) for c in cells[:5]] == [
        ("a.csv", "m1.csv", "default", 0), ("a.csv", "m1.csv", "default", 1),
        ("a.csv", "m1.csv", "binpack.conf", 0), ("a.csv", "m1.csv", "binpack.conf", 1),
        ("a.csv", "m2.csv", "default", 0)]
    assert cells[-1].input_name == "b.csv"


def test_a_cell_names_the_simulate_options_that_run_it_alone() -> None:
    spec = SweepSpec(configs=[ROOT / "examples" / "binpack.conf"], seeds=[7], clusters=[EX / "cluster.yaml"],
                     workloads=[EX / "jobs.yaml"], until="2h", schedule_period=0.5)
    (cell,) = spec.cells()
    assert cell.simulate_arguments() == [
        "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"),
        "--config", str(ROOT / "examples" / "binpack.conf"), "--until", "2h", "--seed", "7",
        "--schedule-period", "0.5"]


def test_no_input_axis_means_one_cell_per_config_and_seed_on_the_builtin_scenario() -> None:
    cells = SweepSpec(seeds=[1, 2, 3]).cells()
    assert [(c.trace, c.cluster, c.seed, c.input_name) for c in cells] == [
        (None, None, s, "built-in scenario") for s in (1, 2, 3)]


def test_sweep_file_paths_are_relative_to_the_file_and_seed_ranges_are_inclusive(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(EX.joinpath("cluster.yaml").read_text())
    (tmp_path / "jobs.yaml").write_text(EX.joinpath("jobs.yaml").read_text())
    spec = load_sweep_file(_file(tmp_path, "configs: [default]\nseeds: [5, '1-3']\nclusters: [cluster.yaml]\n"
                                           "workloads: jobs.yaml\nuntil: 2h\nworkers: 3\n"))
    assert spec.seeds == [5, 1, 2, 3]
    assert spec.clusters == [tmp_path / "cluster.yaml"]
    assert spec.workloads == [tmp_path / "jobs.yaml"]
    assert (spec.until, spec.workers, spec.configs) == ("2h", 3, [None])


@pytest.mark.parametrize(("text", "field", "expected"), [
    ("seeds: [1]\ncolours: [red]\n", "colours", "one of configs, seeds"),
    ("seeds: ['3-1']\n", "seeds[0]", "low ≤ high"),
    ("seeds: [-1]\n", "seeds[0]", "from 0 to 2**64-1"),
    ("seeds: []\n", "seeds", "a list of seeds"),
    ("traces: [missing.csv]\n", "traces[0]", "an existing file (or one of philly"),
    ("nodes: [sweep.yaml]\n", "nodes", "traces for the machine lists"),
    ("until: soon\n", "until", "a positive duration such as 24h"),
    ("workers: 0\n", "workers", "an integer from 1 to"),
    ("schedule_period: 0\n", "schedule_period", "at least 0.001"),
    ("trace_format: parquet\ntraces: [philly]\n", "trace_format", "one of philly, openb"),
    ("- a\n- b\n", "document", "a mapping with fields"),
    ("seeds: [1\n", "line 2", "a YAML mapping"),
])
def test_a_bad_sweep_file_names_the_file_the_field_and_what_was_expected(tmp_path: Path, text: str, field: str,
                                                                         expected: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(SweepFileError) as info:
        load_sweep_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}: ")
    assert expected in message


def test_traces_and_clusters_in_one_grid_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SweepFileError, match=r"traces \(with nodes\) or clusters \(with workloads\), not both"):
        load_sweep_file(_file(tmp_path, f"traces: [philly]\nclusters: ['{EX / 'cluster.yaml'}']\n"))


def test_an_option_replaces_the_field_of_the_file(tmp_path: Path) -> None:
    base = load_sweep_file(_file(tmp_path, "seeds: [1, 2]\nconfigs: [default]\nuntil: 1h\n"))
    spec = spec_from_options(base, **_options(seeds=["9"], until="3h"))  # type: ignore[arg-type]
    assert (spec.seeds, spec.until, spec.configs) == ([9], "3h", [None])
    assert "with the command line's options" in spec.source


def test_a_bad_option_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(SweepFileError, match=r"^command line: --seed\[0\]: got 'x'"):
        spec_from_options(None, **_options(seeds=["x"]))  # type: ignore[arg-type]
    with pytest.raises(SweepFileError, match=r"^command line: --cluster\[0\]: .* does not exist"):
        spec_from_options(None, **_options(clusters=[str(tmp_path / "none.yaml")]))  # type: ignore[arg-type]
