"""Command-line conventions: one ``error:`` line and exit 2 for every usage mistake, tidy help,
``--version``, and option values checked where they enter (before anything runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import typer

from pyvolcano.cli.app import run
from pyvolcano.cli.options import Group

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "simulate"
CLUSTER = str(ROOT / "examples" / "cluster.yaml")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err and "╭" not in err
    return lines[0]


@pytest.mark.parametrize(("argv", "says"), [
    (["schedule"], "Missing argument 'CLUSTER'"),
    (["schedule", CLUSTER, "--bogus"], "No such option: --bogus"),
    (["schedule", CLUSTER, "--sessions", "many"], "'--sessions'"),
    (["schedule", CLUSTER, "-o", "xml"], "got 'xml'; expected json, yaml, table or wide"),
    (["validate", "-o", "table", CLUSTER], "got 'table'; expected json, yaml or wide"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["simulate", "--output"], "'--output'"),
])
def test_usage_errors_print_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                      says: str) -> None:
    code, out, err = cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert says in one_error_line(err)


def test_usage_error_names_the_help_of_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = cli(capsys, "simulate", "--bogus")
    assert one_error_line(err).endswith("(see 'pyvolcano simulate --help')")


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert cli(capsys, "--version") == (0, f"pyvolcano {version('pyvolcano')}\n", "")


@pytest.mark.parametrize("argv", [["--help"], ["schedule", "--help"], ["validate", "--help"], ["simulate", "--help"],
                                  ["experiment", "fgd", "--help"]])
def test_help_shows_names_not_python_types(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = cli(capsys, *argv)
    assert code == 0
    assert "Usage: pyvolcano" in out
    for raw in ("<bool>", "<list[Path]>", "{cluster}", "{files}", "<path>", "<str>"):
        assert raw not in out


def test_help_names_arguments_in_capitals(capsys: pytest.CaptureFixture[str]) -> None:
    assert "Usage: pyvolcano schedule [OPTIONS] [CLUSTER]..." in cli(capsys, "schedule", "--help")[1]
    assert "Usage: pyvolcano validate [OPTIONS] [FILES]..." in cli(capsys, "validate", "--help")[1]


@pytest.mark.parametrize("seed", ["-1", "18446744073709551616", "99999999999999999999999"])
def test_invalid_seed_is_refused(capsys: pytest.CaptureFixture[str], seed: str) -> None:
    for command in (["schedule", CLUSTER], ["simulate"]):
        code, _, err = cli(capsys, *command, "--seed", seed)
        assert code == 2
        assert f"'--seed': got {seed}; expected an integer from 0 to 2**64-1" in one_error_line(err)


def test_largest_seed_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "schedule", CLUSTER, "-o", "json", "--seed", str(2**64 - 1))
    assert code == 0, err


@pytest.mark.parametrize("period", ["inf", "nan", "0", "-1", "0.0001"])
def test_schedule_period_must_be_finite_and_positive(capsys: pytest.CaptureFixture[str], period: str) -> None:
    code, _, err = cli(capsys, "simulate", "--schedule-period", period)
    assert code == 2
    assert "'--schedule-period'" in one_error_line(err)


@pytest.mark.parametrize(("until", "says"), [("0s", "expected a positive duration"), ("-5m", "positive"),
                                             ("soon", "expected a duration such as 90s")])
def test_until_must_be_a_positive_duration(capsys: pytest.CaptureFixture[str], until: str, says: str) -> None:
    code, _, err = cli(capsys, "simulate", "--until", until)
    assert code == 2
    assert says in one_error_line(err)


def test_single_valued_option_given_twice_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml"),
                       "--workload", str(EX / "jobs.yaml"))
    assert code == 2
    assert one_error_line(err).startswith("error: Invalid value for '--workload': given 2 times; it takes one value")


def test_repeatable_options_may_be_repeated(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "validate", "-f", str(EX / "cluster.yaml"), "-f", str(EX / "cluster.yaml"))
    assert code == 2  # the same objects twice: "already exists", not a usage error
    assert "already exists" in out
    assert err == ""


@pytest.mark.parametrize(("argv", "says"), [
    (["--cluster", str(EX / "cluster.yaml")], "--cluster needs --workload"),
    (["--nodes", "machines.csv"], "--nodes needs --trace"),
    (["--trace-format", "philly"], "--trace-format needs --trace"),
])
def test_simulate_option_combinations_are_checked(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                  says: str) -> None:
    code, out, err = cli(capsys, "simulate", *argv)
    assert code == 2
    assert out == ""
    assert says in one_error_line(err)


def test_report_onto_an_existing_file_is_refused_before_the_run(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "report"
    existing.write_text("keep me\n")
    code, out, err = cli(capsys, "simulate", "--cluster", str(EX / "cluster.yaml"), "--workload",
                         str(EX / "jobs.yaml"), "--report", str(existing))
    assert code == 2
    assert out == ""
    assert f"'--report': {existing} exists and is not a directory" in one_error_line(err)
    assert existing.read_text() == "keep me\n"


def test_report_under_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("")
    code, _, err = cli(capsys, "experiment", "fgd", "--report", str(tmp_path / "f" / "sub"))
    assert code == 2
    assert "is not a directory" in one_error_line(err)


def test_report_check_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyvolcano.cli.options import report_dir

    assert report_dir(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("seeds", "says"), [("-1", "expected integers"), ("5-3", "low ≤ high"),
                                             (f"0-{2**64}", "from 0 to 2**64-1"), ("0-20000", "at most 10000")])
def test_experiment_seed_ranges_are_checked(capsys: pytest.CaptureFixture[str], seeds: str, says: str) -> None:
    code, _, err = cli(capsys, "experiment", "fgd", "--seed", seeds)
    assert code == 2
    assert says in one_error_line(err)


def test_fuzzed_infinite_schedule_period_with_a_report_stops_at_once(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # The fuzzer's command line (it hung): the period is refused before the run, and no report is written.
    code, out, err = cli(capsys, "simulate", "--cluster", str(EX / "cluster.yaml"), "--workload",
                         str(EX / "jobs.yaml"), "--schedule-period", "inf", "--report", str(tmp_path / "rep"),
                         "-o", "json")
    assert (code, out) == (2, "")
    assert "'--schedule-period': got inf" in one_error_line(err)
    assert not (tmp_path / "rep").exists()


def test_a_sub_app_made_without_the_group_class_follows_the_same_rules(capsys: pytest.CaptureFixture[str]) -> None:
    root = typer.Typer(cls=Group, add_completion=False)
    sub = typer.Typer()
    root.add_typer(sub, name="sub")

    @sub.command()
    def leaf(files: Annotated[list[Path], typer.Argument()], name: Annotated[str, typer.Option()] = "x",
             flag: Annotated[bool, typer.Option()] = False) -> None:
        typer.echo(f"{name} {len(files)} {flag}")

    command = typer.main.get_command(root)
    assert command.main(["sub", "leaf", "a", "b", "--name", "y"], standalone_mode=False) is None
    assert capsys.readouterr().out == "y 2 False\n"
    with pytest.raises(typer.BadParameter, match="given 2 times"):
        command.main(["sub", "leaf", "a", "--name", "y", "--name", "z"], standalone_mode=False)
    assert command.main(["sub", "leaf", "--help"], prog_name="p", standalone_mode=False) == 0
    shown = capsys.readouterr().out
    assert "Usage: p sub leaf [OPTIONS] FILES..." in shown
    assert "<bool>" not in shown and "<list[Path]>" not in shown
