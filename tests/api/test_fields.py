from typing import Any

import pytest

from pyvolcano.api.fields import FieldTree, unknown_fields

JOB = "batch.volcano.sh/v1alpha1"


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": JOB, "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def test_known_fields_pass() -> None:
    tmpl = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"limits": {"x.io/y": 1}},
         "livenessProbe": {"httpGet": {"path": "/", "port": 80}}}]}}
    assert unknown_fields(job(minAvailable=1, tasks=[{"name": "t", "replicas": 1, "template": tmpl}]), JOB, "Job") == []


def test_unknown_fields_are_found_at_any_depth_with_a_suggestion() -> None:
    tmpl = {"metadata": {"generateName": "x"}, "spec": {"containers": [{"name": "c", "imagePullPolicyy": "Always"}]}}
    got = unknown_fields(job(minAvailble=1, tasks=[{"name": "t", "template": tmpl}]), JOB, "Job")
    assert got == [
        ("spec.minAvailble", 'unknown field "minAvailble"; did you mean "minAvailable"?'),
        # The CRD keeps five fields of an embedded template's metadata.
        ("spec.tasks[0].template.metadata.generateName", 'unknown field "generateName"'),
        ("spec.tasks[0].template.spec.containers[0].imagePullPolicyy",
         'unknown field "imagePullPolicyy"; did you mean "imagePullPolicy"?'),
    ]


def test_values_of_the_wrong_shape_are_left_to_admission() -> None:
    assert unknown_fields(job(tasks={"name": "t"}, policies=[1, "x"]), JOB, "Job") == []


def test_unchecked_kinds_have_no_unknown_fields() -> None:
    assert unknown_fields({"spec": {"anything": 1}}, "apps/v1", "Deployment") == []


def test_a_tree_referring_to_a_missing_type_is_refused() -> None:
    with pytest.raises(ValueError, match="refers to unknown type 'Nope'"):
        FieldTree({"kinds": {"v1 Pod": "Pod"}, "types": {"Pod": {"spec": "Nope"}}})
