"""Example manifests validate as upstream's API server and webhooks would take them.

The files of one directory are validated together (Queues and PriorityClasses first, as their
READMEs apply them), so a Job may name a queue of the same directory. Every file must pass
except the ones expected to be rejected: a directory named ``invalid`` or ``invalid_jobs``, and
the upstream files listed in :data:`UPSTREAM_REJECTED`.

Two sets run: the hand-written manifests in ``tests/data/manifests`` (always), and upstream
Volcano's ``example/`` directory when the environment variable ``VOLCANO_EXAMPLES_DIR`` names a
checkout of it (upstream's files are not part of this repository).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyvolcano.cli.validate import run_validate

OWN = Path(__file__).resolve().parents[1] / "data" / "manifests"
INVALID_DIRS = frozenset({"invalid", "invalid_jobs"})

UPSTREAM_REJECTED: dict[str, str] = {
    # Writes "priorityClass:" (not a PodSpec field) in its pod templates: kubectl's default strict
    # validation refuses it ("unknown field"); an API server without it would silently drop the field.
    "kubecon-2019-china/task-priority/elastic-job.yaml": 'unknown field "priorityClass"; did you mean '
                                                         '"priorityClassName"?',
}


def _groups(root: Path) -> list[tuple[Path, list[Path]]]:
    dirs: dict[Path, list[Path]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".yaml", ".yml") and path.is_file():
            dirs.setdefault(path.parent, []).append(path)

    def first(path: Path) -> tuple[int, str]:
        text = path.read_text(encoding="utf-8")
        return (0 if "kind: Queue" in text or "kind: PriorityClass" in text else 1, path.name)

    return [(d, sorted(files, key=first)) for d, files in sorted(dirs.items())]


def _check(root: Path, capsys: pytest.CaptureFixture[str], rejected: dict[str, str]) -> None:
    groups = _groups(root)
    assert groups, f"no manifests under {root}"
    for directory, files in groups:
        code = run_validate(files)
        lines = capsys.readouterr().out.splitlines()
        any_error = False
        for path in files:
            rel = path.relative_to(root).as_posix()
            errors = [ln for ln in lines if ln.startswith(f"{path}:")]
            any_error = any_error or bool(errors)
            if directory.name in INVALID_DIRS:
                assert errors, f"{rel} must be rejected"
            elif rel in rejected:
                assert any(rejected[rel] in ln for ln in errors), (rel, errors)
            else:
                assert not errors, (rel, errors)
        assert code == (2 if any_error else 0)


def test_own_example_manifests_validate_as_upstream_would(capsys: pytest.CaptureFixture[str]) -> None:
    _check(OWN, capsys, {})


def test_upstream_examples_validate_as_upstream_would(capsys: pytest.CaptureFixture[str]) -> None:
    root = os.environ.get("VOLCANO_EXAMPLES_DIR")
    if not root:
        pytest.skip("VOLCANO_EXAMPLES_DIR is not set (it names the example/ directory of an upstream Volcano checkout)")
    _check(Path(root), capsys, UPSTREAM_REJECTED)
