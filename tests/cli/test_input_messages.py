"""Bad input files are named in the one-line error, whatever the fault and the command."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pyvolcano.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "simulate"
NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n{extra}status:\n  capacity: {{cpu: '{cpu}', memory: 8Gi}}\n"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_invalid_utf8_in_a_simulate_cluster_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_bytes(NODE.format(extra="", cpu="4").encode() + b"# \xff\xfe\n")
    code, _, err = invoke("simulate", "--cluster", str(bad), "--workload", str(EX / "jobs.yaml"), "-o", "json")
    assert code == 2
    assert one_error_line(err).startswith(f"error: {bad}: not UTF-8 text (byte ")


def _dated_node(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    dated = NODE.replace("  name: n1\n", "  name: n1\n  creationTimestamp: 2024-02-30\n")
    path.write_text(dated.format(extra="", cpu="4"), encoding="utf-8")
    return path


def test_impossible_date_in_a_snapshot_names_file_and_field(tmp_path: Path) -> None:
    bad = _dated_node(tmp_path)
    code, _, err = invoke("schedule", str(bad), "-o", "json")
    assert code == 2
    assert one_error_line(err).startswith(f"error: {bad}: document 0 (Node n1): metadata.creationTimestamp: "
                                          "got '2024-02-30' (str); expected an RFC 3339 time")


def test_impossible_date_in_simulate_is_the_servers_field_and_ignored(tmp_path: Path) -> None:
    # The API server sets creationTimestamp itself on create; a YAML timestamp no longer crashes the loader.
    code, _, err = invoke("simulate", "--cluster", str(_dated_node(tmp_path)), "--workload", str(EX / "jobs.yaml"),
                          "--until", "10s", "-o", "json")
    assert code == 0, err


@pytest.mark.parametrize("command", ["schedule", "simulate"])
def test_huge_number_names_the_file_and_position(tmp_path: Path, command: str) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(NODE.format(extra="", cpu="4").replace("memory: 8Gi", "memory: " + "9" * 5000), encoding="utf-8")
    args = [str(bad)] if command == "schedule" else ["--cluster", str(bad), "--workload", str(EX / "jobs.yaml")]
    code, _, err = invoke(command, *args, "-o", "json")
    assert code == 2
    assert one_error_line(err).startswith(f"error: {bad}: line 6, column ")


def test_bad_plugin_argument_names_the_configuration_file_and_field(tmp_path: Path) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: binpack\n"
                    "    arguments: {binpack.weight: lots}\n", encoding="utf-8")
    for args in (["schedule", str(ROOT / "examples" / "cluster.yaml")],
                 ["simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(EX / "jobs.yaml")]):
        code, _, err = invoke(*args, "--config", str(conf), "-o", "json")
        assert code == 2
        assert one_error_line(err) == (f"error: {conf}: tiers[0].plugins[1].arguments.binpack.weight: got 'lots' "
                                       "(str); expected an integer")


def test_a_value_with_line_breaks_does_not_split_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(NODE.format(extra="", cpu="4\\n\\r5").replace("'4", '"4').replace("5'", '5"'), encoding="utf-8")
    code, _, err = invoke("schedule", str(bad), "-o", "json")
    assert code == 2
    assert "\\n" in one_error_line(err)


def test_a_name_with_line_breaks_does_not_split_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(NODE.format(extra="", cpu="1x").replace("name: n1", 'name: "n\\n1"'), encoding="utf-8")
    code, _, err = invoke("schedule", str(bad), "-o", "json")
    assert code == 2
    assert one_error_line(err).startswith(f"error: {bad}: document 0 (Node n\\n1): status.capacity.cpu")


@pytest.mark.parametrize(("doc", "field"), [
    ("kind: {}\n", "kind {} is not allowed"),
    ("apiVersion: {}\nkind: Pod\nmetadata: {name: p}\n", "(Pod): apiVersion: got {}; expected a string"),
    ("apiVersion: v1\nkind: Pod\nkind: Node\n", "found duplicate key 'kind'"),
])
def test_a_workload_with_a_mistyped_kind_or_api_version_names_the_file(tmp_path: Path, doc: str, field: str) -> None:
    bad = tmp_path / "jobs.yaml"
    bad.write_text(doc, encoding="utf-8")
    code, _, err = invoke("simulate", "--cluster", str(EX / "cluster.yaml"), "--workload", str(bad), "-o", "json")
    assert code == 2
    line = one_error_line(err)
    assert line.startswith(f"error: {bad}: ") and field in line
