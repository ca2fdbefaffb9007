"""Loading cluster and workload files for ``simulate``: kinds by apiVersion + kind, strict fields,
duplicates in cluster files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.api.manifest import ManifestError
from pyvolcano.simulator.workload import load_workload

NODE = "apiVersion: {api}\nkind: Node\nmetadata: {{name: {name}}}\nstatus: {{capacity: {{cpu: '4'}}}}\n"
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{weight: 1}}\n"


def write(tmp_path: Path, *docs: str) -> Path:
    p = tmp_path / "f.yaml"
    p.write_text("---\n".join(docs), encoding="utf-8")
    return p


def fails(path: Path, fragment: str, *, cluster: bool) -> None:
    with pytest.raises(ManifestError) as e:
        load_workload(path, cluster=cluster)
    assert str(e.value).startswith(str(path)) and fragment in str(e.value), str(e.value)


def test_node_of_an_unserved_version_is_an_error_not_dropped(tmp_path: Path) -> None:
    path = write(tmp_path, NODE.format(api="v1", name="n1"), NODE.format(api="v2", name="n2"))
    fails(path, 'document 1 (Node n2): apiVersion: no matches for kind "Node" in version "v2"; did you mean "v1"?',
          cluster=True)


def test_an_object_defined_twice_in_a_cluster_file_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, QUEUE.format(name="q1"), NODE.format(api="v1", name="n1"), QUEUE.format(name="q1"))
    fails(path, "document 2 (Queue q1): duplicate Queue q1 (first defined in document 0)", cluster=True)


def test_unknown_fields_are_errors(tmp_path: Path) -> None:
    job = ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
           "spec: {minAvailble: 1, tasks: []}\n")
    fails(write(tmp_path, job), 'document 0 (Job default/j): spec.minAvailble: unknown field "minAvailble"; '
                                'did you mean "minAvailable"?', cluster=False)


def test_a_kubernetes_batch_job_is_not_a_volcano_job(tmp_path: Path) -> None:
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}\n"
    fails(write(tmp_path, job), "apiVersion: batch/v1 Job is not allowed in a workload file", cluster=False)


def test_kinds_pyvolcano_passes_through_are_still_accepted(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"
    subs, _ = load_workload(write(tmp_path, cm, QUEUE.format(name="q")))
    assert [s.kind for s in subs] == ["ConfigMap", "Queue"]


def test_a_kind_that_is_not_a_string_is_an_error(tmp_path: Path) -> None:
    fails(write(tmp_path, "apiVersion: v1\nkind: [Pod]\nmetadata: {name: p}\n"), "kind ['Pod'] is not allowed",
          cluster=False)


def test_dra_objects_in_a_workload_have_their_fields_checked(tmp_path: Path) -> None:
    template = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\n"
                "spec: {spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu, cuont: 2}}]}}}\n")
    fails(write(tmp_path, template), "spec.spec.devices.requests[0].exactly.cuont: unknown field \"cuont\"; did you "
                                     'mean "count"?', cluster=False)


def test_a_runtime_class_belongs_in_a_cluster_file(tmp_path: Path) -> None:
    rc = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n"
    subs, _ = load_workload(write(tmp_path, rc), cluster=True)
    assert [s.key for s in subs] == ["gvisor"]
