"""``pyvolcano validate`` on CronJobs, JobTemplates and JobFlows: our workflow manifests, and
upstream's examples when ``VOLCANO_EXAMPLES_DIR`` names them, are OK as they are; a workflow whose
jobs could never be created is valid with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pyvolcano.cli.validate import run_validate
from workflow_examples import ORIGINS, OWN_WORKFLOWS, load, workflow_files


def test_our_cronjob_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_validate([OWN_WORKFLOWS.cronjob]) == 0
    out, err = capsys.readouterr()
    assert out == "OK CronJob default/nightly-retrain\n"
    assert err == ""


def test_our_jobflow_and_its_templates_are_ok(capsys: pytest.CaptureFixture[str]) -> None:
    # Applied in that order: the JobTemplates first, then the JobFlow.
    assert run_validate([OWN_WORKFLOWS.templates, OWN_WORKFLOWS.flow]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [*(f"OK JobTemplate default/{n}" for n in
                                  ("prepare", "train", "evaluate", "quantize", "publish")),
                                "OK JobFlow default/training-pipeline"]
    assert err == ""


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_example_workflows_are_ok(origin: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = workflow_files(origin)
    paths = [files.cronjob, files.templates, files.flow]
    assert run_validate(paths) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"OK {d['kind']} {d['metadata'].get('namespace', 'default')}/{d['metadata']['name']}"
                                for p in paths for d in load(p)]
    assert err == ""


def test_the_admitted_cronjob_carries_the_crds_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_validate([OWN_WORKFLOWS.cronjob], output="yaml") == 0
    spec = yaml.safe_load(capsys.readouterr().out)["spec"]
    assert spec["suspend"] is False and spec["concurrencyPolicy"] == "Forbid"
    assert spec["jobTemplate"]["spec"]["maxRetry"] == 3


WORKFLOWS = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: twice}
spec:
  tasks:
  - {name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}
  - {name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f}
spec:
  flows: [{name: twice}, {name: missing, dependsOn: {targets: [twice]}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: c}
spec:
  schedule: "@hourly"
  jobTemplate:
    spec:
      queue: nowhere
      tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]
"""


def test_workflows_whose_jobs_cannot_be_created_are_valid_with_warnings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(WORKFLOWS, encoding="utf-8")
    assert run_validate([f]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["OK JobTemplate default/twice", "OK JobFlow default/f", "OK CronJob default/c"]
    assert err.splitlines() == [
        f"warning: {f}: document 0: JobTemplate default/twice: spec: the job webhooks would refuse the jobs it "
        "creates: spec.tasks[1].name: duplicated task name 't'",
        f"warning: {f}: document 1: JobFlow default/f: flow 'missing': no JobTemplate default/missing; its job is "
        "created only once that JobTemplate exists",
        f"warning: {f}: document 2: CronJob default/c: spec.jobTemplate.spec: the job webhooks would refuse the jobs "
        'it creates: spec.queue: unable to find job queue: queues.scheduling.volcano.sh "nowhere" not found',
    ]


def test_a_cyclic_flow_is_an_error_naming_file_document_and_field(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cycle.yaml"
    f.write_text("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: loop}\n"
                 "spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}\n",
                 encoding="utf-8")
    assert run_validate([f]) == 2
    assert capsys.readouterr().out == (f"{f}: document 0: JobFlow default/loop: spec.flows[0].dependsOn.targets: "
                                       "jobflow Flow is not DAG\n")
