"""The common-shape Pod reader gives exactly the general reader's Pod, or leaves the document to it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api.manifest import ManifestError, _Doc, _pod, _pod_common, _Uncommon, load_manifest_text

ABSENT: Any = object()

# Per field: (values a Pod may have, values the general reader refuses). Among the first are
# the usual ones and unusual valid ones (a label value that is a number), which the common
# reader may leave to the general one.
METADATA = {
    "name": (["p-0", "worker-1"], ["", 7, None]),
    "namespace": (["team-a", "", None, ABSENT], [3]),
    "uid": (["u-1", "", ABSENT], [5]),
    "labels": ([{"a": "b"}, {"a": 1}, None, ABSENT], [{1: "b"}, {"a": None}, []]),
    "annotations": ([{"scheduling.k8s.io/group-name": "pg"}, {"x": 2.5}, ABSENT], ["text", {"x": True}]),
    "creationTimestamp": (["2024-01-01T00:00:00Z", 12.5, 3, ABSENT], ["2024-02-30", True]),
    "deletionTimestamp": (["2024-01-01T00:00:01Z", ABSENT], ["bad"]),
    "ownerReferences": ([[{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u",
                           "controller": True}], [{"name": "j"}], ABSENT], [[{"kind": "Job"}], ["x"], "x"]),
}
CONTAINER = {
    "name": (["main", ABSENT], [3, None]),
    "resources": ([{"requests": {"cpu": "1", "memory": "1Gi"}}, {"limits": {"nvidia.com/gpu": 2}},
                   {"requests": {"cpu": 1.5}}, {"requests": None}, None, ABSENT],
                  [{"requests": {"cpu": "1x"}}, {"requests": {"cpu": "-1"}}, {"requests": {"": "1"}},
                   {"requests": {"cpu": True}}, {"requests": ["cpu"]}, "x"]),
    "ports": ([[{"containerPort": 80}], [{"hostPort": 65535, "name": "p"}], ABSENT],
              [[{"hostPort": 65536}], [{"hostPort": -1}], [{"hostPort": True}], ["x"], "x"]),
    "restartPolicy": (["Always", 3, ABSENT], []),
}
SPEC = {
    "schedulerName": (["volcano", "", ABSENT], [1]),
    "nodeName": (["n1", "", None, ABSENT], [4]),
    "priority": ([10, 2**31 - 1, -(2**31), None, ABSENT], [2**31, -(2**31) - 1, True, "5"]),
    "priorityClassName": (["high", ABSENT], [1]),
    "preemptionPolicy": (["Never", "PreemptLowerPriority", "", ABSENT], ["Sometimes"]),
    "nodeSelector": ([{"zone": "a"}, {"zone": 1}, ABSENT], ["x"]),
    "affinity": ([{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}, ABSENT],
        [{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Bogus"}]}]}}}]),
    "tolerations": ([[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], ABSENT], [[{"operator": "Maybe"}]]),
    "topologySpreadConstraints": ([[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
                                   ABSENT], [[{"maxSkew": 0}]]),
    "schedulingGates": ([[{"name": "g"}], ABSENT], [[{}]]),
    "overhead": ([{"cpu": "100m"}, ABSENT], [{"cpu": "x"}]),
}
STATUS = {
    "phase": (["Pending", "Running", "Succeeded", "", ABSENT], ["Lost", 1]),
    "conditions": ([[{"type": "PodScheduled", "status": "False"}, "x"], ABSENT], ["x"]),
    "nominatedNodeName": (["n2", ABSENT], [2]),
}


@st.composite
def _section(draw: st.DrawFn, fields: dict[str, tuple[list[Any], list[Any]]], wrong: str | None) -> dict[str, Any]:
    """A mapping of ``fields``; the one named ``wrong`` (if any) has a refused value."""
    out = {}
    for name, (good, bad) in fields.items():
        value = draw(st.sampled_from(bad if name == wrong and bad else good))
        if value is not ABSENT:
            out[name] = value
    return out


_SECTIONS = {"metadata": METADATA, "spec": SPEC, "container": CONTAINER, "status": STATUS}
_TOP_LEVEL_BAD = {"metadata": [None, "x"], "spec": [None, [], "x"], "status": ["x"], "containers": [[], ["x"]]}
_TARGETS = [(section, name) for section, fields in _SECTIONS.items() for name in fields] + [
    (top, "") for top in _TOP_LEVEL_BAD]


@st.composite
def _pods(draw: st.DrawFn) -> dict[str, Any]:
    """A Pod of valid values (some unusual), or one with exactly one refused value somewhere."""
    section, field = draw(st.sampled_from(_TARGETS)) if draw(st.booleans()) else ("", "")

    def wrong_in(name: str) -> str | None:
        return field if section == name and field else None

    def top(name: str, value: Any) -> Any:
        return draw(st.sampled_from(_TOP_LEVEL_BAD[name])) if section == name and not field else value

    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    doc["metadata"] = top("metadata", draw(_section(METADATA, wrong_in("metadata"))))
    spec = draw(_section(SPEC, wrong_in("spec")))
    containers = [draw(_section(CONTAINER, None)) for _ in range(draw(st.integers(1, 2)))]
    if wrong_in("container"):
        containers[-1] = draw(_section(CONTAINER, wrong_in("container")))
    spec["containers"] = top("containers", containers)
    if draw(st.booleans()):
        spec["initContainers"] = [draw(_section(CONTAINER, None))]
    doc["spec"] = top("spec", spec)
    doc["status"] = top("status", draw(_section(STATUS, wrong_in("status"))))
    return {k: v for k, v in doc.items() if v is not None}


PODS = _pods()


def _general(doc: dict[str, Any]) -> Any:
    try:
        return _pod(_Doc(doc, "f.yaml: document 0"))
    except ManifestError as e:
        return e


@settings(max_examples=1500, deadline=None)
@given(doc=PODS)
def test_common_reader_returns_the_general_readers_pod_or_gives_up(doc: dict[str, Any]) -> None:
    expected = _general(doc)
    try:
        got = _pod_common(doc)
    except _Uncommon:
        return
    assert not isinstance(expected, ManifestError), f"accepted what the general reader refuses: {expected}"
    assert got == expected


@pytest.mark.parametrize("doc", [
    {"metadata": {"name": "p", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "pg"}},
     "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
     "status": {"phase": "Pending"}},
    {"metadata": {"name": "p", "uid": "u", "labels": {"app": "a"}, "creationTimestamp": "2024-01-01T00:00:00Z",
                  "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j",
                                       "uid": "ju", "controller": True}]},
     "spec": {"nodeName": "n1", "priority": 100, "priorityClassName": "high",
              "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}},
                              "ports": [{"containerPort": 8080}]}],
              "tolerations": [{"key": "k", "operator": "Exists"}], "nodeSelector": {"zone": "a"}},
     "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
])
def test_pods_as_snapshots_write_them_take_the_common_reader(doc: dict[str, Any]) -> None:
    doc = {"apiVersion": "v1", "kind": "Pod", **doc}
    assert _pod_common(doc) == _general(doc)


def test_a_refused_pod_gets_the_general_readers_message() -> None:
    text = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
            "spec: {containers: [{name: c, resources: {requests: {cpu: 1x}}}]}\n")
    with pytest.raises(ManifestError, match=r"^f.yaml: document 0 \(Pod ns/p\): spec.containers\[0\].resources"
                                            r".requests.cpu: got '1x'; expected a quantity"):
        load_manifest_text(text, "f.yaml")
