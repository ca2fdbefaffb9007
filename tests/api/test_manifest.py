"""Manifest loading: typed objects, and precise errors for malformed input."""

import pytest

from pyvolcano.api.manifest import ManifestError, load_manifest_text, parse_object

GOOD = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status:
  allocatable: {cpu: "8", memory: 16Gi, nvidia.com/gpu: "4"}
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: team
  annotations: {scheduling.k8s.io/group-name: pg}
spec:
  schedulerName: volcano
  priority: 5
  initContainers:
  - name: init
    resources: {requests: {cpu: "4"}}
  containers:
  - name: a
    resources: {requests: {cpu: "1", memory: 1Gi}}
  - name: b
    resources: {requests: {cpu: 500m}}
  overhead: {cpu: 100m}
"""


def test_loads_typed_objects_with_defaults() -> None:
    objs = load_manifest_text(GOOD, "c.yaml")
    (n,) = objs.nodes
    assert n.capacity == {}
    assert n.allocatable["nvidia.com/gpu"] == "4"
    (p,) = objs.pods
    assert p.uid == "team-p1"
    assert p.phase == "Pending"
    assert p.priority == 5


def test_effective_request_is_max_of_init_and_sum_plus_overhead() -> None:
    from pyvolcano.api.task import pod_resource_request

    (p,) = load_manifest_text(GOOD, "c.yaml").pods
    req = pod_resource_request(p)
    assert req.milli_cpu == 4000 + 100
    assert req.memory == 2**30
    assert req.scalars["pods"] == 1


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n"
         "      requests: {cpu: 1x}\n",
         "document 0 (Pod default/p): spec.containers[0].resources.requests.cpu: got '1x'"),
        ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 1K}}\n",
         "status.allocatable.memory: got '1K'"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: high}\n", "spec.priority: got 'high'"),
        ("apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n", "apiVersion/kind v1/Widget is not supported"),
        ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: -1}\n",
         "spec.minMember"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Sleeping}\n", "status.phase: got 'Sleeping'"),
        ("- just\n- a list\n", "document 0: got"),
        ("apiVersion: v1\nkind: Node\nmetadata: {}\n", "metadata.name: is required"),
        ("key: [unclosed\n", "not valid YAML at line"),
    ],
)
def test_malformed_documents_name_file_document_and_field(doc: str, fragment: str) -> None:
    with pytest.raises(ManifestError) as e:
        load_manifest_text(doc, "bad.yaml")
    assert str(e.value).startswith("bad.yaml")
    assert fragment in str(e.value)


def test_duplicate_objects_are_rejected() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    with pytest.raises(ManifestError, match="duplicate Node n"):
        load_manifest_text(text, "dup.yaml")


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_an_integer_beyond_int64_is_refused_naming_the_field(value: int) -> None:
    text = f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: pc}}\nvalue: {value}\n"
    with pytest.raises(ManifestError, match=r"^c.yaml: document 0 \(PriorityClass pc\): value: got .*; expected an "
                                            r"integer in the int64 range$"):
        load_manifest_text(text, "c.yaml")


def test_an_unhashable_kind_or_api_version_is_an_error_not_a_crash() -> None:
    for doc in ("kind: {}\napiVersion: v1\n", "kind: Pod\napiVersion: {}\n", "kind: [Pod]\napiVersion: v1\n"):
        with pytest.raises(ManifestError, match=r"^c.yaml: document 0: apiVersion/kind .* is not supported"):
            load_manifest_text(doc, "c.yaml")
    assert parse_object({"kind": {}, "apiVersion": []}) is None


def test_a_line_break_in_a_value_is_escaped_in_the_message() -> None:
    with pytest.raises(ManifestError) as e:
        load_manifest_text('apiVersion: v1\nkind: Node\nmetadata: {name: "a\\nb"}\nstatus: {capacity: {cpu: x}}\n',
                           "c.yaml")
    assert "\n" not in str(e.value) and "Node a\\nb" in str(e.value)


def test_a_node_with_a_billion_gpus_is_refused_naming_the_field() -> None:
    text = ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
            "status: {capacity: {cpu: '8', nvidia.com/gpu: '1000000000'}}\n")
    with pytest.raises(ManifestError, match=r"^c.yaml: document 0 \(Node n1\): status.capacity.nvidia.com/gpu: got "
                                            r"'1000000000' \(str\); expected at most 1024 GPUs on one node$"):
        load_manifest_text(text, "c.yaml")
