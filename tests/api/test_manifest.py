"""Manifest loading: typed objects, and precise errors for malformed input."""

import pytest

from builders import node, pod, podgroup, queue, schedule
from pyvolcano.api.manifest import ManifestError, check_queue_parents, load_manifest_text, parse_object

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


# --------------------------------------------------------------------------- the API server's pod defaulting

def _pod_yaml(resources: str, init: str = "") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, resources: "
            f"{resources}}}]\n{init}")


def test_pod_requests_default_from_limits_per_resource() -> None:
    text = _pod_yaml("{requests: {cpu: '1'}, limits: {cpu: '2', nvidia.com/gpu: 8}}",
                     "  initContainers: [{name: i, resources: {limits: {memory: 1Gi}}}]\n")
    (pod,) = load_manifest_text(text).pods
    assert pod.containers[0].requests == {"cpu": "1", "nvidia.com/gpu": 8}  # an explicit request is kept
    assert pod.init_containers[0].requests == {"memory": "1Gi"}


def test_two_pods_with_one_gpu_limit_do_not_share_a_one_gpu_node() -> None:
    docs = [node("n1", **{"nvidia.com/gpu": "1"}), podgroup("g", queue="default", min_member=1)]
    for name in ("a", "b"):
        p = pod(name, "g", cpu=None, memory=None)
        p["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
        docs.append(p)
    out = schedule(queue("default"), *docs)
    assert len(out["binds"]) == 1


# --------------------------------------------------------------------------- value ranges

@pytest.mark.parametrize(("doc", "fragment"), [
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
     "spec.containers: is required; expected at least one container"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: 9223372036854775808, containers: [{name: c}]}\n",
     "spec.priority: got 9223372036854775808 (int); expected a 32-bit integer"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: "
     "{cpu: \"\u0663\"}}}]}\n", "spec.containers[0].resources.requests.cpu: got '\u0663'"),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 2147483648}\n",
     "spec.minMember: got 2147483648 (int); expected a 32-bit integer"),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
     "spec: {weight: 1180591620717411303424}\n", "spec.weight: got 1180591620717411303424 (int); expected a 32-bit"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 100000000000000000000\n",
     "value: got 100000000000000000000 (int); expected a 32-bit integer"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 1000000001\n",
     "value: got 1000000001; the maximum value of a user-defined priority is 1000000000"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-x}\nvalue: 1\n",
     "metadata.name: names with the 'system-' prefix are reserved"),
])
def test_values_outside_their_kubernetes_types_are_rejected(doc: str, fragment: str) -> None:
    with pytest.raises(ManifestError) as e:
        load_manifest_text(doc, "c.yaml")
    assert fragment in str(e.value)


def test_system_priority_classes_keep_their_values() -> None:
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\n" \
           "value: 2000001000\n"
    assert load_manifest_text(text).priority_classes[0].value == 2000001000


# --------------------------------------------------------------------------- queue hierarchy

@pytest.mark.parametrize(("queues", "message"), [
    ([("a", "b"), ("b", "a")], "document 0 (Queue a): spec.parent: queue parents form a cycle: a -> b -> a"),
    ([("root", "a"), ("a", "")], "document 0 (Queue root): spec.parent: queue parents form a cycle: root -> a -> root"),
    ([("a", "a")], "document 0 (Queue a): spec.parent: queue parents form a cycle: a -> a"),
])
def test_queue_parent_cycles_are_errors(queues: list[tuple[str, str]], message: str) -> None:
    text = "---\n".join(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {n}}}\n"
                        f"spec: {{parent: '{p}'}}\n" for n, p in queues)
    objs = load_manifest_text(text, "c.yaml")  # the scheduler itself tolerates a broken tree
    with pytest.raises(ManifestError) as e:
        check_queue_parents(objs, "c.yaml")
    assert str(e.value) == f"c.yaml: {message}"


def test_a_queue_tree_under_root_passes() -> None:
    text = "---\n".join(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {n}}}\n"
                        f"spec: {{parent: '{p}'}}\n" for n, p in (("root", ""), ("a", "root"), ("b", "a"), ("c", "")))
    check_queue_parents(load_manifest_text(text, "c.yaml"), "c.yaml")


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_an_integer_beyond_int64_is_refused_naming_the_field(value: int) -> None:
    text = f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: pc}}\nvalue: {value}\n"
    with pytest.raises(ManifestError, match=r"^c.yaml: document 0 \(PriorityClass pc\): value: got .*; expected a "
                                            r"32-bit integer"):  # value is int32: the narrower bound is named
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


def test_timestamps_are_read_on_the_stores_clock() -> None:
    from pyvolcano.api.manifest import parse_time
    from pyvolcano.store.base import EPOCH, from_rfc3339, to_rfc3339

    assert parse_time(to_rfc3339(0.0)) == 0.0 == from_rfc3339(EPOCH.isoformat())
    assert parse_time("2025-01-01T00:00:00Z") == from_rfc3339("2025-01-01T00:00:00Z") == 366 * 86400.0
    assert parse_time(12.5) == 12.5
