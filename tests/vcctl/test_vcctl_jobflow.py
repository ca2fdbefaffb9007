"""vcctl jobflow and jobtemplate: upstream's create, list, get, delete and describe, against the
fake API server, with upstream's example manifests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from kube.fakeapi import FakeApiServer

UPSTREAM = Path(__file__).resolve().parents[1] / "data" / "upstream_examples" / "jobflow"


def test_create_list_get_and_describe_upstreams_example(vc, api: FakeApiServer, tmp_path: Path):
    code, out, err = vc("jobtemplate", "create", "-f", str(UPSTREAM / "JobTemplate.yaml"))
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"Created JobTemplate: default/{n}" for n in "abcde"]
    code, out, err = vc("jobflow", "create", "-f", str(UPSTREAM / "JobFlow.yaml"))
    assert (code, out, err) == (0, "Created JobFlow: default/test\n", "")

    assert vc("jobtemplate", "list")[1].splitlines() == [
        "Name    Namespace    ", *(f"{n}       default      " for n in "abcde")]
    assert vc("jobflow", "list")[1].splitlines() == [
        "Name    Namespace    Phase    Age      ",
        "test    default               5m30s    "]
    assert vc("jobflow", "get", "-N", "test")[1] == vc("jobflow", "list")[1]
    described = yaml.safe_load(vc("jobflow", "describe", "-N", "test")[1])
    assert (described["kind"], described["spec"]["jobRetainPolicy"]) == ("JobFlow", "delete")
    assert list(described) == sorted(described)  # sigs.k8s.io/yaml sorts keys
    assert json.loads(vc("jobtemplate", "describe", "-N", "a", "-o", "json")[1])["metadata"]["name"] == "a"
    every = vc("jobtemplate", "describe")[1].split("\n\n\n")
    assert [yaml.safe_load(d)["metadata"]["name"] for d in every] == list("abcde")


def test_the_phase_is_the_flows_status(vc, api: FakeApiServer):
    vc("jobflow", "create", "-f", str(UPSTREAM / "JobFlow.yaml"))
    flow = api.store.get("JobFlow", "default", "test")
    flow["status"] = {"state": {"phase": "Running"}}
    api.store.update_status(flow)
    assert vc("jobflow", "get", "-N", "test")[1].splitlines()[1].split() == ["test", "default", "Running", "5m30s"]


def test_list_in_another_namespace_and_all_namespaces(vc, api: FakeApiServer, tmp_path: Path):
    flow = yaml.safe_load((UPSTREAM / "JobFlow.yaml").read_text())
    flow["metadata"]["namespace"] = "team"
    f = tmp_path / "team.yaml"
    f.write_text(yaml.safe_dump(flow))
    vc("jobflow", "create", "-f", str(f))
    code, out, err = vc("jobflow", "list")
    assert (code, out, err) == (0, "", "No resources found\n")
    assert vc("jobflow", "list", "-n", "team")[1].splitlines()[1].startswith("test    team")
    assert len(vc("jobflow", "list", "--all-namespaces")[1].splitlines()) == 2


def test_delete_by_name_and_by_file(vc, api: FakeApiServer):
    vc("jobtemplate", "create", "-f", str(UPSTREAM / "JobTemplate.yaml"))
    assert vc("jobtemplate", "delete", "-N", "a") == (0, "Deleted JobTemplate: default/a\n", "")
    code, out, err = vc("jobtemplate", "delete", "-f", str(UPSTREAM / "JobTemplate.yaml"))
    assert code == 1  # "a" is gone already
    assert out.splitlines() == [f"Deleted JobTemplate: default/{n}" for n in "bcde"]
    assert err.startswith("Failed to delete JobTemplate: JobTemplate default/a")
    assert api.store.list("JobTemplate") == []


def test_a_failed_create_is_reported_and_the_rest_created(vc, api: FakeApiServer, tmp_path: Path):
    shutil.copy(UPSTREAM / "JobTemplate.yaml", tmp_path / "t.yaml")
    vc("jobtemplate", "create", "-f", str(UPSTREAM / "JobTemplate.yaml"))
    api.store.delete("JobTemplate", "default", "c")
    code, out, err = vc("jobtemplate", "create", "-f", str(tmp_path / "t.yaml"))
    assert code == 1
    assert out == "Created JobTemplate: default/c\n"
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
    snap.write_text((UPSTREAM / "JobTemplate.yaml").read_text())
    code, out, _err = vc("jobtemplate", "list", "--cluster", str(snap))
    assert code == 0 and len(out.splitlines()) == 6
    code, _out, err = vc("jobtemplate", "delete", "-N", "a", "--cluster", str(snap))
    assert code == 2 and "a snapshot is read-only" in err
