"""Workflow manifests for tests: our own, and upstream Volcano's examples when available.

Our own CronJob, JobFlow and JobTemplates live in ``tests/data/workflows`` and are always there.
Upstream's example files are not part of this repository: a test reads them from the ``example/``
directory of an upstream Volcano checkout named by the environment variable
:data:`EXAMPLES_ENV`, and is skipped (with that reason) when it is unset. Every test that needs
upstream's files finds them through :func:`upstream_examples_dir` or :func:`workflow_files`.

A test that runs with either set takes an ``origin`` parameter from :data:`ORIGINS` and asks
:func:`workflow_files` for it; it reads names and dependencies from the files
(:meth:`WorkflowFiles.flow_name`, :meth:`WorkflowFiles.steps`), so the same assertions hold
for both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

__all__ = ["EXAMPLES_ENV", "ORIGINS", "OWN_WORKFLOWS", "WorkflowFiles", "load", "upstream_examples_dir",
           "with_duration", "workflow_files"]

EXAMPLES_ENV = "VOLCANO_EXAMPLES_DIR"
ORIGINS = ("own", "upstream")


@dataclass(frozen=True)
class WorkflowFiles:
    """One CronJob file, one file of JobTemplates, and one JobFlow file made of those templates."""

    cronjob: Path
    templates: Path
    flow: Path

    def cronjob_name(self) -> str:
        [doc] = load(self.cronjob)
        return str(doc["metadata"]["name"])

    def flow_name(self) -> str:
        [doc] = load(self.flow)
        return str(doc["metadata"]["name"])

    def steps(self) -> dict[str, list[str]]:
        """Each flow's name and its ``dependsOn.targets``, in the JobFlow's order."""
        [doc] = load(self.flow)
        return {f["name"]: list((f.get("dependsOn") or {}).get("targets") or []) for f in doc["spec"]["flows"]}

    def layers(self) -> dict[str, int]:
        """Each flow's depth in the DAG: 0 without targets, else one more than its deepest target."""
        steps = self.steps()
        depth: dict[str, int] = {}

        def of(name: str) -> int:
            if name not in depth:
                depth[name] = 1 + max((of(t) for t in steps[name]), default=-1)
            return depth[name]

        return {name: of(name) for name in steps}


_DATA = Path(__file__).resolve().parent / "data" / "workflows"
OWN_WORKFLOWS = WorkflowFiles(cronjob=_DATA / "cronjob.yaml", templates=_DATA / "jobtemplates.yaml",
                              flow=_DATA / "jobflow.yaml")


def upstream_examples_dir() -> Path:
    """Upstream Volcano's ``example/`` directory named by :data:`EXAMPLES_ENV`; skips the calling
    test when the variable is unset."""
    root = os.environ.get(EXAMPLES_ENV)
    if not root:
        pytest.skip(f"{EXAMPLES_ENV} is not set (it names the example/ directory of an upstream Volcano checkout)")
    return Path(root)


def workflow_files(origin: str) -> WorkflowFiles:
    """``own``: ours; ``upstream``: upstream's ``cronjob/cronjob.yaml`` and ``jobflow/`` examples
    (skips the calling test when :data:`EXAMPLES_ENV` is unset)."""
    if origin == "own":
        return OWN_WORKFLOWS
    if origin != "upstream":
        raise ValueError(f"origin: got {origin!r}; expected one of {ORIGINS}")
    root = upstream_examples_dir()
    return WorkflowFiles(cronjob=root / "cronjob" / "cronjob.yaml", templates=root / "jobflow" / "JobTemplate.yaml",
                         flow=root / "jobflow" / "JobFlow.yaml")


def load(path: Path, duration: str | None = None) -> list[dict[str, Any]]:
    """The documents of ``path``; with ``duration``, see :func:`with_duration`."""
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return docs if duration is None else with_duration(docs, duration)


def with_duration(docs: list[dict[str, Any]], duration: str) -> list[dict[str, Any]]:
    """``docs`` with a ``pyvolcano.io/duration`` annotation on every task's pod template (a Job's,
    a JobTemplate's or a CronJob's job template's): the only change a simulation needs."""
    for d in docs:
        spec = d["spec"]["jobTemplate"]["spec"] if d["kind"] == "CronJob" else d["spec"]
        for task in spec.get("tasks") or []:
            annotations = task["template"].setdefault("metadata", {}).setdefault("annotations", {})
            annotations["pyvolcano.io/duration"] = duration
    return docs
