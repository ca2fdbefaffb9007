"""Manifest inputs as kubectl takes them: files, ``-f``, ``-`` for stdin, directories; and a
clear error for no objects at all."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pyvolcano.api.inputs import expand_paths, read_inputs
from pyvolcano.cli.app import run

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster.yaml"
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{weight: 1}}\n"


def test_a_directory_stands_for_its_manifest_files_in_name_order(tmp_path: Path) -> None:
    for name in ("b.yml", "a.yaml", "c.json", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.yaml").mkdir()
    assert expand_paths([tmp_path, "-"]) == [str(tmp_path / n) for n in ("a.yaml", "b.yml", "c.json")] + ["-"]


def test_stdin_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: X\n"))
    got = list(read_inputs(["-", "-"]))
    assert got[0] == ("<stdin>", "kind: X\n")
    assert str(got[1][1]) == "<stdin>: '-' given twice; standard input can be read once"


def test_validate_reads_a_directory_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "2-second.yaml").write_text(QUEUE.format(name="second"))
    (tmp_path / "1-first.json").write_text(json.dumps({"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                       "kind": "Queue", "metadata": {"name": "first"}}))
    monkeypatch.setattr("sys.stdin", io.StringIO(QUEUE.format(name="piped")))
    assert run(["validate", str(tmp_path), "-f", "-"]) == 0
    assert capsys.readouterr().out.splitlines() == ["OK Queue first", "OK Queue second", "OK Queue piped"]


def test_schedule_reads_stdin_and_repeated_f(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schedule", str(CLUSTER), "-o", "json"]) == 0
    from_file = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(CLUSTER.read_text()))
    assert run(["schedule", "-f", "-", "-o", "json"]) == 0
    assert capsys.readouterr().out == from_file


def test_schedule_merges_files_and_refuses_an_object_defined_twice(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    docs = CLUSTER.read_text().split("\n---\n")
    (tmp_path / "a.yaml").write_text("\n---\n".join(docs[: len(docs) // 2]))
    (tmp_path / "b.yaml").write_text("\n---\n".join(docs[len(docs) // 2:]))
    assert run(["schedule", str(CLUSTER), "-o", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert run(["schedule", str(tmp_path), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == whole
    assert run(["schedule", str(CLUSTER), "-f", str(CLUSTER), "-o", "json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {CLUSTER}: duplicate ")
    assert f"(first defined in {CLUSTER})" in err


@pytest.mark.parametrize("command", ["validate", "schedule"])
def test_no_objects_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n---\n")
    assert run([command, str(empty)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {empty}: no objects passed to {command}\n"


def test_an_empty_directory_has_no_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}: no objects passed to validate\n"


def test_schedule_warns_when_there_are_no_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queues = tmp_path / "q.yaml"
    queues.write_text(QUEUE.format(name="q"))
    assert run(["schedule", str(queues), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["binds"] == {}
    assert captured.err == f"warning: {queues}: no Node objects; nothing can be bound\n"


def test_simulate_needs_nodes_and_a_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queues = tmp_path / "cluster.yaml"
    queues.write_text(QUEUE.format(name="q"))
    work = tmp_path / "work.yaml"
    work.write_text(QUEUE.format(name="r"))
    assert run(["simulate", "--cluster", str(queues), "--workload", str(work)]) == 2
    assert capsys.readouterr().err == f"error: {queues}: no Node objects; a simulation needs at least one Node\n"
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert run(["simulate", "--cluster", str(ROOT / "examples" / "simulate" / "cluster.yaml"),
                "--workload", str(empty)]) == 2
    assert capsys.readouterr().err == f"error: {empty}: no objects passed to simulate\n"
