"""HyperNode admission: the CRD's rules and upstream's validatehypernode.volcano.sh webhook
(cases of ``pkg/webhooks/admission/hypernodes/validate`` and its e2e test)."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.store import InMemoryStore
from pyvolcano.store.base import Invalid


def hypernode(*members: dict[str, Any], name: str = "hypernode-1", tier: int | None = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"members": list(members)}
    if tier is not None:
        spec["tier"] = tier
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def node(**selector: Any) -> dict[str, Any]:
    return {"type": "Node", "selector": selector}


def errors(store: InMemoryStore, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return list(e.value.errors)


@pytest.mark.parametrize("member", [
    node(exactMatch={"name": "node-1"}),
    node(regexMatch={"pattern": "node-[0-9]+"}),
    node(labelMatch={"matchLabels": {"topology-rack": "rack1"}}),
    node(labelMatch={"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]}]}),
    {"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}},
])
def test_valid_hypernodes_are_admitted(store: InMemoryStore, member: dict[str, Any]) -> None:
    store.create(hypernode(member))
    assert store.get("HyperNode", None, "hypernode-1")["spec"]["members"] == [member]


def test_tier_zero_and_no_tier_are_admitted(store: InMemoryStore) -> None:
    store.create(hypernode(node(exactMatch={"name": "n"}), name="a", tier=0))
    store.create(hypernode(node(exactMatch={"name": "n"}), name="b", tier=None))


@pytest.mark.parametrize(("members", "expected"), [
    ([node(regexMatch={"pattern": "a(b"})],
     [("spec.members[0].selector.regexMatch.pattern",
       'Invalid value: "a(b": member regexMatch pattern is invalid: error parsing regexp: '
       "missing ), unterminated subpattern: `a(b`")]),
    ([node(regexMatch={"pattern": ""})],
     [("spec.members[0].selector.regexMatch.pattern", 'Invalid value: "": member regexMatch pattern is required')]),
    ([node(exactMatch={"name": ""})],
     [("spec.members[0].selector.exactMatch.name", 'Invalid value: "": member exactMatch name is required')]),
    ([node(exactMatch={"name": "Node_with_invalid@characters"})],
     [("spec.members[0].selector.exactMatch.name",
       'Invalid value: "Node_with_invalid@characters": member exactMatch validate failed [name part must consist '
       "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
       "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]")]),
    ([node()],
     [("spec.members[0].selector",
       'Invalid value: "object": Either ExactMatch or RegexMatch or LabelMatch must be specified')]),
    ([node(exactMatch={"name": "a"}, labelMatch={"matchLabels": {"a": "b"}})],
     [("spec.members[0].selector",
       'Invalid value: "object": Only one of ExactMatch, RegexMatch, or LabelMatch can be specified')]),
    ([{"type": "Switch", "selector": {"exactMatch": {"name": "a"}}}],
     [("spec.members[0].type", 'Invalid value: "Switch": unknown member type Switch')]),
    ([], [("spec.members", "Required value: member must have at least one member")]),
])
def test_invalid_hypernodes_are_refused_with_upstreams_messages(store: InMemoryStore, members: list[dict[str, Any]],
                                                                expected: list[tuple[str, str]]) -> None:
    assert errors(store, hypernode(*members)) == expected


def test_every_member_is_checked_and_all_problems_reported_together(store: InMemoryStore) -> None:
    got = errors(store, hypernode(node(exactMatch={"name": "ok"}), {"type": "Rack", "selector": {}},
                                  node(regexMatch={"pattern": "("}), tier=-1))
    assert [path for path, _ in got] == ["spec.tier", "spec.members[1].type", "spec.members[1].selector",
                                         "spec.members[2].selector.regexMatch.pattern"]
    assert got[0] == ("spec.tier", "Invalid value: -1: must be greater than or equal to 0")


def test_an_update_is_validated_as_a_create(store: InMemoryStore) -> None:
    created = store.create(hypernode(node(exactMatch={"name": "node-1"})))
    created["spec"]["members"] = [node(regexMatch={"pattern": "node-[1-5]"})]
    store.update(created)
    created = store.get("HyperNode", None, "hypernode-1")
    created["spec"]["members"] = []
    with pytest.raises(Invalid, match="member must have at least one member"):
        store.update(created)


@pytest.mark.parametrize(("obj_spec", "path"), [
    ({"tier": "1"}, "spec.tier"),
    ({"members": {"type": "Node"}}, "spec.members"),
    ({"members": [{"type": "Node", "selector": {"exactMatch": "n1"}}]}, "spec.members[0].selector.exactMatch"),
    ({"members": [{"type": "Node", "selector": {"regexMatch": {"pattern": 7}}}]},
     "spec.members[0].selector.regexMatch.pattern"),
])
def test_wrongly_typed_fields_are_refused_before_validation(store: InMemoryStore, obj_spec: dict[str, Any],
                                                            path: str) -> None:
    obj = hypernode()
    obj["spec"] = obj_spec
    [(got_path, message)] = errors(store, obj)
    assert got_path == path and message.startswith("Invalid value:")


def test_metadata_is_validated_as_for_every_kind(store: InMemoryStore) -> None:
    [(path, _)] = errors(store, hypernode(node(exactMatch={"name": "n"}), name="Bad_Name"))
    assert path == "metadata.name"
