"""The ``hypernodes.topology.volcano.sh`` CRD: its schema stores upstream's HyperNodes unchanged
and refuses what upstream's CRD refuses (the selector's CEL rules aside, which admission applies)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.deploy.crds import custom_resource_definitions, schema_for
from pyvolcano.deploy.schema import validate

TOPOLOGY = Path(__file__).parents[1] / "data" / "conformance_topology"
API = "topology.volcano.sh/v1alpha1"


def _hypernodes() -> list[dict[str, Any]]:
    files = sorted(TOPOLOGY.glob("*/cluster.yaml"))
    return [d for p in files for d in yaml.safe_load_all(p.read_text(encoding="utf-8"))
            if isinstance(d, dict) and d.get("kind") == "HyperNode"]


def _errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    schema = schema_for(API, "HyperNode")
    assert schema is not None
    return validate(doc, schema)


SAMPLE: dict[str, Any] = {
    "apiVersion": API, "kind": "HyperNode", "metadata": {"name": "s0"},
    "spec": {"tier": 1, "tierName": "leaf", "members": [
        {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}},
        {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[0-9]+$"}}},
        {"type": "Node", "selector": {"labelMatch": {
            "matchLabels": {"topology-rack": "rack1"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}},
        {"type": "HyperNode", "selector": {"exactMatch": {"name": "s1"}}},
    ]},
    "status": {"nodeCount": 3, "conditions": [{"type": "Ready", "status": "True", "reason": "Synced", "message": "",
                                              "lastTransitionTime": "2025-01-01T00:00:00Z"}]},
}


def test_crd_is_cluster_scoped_with_a_status_subresource_and_the_selector_rules() -> None:
    crd = next(c for c in custom_resource_definitions() if c["metadata"]["name"] == "hypernodes.topology.volcano.sh")
    [version] = crd["spec"]["versions"]
    assert crd["spec"]["scope"] == "Cluster"
    assert version["subresources"] == {"status": {}}
    selector = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["members"]["items"][
        "properties"]["selector"]
    assert [r["message"] for r in selector["x-kubernetes-validations"]] == [
        "Either ExactMatch or RegexMatch or LabelMatch must be specified",
        "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified",
    ]


def test_every_field_and_the_conformance_hypernodes_are_stored_unchanged() -> None:
    docs = [SAMPLE, *_hypernodes()]
    assert len(docs) > 10
    for doc in docs:
        assert _errors(doc) == [], doc["metadata"]["name"]


@pytest.mark.parametrize(("path", "value", "message"), [
    (["spec", "tier"], -1, "expected at least 0"),
    (["spec", "members"], [], "expected at least 1"),
    (["spec", "members", 0, "type"], "Switch", "expected one of"),
    (["spec", "members", 0, "selector", "exactMatch", "name"], "", "expected at least 1"),
    (["spec", "members", 1, "selector", "regexMatch", "pattern"], "", "expected at least 1"),
    (["status", "nodeCount"], -2, "expected at least 0"),
    (["spec", "members", 0, "selector", "exactMatch", "nmae"], "x", "unknown field"),
])
def test_schema_refuses_a_bad_field(path: list[Any], value: Any, message: str) -> None:
    doc = copy.deepcopy(SAMPLE)
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    assert any(message in m for _, m in _errors(doc)), _errors(doc)
