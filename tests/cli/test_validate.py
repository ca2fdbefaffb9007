"""``pyvolcano validate``: one line per object, exit 0 when all are valid, 2 otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.cli.validate import run_validate

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: team}}
spec:
  queue: {queue}
  minAvailable: {min_available}
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
          restartPolicy: OnFailure
"""

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{weight: {weight}}}
"""


def job(name: str = "j", queue: str = "default", min_available: int = 1) -> str:
    return JOB.format(name=name, queue=queue, min_available=min_available)


def queue(name: str, weight: int = 1) -> str:
    return QUEUE.format(name=name, weight=weight)


def write(tmp_path: Path, name: str, *docs: str) -> Path:
    path = tmp_path / name
    path.write_text("\n---\n".join(docs), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[str]]:
    code = run_validate(list(paths))
    return code, capsys.readouterr().out.splitlines()


def test_valid_objects_print_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "a.yaml", queue("q"), job("j", "q"),
                 "\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n")
    code, lines = run(capsys, path)
    assert code == 0
    assert lines == ["OK Queue q", "OK Job team/j", "OK Pod default/p"]


def test_one_error_line_per_bad_object_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "b.yaml", job("good"), job("bad", min_available=5), queue("w", weight=-3))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [
        "OK Job team/good",
        f"{path}: document 1: Job team/bad: spec.minAvailable: job 'minAvailable' should not be greater than "
        "total replicas in tasks",
        f"{path}: document 2: Queue w: spec.weight: Invalid value: -3: queue weight must be between 1 and 65535, "
        "inclusive",
    ]


def test_objects_may_refer_to_earlier_ones_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queues = write(tmp_path, "queues.yaml", queue("q"))
    jobs = write(tmp_path, "jobs.yaml", job("j", "q"))
    assert run(capsys, queues, jobs)[0] == 0
    code, lines = run(capsys, jobs, queues)
    assert code == 2
    assert lines[0] == (f"{jobs}: document 0: Job team/j: spec.queue: unable to find job queue: "
                        'queues.scheduling.volcano.sh "q" not found')
    assert lines[1] == "OK Queue q"


def test_builtin_queues_exist_and_may_be_redefined_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "c.yaml", job("a", "default"), queue("default", weight=3), queue("default"),
                 job("r", "root"))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[:2] == ["OK Job team/a", "OK Queue default"]
    assert lines[2] == f"{path}: document 2: Queue default: already exists"
    assert lines[3] == f"{path}: document 3: Job team/r: spec.queue: can not submit job to root queue"


def test_duplicate_objects_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "d.yaml", job("j"), job("j"))
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[1] == f"{path}: document 1: Job team/j: already exists"


def test_unreadable_and_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text(queue("ok") + "---\nkind: [unclosed\n", encoding="utf-8")
    scalar = write(tmp_path, "scalar.yaml", "just text\n", "apiVersion: v1\nmetadata: {name: x}\n")
    code, lines = run(capsys, missing, broken, scalar)
    assert code == 2
    assert lines[0].startswith(f"{missing}: cannot read: ")
    assert lines[1] == "OK Queue ok"
    assert lines[2].startswith(f"{broken}: not valid YAML at line ")
    assert lines[3] == f"{scalar}: document 0: got str; expected a Kubernetes object mapping"
    assert lines[4] == f"{scalar}: document 1: kind: Required value"


def test_list_documents_stand_for_their_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap, metadata: {name: a}}\n"
                    "- {kind: ConfigMap, metadata: {name: B}}\n", encoding="utf-8")
    code, lines = run(capsys, path)
    assert code == 2
    assert lines[0] == "OK ConfigMap default/a"
    assert lines[1].startswith(f"{path}: document 0 items[1]: ConfigMap default/B: metadata.name: Invalid value")


def test_empty_input_is_an_error_as_kubectl_says_no_objects_passed(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    empty = write(tmp_path, "empty.yaml", "---\n# nothing\n")
    assert run_validate([empty]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {empty}: no objects passed to validate\n"


def test_upstream_invalid_job_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = "    - {name: worker, replicas: 1, template: {spec: {containers: [{name: c, image: i}]}}}\n"
    dup = job("test-job-webhook-disallow").replace("  tasks:\n", "  tasks:\n" + extra)
    path = write(tmp_path, "invalid.yaml", dup)
    code, lines = run(capsys, path)
    assert code == 2
    assert lines == [f"{path}: document 0: Job team/test-job-webhook-disallow: spec.tasks[1].name: "
                     "duplicated task name 'worker'"]
