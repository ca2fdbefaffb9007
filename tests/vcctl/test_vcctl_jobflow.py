"""vcctl jobflow and jobtemplate: upstream's create, list, get, delete and describe, against the
fake API server, with our training pipeline's JobFlow and JobTemplates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from kube.fakeapi import FakeApiServer
from workflow_examples import OWN_WORKFLOWS

TEMPLATES, FLOW = OWN_WORKFLOWS.templates, OWN_WORKFLOWS.flow
STEPS = ["prepare", "train", "evaluate", "quantize", "publish"]


def test_create_list_get_and_describe_a_pipeline(vc, api: FakeApiServer, tmp_path: Path):
    code, out, err = vc("jobtemplate", "create", "-f", str(TEMPLATES))
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"Created JobTemplate: default/{n}" for n in STEPS]
    code, out, err = vc("jobflow", "create", "-f", str(FLOW))
    assert (code, out, err) == (0, "Created JobFlow: default/training-pipeline\n", "")

    assert vc("jobtemplate", "list")[1].splitlines() == [
        "Name        Namespace    ", *(f"{n:12s}default      " for n in sorted(STEPS))]
    assert vc("jobflow", "list")[1].splitlines() == [
        "Name                 Namespace    Phase    Age      ",
        "training-pipeline    default               5m30s    "]
    assert vc("jobflow", "get", "-N", "training-pipeline")[1] == vc("jobflow", "list")[1]
    described = yaml.safe_load(vc("jobflow", "describe", "-N", "training-pipeline")[1])
    assert (described["kind"], described["spec"]["jobRetainPolicy"]) == ("JobFlow", "delete")
    assert list(described) == sorted(described)  # sigs.k8s.io/yaml sorts keys
    assert json.loads(vc("jobtemplate", "describe", "-N", "train", "-o", "json")[1])["metadata"]["name"] == "train"
    every = vc("jobtemplate", "describe")[1].split("\n\n\n")
    assert [yaml.safe_load(d)["metadata"]["name"] for d in every] == sorted(STEPS)


def test_the_phase_is_the_flows_status(vc, api: FakeApiServer):
    vc("jobflow", "create", "-f", str(FLOW))
    flow = api.store.get("JobFlow", "default", "training-pipeline")
    flow["status"] = {"state": {"phase": "Running"}}
    api.store.update_status(flow)
    assert vc("jobflow", "get", "-N", "training-pipeline")[1].splitlines()[1].split() == [
        "training-pipeline", "default", "Running", "5m30s"]


def test_list_in_another_namespace_and_all_namespaces(vc, api: FakeApiServer, tmp_path: Path):
    flow = yaml.safe_load(FLOW.read_text())
    flow["metadata"]["namespace"] = "team"
    f = tmp_path / "team.yaml"
    f.write_text(yaml.safe_dump(flow))
    vc("jobflow", "create", "-f", str(f))
    code, out, err = vc("jobflow", "list")
    assert (code, out, err) == (0, "", "No resources found\n")
    assert vc("jobflow", "list", "-n", "team")[1].splitlines()[1].startswith("training-pipeline    team")
    assert len(vc("jobflow", "list", "--all-namespaces")[1].splitlines()) == 2


def test_delete_by_name_and_by_file(vc, api: FakeApiServer):
    vc("jobtemplate", "create", "-f", str(TEMPLATES))
    assert vc("jobtemplate", "delete", "-N", "prepare") == (0, "Deleted JobTemplate: default/prepare\n", "")
    code, out, err = vc("jobtemplate", "delete", "-f", str(TEMPLATES))
    assert code == 1  # "prepare" is gone already
    assert out.splitlines() == [f"Deleted JobTemplate: default/{n}" for n in STEPS[1:]]
    assert err.startswith("Failed to delete JobTemplate: JobTemplate default/prepare")
    assert api.store.list("JobTemplate") == []


def test_a_failed_create_is_reported_and_the_rest_created(vc, api: FakeApiServer, tmp_path: Path):
    shutil.copy(TEMPLATES, tmp_path / "t.yaml")
    vc("jobtemplate", "create", "-f", str(TEMPLATES))
    api.store.delete("JobTemplate", "default", "evaluate")
    code, out, err = vc("jobtemplate", "create", "-f", str(tmp_path / "t.yaml"))
    assert code == 1
    assert out == "Created JobTemplate: default/evaluate\n"
    assert err.count("Failed to create JobTemplate:") == 4


def test_usage_mistakes_are_one_error_line_with_exit_2(vc, tmp_path: Path):
    assert vc("jobflow", "get")[0:2] == (2, "")
    assert "name is mandatory to get the particular jobflow details" in vc("jobflow", "get")[2]
    assert "job template name must be specified" in vc("jobtemplate", "delete")[2]
    assert "Unsupported format: xml" in vc("jobflow", "describe", "-o", "xml")[2]
    wrong = tmp_path / "job.yaml"
    wrong.write_text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n")
    code, _out, err = vc("jobflow", "create", "-f", str(wrong))
    assert code == 2 and "document 0: kind: got 'Job'; expected JobFlow" in err
    code, _out, err = vc("jobflow", "get", "-N", "nothing")
    assert code == 1 and err.startswith("error: JobFlow default/nothing")


def test_reading_verbs_work_on_a_snapshot(vc, tmp_path: Path):
    snap = tmp_path / "snap.yaml"
    snap.write_text(TEMPLATES.read_text())
    code, out, _err = vc("jobtemplate", "list", "--cluster", str(snap))
    assert code == 0 and len(out.splitlines()) == 6
    code, _out, err = vc("jobtemplate", "delete", "-N", "prepare", "--cluster", str(snap))
    assert code == 2 and "a snapshot is read-only" in err
