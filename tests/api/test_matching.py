"""Specification tests for pyvolcano.api.matching (label selectors, node affinity, taints,
host ports, score normalisation, validation)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.api import matching as m
from pyvolcano.api.matching import SelectorError

# ----------------------------------------------------------------------------- helpers


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": t} for w, t in weighted
            ]
        }
    }


# ----------------------------------------------------------------------------- label selectors


def test_null_label_selector_matches_nothing() -> None:
    assert not m.label_selector_matches(None, {})
    assert not m.label_selector_matches(None, {"app": "web"})


def test_empty_label_selector_matches_everything() -> None:
    assert m.label_selector_matches({}, {})
    assert m.label_selector_matches({"matchLabels": {}, "matchExpressions": []}, {"app": "web"})


def test_match_labels_require_equal_values() -> None:
    sel = {"matchLabels": {"app": "web", "tier": "fe"}}
    assert m.label_selector_matches(sel, {"app": "web", "tier": "fe", "x": "y"})
    assert not m.label_selector_matches(sel, {"app": "web"})
    assert not m.label_selector_matches(sel, {"app": "web", "tier": "be"})


def test_match_labels_and_expressions_are_anded() -> None:
    sel = {"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "In", "fe", "be")]}
    assert m.label_selector_matches(sel, {"app": "web", "tier": "be"})
    assert not m.label_selector_matches(sel, {"app": "db", "tier": "be"})
    assert not m.label_selector_matches(sel, {"app": "web"})


def test_not_in_and_does_not_exist_match_absent_key() -> None:
    assert m.label_selector_matches({"matchExpressions": [expr("a", "NotIn", "x")]}, {})
    assert m.label_selector_matches({"matchExpressions": [expr("a", "DoesNotExist")]}, {})
    assert not m.label_selector_matches({"matchExpressions": [expr("a", "DoesNotExist")]}, {"a": ""})
    assert m.label_selector_matches({"matchExpressions": [expr("a", "Exists")]}, {"a": ""})
    assert not m.label_selector_matches({"matchExpressions": [expr("a", "In", "x")]}, {})


def test_label_selector_rejects_gt_operator() -> None:
    with pytest.raises(SelectorError, match=r"matchExpressions\[0\]\.operator: got 'Gt'"):
        m.label_selector_matches({"matchExpressions": [expr("a", "Gt", "1")]}, {"a": "2"})


def test_unknown_selector_operator_error_names_the_path() -> None:
    with pytest.raises(SelectorError) as err:
        m.validate_label_selector(
            {"matchExpressions": [expr("a", "Foo", "x")]}, "spec.affinity.podAffinity.x.labelSelector"
        )
    assert str(err.value) == (
        "spec.affinity.podAffinity.x.labelSelector.matchExpressions[0].operator: "
        "got 'Foo'; expected one of In, NotIn, Exists, DoesNotExist"
    )


@pytest.mark.parametrize(
    ("e", "where"),
    [
        (expr("a", "In"), "values: must be non-empty"),
        (expr("a", "NotIn"), "values: must be non-empty"),
        (expr("a", "Exists", "x"), "values: must be empty"),
        (expr("-bad", "Exists"), ".key: got '-bad'"),
        (expr("a", "In", "not valid!"), "values[0]: got 'not valid!'"),
    ],
)
def test_malformed_requirements_are_rejected(e: dict[str, Any], where: str) -> None:
    with pytest.raises(SelectorError) as err:
        m.validate_label_selector({"matchExpressions": [e]}, "sel")
    assert str(err.value).startswith("sel.matchExpressions[0]")
    assert where in str(err.value)


_label_values = st.text(alphabet="abcxyz019", min_size=1, max_size=4)


@given(value=_label_values, values=st.lists(_label_values, min_size=1, max_size=4))
def test_in_and_not_in_are_complements_when_key_present(value: str, values: list[str]) -> None:
    labels = {"k": value}
    in_ = m.label_selector_matches({"matchExpressions": [expr("k", "In", *values)]}, labels)
    not_in = m.label_selector_matches({"matchExpressions": [expr("k", "NotIn", *values)]}, labels)
    assert in_ != not_in
    assert in_ == (value in values)


@given(labels=st.dictionaries(st.sampled_from(["a", "b", "c"]), _label_values, max_size=3))
def test_exists_and_does_not_exist_are_complements(labels: dict[str, str]) -> None:
    ex = m.label_selector_matches({"matchExpressions": [expr("a", "Exists")]}, labels)
    dne = m.label_selector_matches({"matchExpressions": [expr("a", "DoesNotExist")]}, labels)
    assert ex != dne


# ----------------------------------------------------------------------------- node selector / affinity


def test_node_selector_requires_every_pair() -> None:
    assert m.node_selector_matches(None, {})
    assert m.node_selector_matches({}, {"a": "1"})
    assert m.node_selector_matches({"disk": "ssd"}, {"disk": "ssd", "zone": "a"})
    assert not m.node_selector_matches({"disk": "ssd", "zone": "b"}, {"disk": "ssd", "zone": "a"})
    assert not m.node_selector_matches({"disk": "ssd"}, {})


def test_missing_required_node_affinity_matches_every_node() -> None:
    assert m.required_node_affinity_matches(None, "n1", {})
    assert m.required_node_affinity_matches({}, "n1", {})
    assert m.required_node_affinity_matches({"podAffinity": {}}, "n1", {})
    assert m.required_node_affinity_matches({"nodeAffinity": {}}, "n1", {})


def test_required_node_affinity_terms_are_ored() -> None:
    aff = required(
        {"matchExpressions": [expr("zone", "In", "a")]}, {"matchExpressions": [expr("zone", "In", "b")]}
    )
    assert m.required_node_affinity_matches(aff, "n", {"zone": "a"})
    assert m.required_node_affinity_matches(aff, "n", {"zone": "b"})
    assert not m.required_node_affinity_matches(aff, "n", {"zone": "c"})


def test_required_node_affinity_expressions_within_a_term_are_anded() -> None:
    aff = required({"matchExpressions": [expr("zone", "In", "a"), expr("disk", "Exists")]})
    assert m.required_node_affinity_matches(aff, "n", {"zone": "a", "disk": "ssd"})
    assert not m.required_node_affinity_matches(aff, "n", {"zone": "a"})


def test_empty_node_selector_term_list_matches_nothing() -> None:
    assert not m.required_node_affinity_matches(required(), "n", {"zone": "a"})
    assert not m.required_node_affinity_matches(
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}, "n", {}
    )


def test_term_without_expressions_or_fields_matches_nothing() -> None:
    assert not m.required_node_affinity_matches(required({}), "n", {"zone": "a"})
    assert not m.required_node_affinity_matches(
        required({"matchExpressions": [], "matchFields": []}), "n", {}
    )
    # ... but it does not hide another, matching term
    assert m.required_node_affinity_matches(
        required({}, {"matchExpressions": [expr("zone", "Exists")]}), "n", {"zone": "a"}
    )


def test_gt_operator_compares_integers() -> None:
    aff = required({"matchExpressions": [expr("cores", "Gt", "9")]})
    assert m.required_node_affinity_matches(aff, "n", {"cores": "10"})  # "10" < "9" as strings
    assert not m.required_node_affinity_matches(aff, "n", {"cores": "9"})
    assert not m.required_node_affinity_matches(aff, "n", {"cores": "08"})
    assert not m.required_node_affinity_matches(aff, "n", {"cores": "many"})
    assert not m.required_node_affinity_matches(aff, "n", {})


def test_lt_operator_compares_integers() -> None:
    aff = required({"matchExpressions": [expr("gen", "Lt", "3")]})
    assert m.required_node_affinity_matches(aff, "n", {"gen": "-7"})
    assert m.required_node_affinity_matches(aff, "n", {"gen": "+2"})
    assert not m.required_node_affinity_matches(aff, "n", {"gen": "3"})
    assert not m.required_node_affinity_matches(aff, "n", {"gen": " 2"})


def test_unparsable_term_never_matches_but_other_terms_still_do() -> None:
    aff = required(
        {"matchExpressions": [expr("cores", "Gt", "many")]},
        {"matchExpressions": [expr("zone", "Foo", "a")]},
        {"matchExpressions": [expr("zone", "In", "a")]},
    )
    assert m.required_node_affinity_matches(aff, "n", {"zone": "a", "cores": "5"})
    assert not m.required_node_affinity_matches(aff, "n", {"zone": "b", "cores": "5"})


def test_match_fields_select_node_by_name() -> None:
    aff = required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    assert m.required_node_affinity_matches(aff, "n1", {})
    assert not m.required_node_affinity_matches(aff, "n2", {})
    not_in = required({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]})
    assert m.required_node_affinity_matches(not_in, "n2", {})
    assert not m.required_node_affinity_matches(not_in, "n1", {})


def test_match_fields_and_expressions_in_one_term_are_anded() -> None:
    aff = required(
        {
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
            "matchExpressions": [expr("zone", "In", "a")],
        }
    )
    assert m.required_node_affinity_matches(aff, "n1", {"zone": "a"})
    assert not m.required_node_affinity_matches(aff, "n1", {"zone": "b"})
    assert not m.required_node_affinity_matches(aff, "n2", {"zone": "a"})


def test_node_affinity_filter_needs_node_selector_and_affinity() -> None:
    aff = required({"matchExpressions": [expr("zone", "In", "a")]})
    assert m.pod_matches_node_selector_and_affinity({"disk": "ssd"}, aff, "n", {"zone": "a", "disk": "ssd"})
    assert not m.pod_matches_node_selector_and_affinity({"disk": "ssd"}, aff, "n", {"zone": "a"})
    assert not m.pod_matches_node_selector_and_affinity(
        {"disk": "ssd"}, aff, "n", {"zone": "b", "disk": "ssd"}
    )
    assert m.pod_matches_node_selector_and_affinity(None, None, "n", {})


def test_preferred_node_affinity_score_sums_matching_weights() -> None:
    aff = preferred(
        (10, {"matchExpressions": [expr("zone", "In", "a")]}),
        (5, {"matchExpressions": [expr("disk", "In", "ssd")]}),
        (7, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}),
        (100, {}),
    )  # empty preference never matches
    assert m.preferred_node_affinity_score(aff, "n1", {"zone": "a", "disk": "ssd"}) == 15
    assert m.preferred_node_affinity_score(aff, "n1", {"zone": "a"}) == 10
    assert m.preferred_node_affinity_score(aff, "n9", {"disk": "ssd"}) == 12
    assert m.preferred_node_affinity_score(aff, "n1", {}) == 0
    assert m.preferred_node_affinity_score(None, "n1", {"zone": "a"}) == 0


def test_compiled_required_node_affinity_reports_trivial() -> None:
    assert m.RequiredNodeAffinity(None, None).is_trivial
    assert not m.RequiredNodeAffinity({"a": "b"}, None).is_trivial
    assert not m.RequiredNodeAffinity(None, required()).is_trivial


# ----------------------------------------------------------------------------- taints / tolerations

NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_taint_exists_operator_with_empty_key_tolerates_everything() -> None:
    tol = {"operator": "Exists"}
    for taint in (
        NO_SCHEDULE,
        {"key": "x", "effect": "NoExecute"},
        {"key": "y", "value": "z", "effect": "PreferNoSchedule"},
    ):
        assert m.toleration_tolerates_taint(tol, taint)


def test_toleration_with_empty_effect_matches_all_effects() -> None:
    tol = {"key": "dedicated", "operator": "Equal", "value": "gpu"}
    assert m.toleration_tolerates_taint(tol, NO_SCHEDULE)
    assert m.toleration_tolerates_taint(tol, dict(NO_SCHEDULE, effect="NoExecute"))
    assert not m.toleration_tolerates_taint(dict(tol, effect="NoExecute"), NO_SCHEDULE)


def test_equal_operator_compares_values_and_is_the_default() -> None:
    assert m.toleration_tolerates_taint({"key": "dedicated", "value": "gpu"}, NO_SCHEDULE)
    assert not m.toleration_tolerates_taint({"key": "dedicated", "value": "cpu"}, NO_SCHEDULE)
    assert not m.toleration_tolerates_taint({"key": "dedicated"}, NO_SCHEDULE)
    assert m.toleration_tolerates_taint({"key": "dedicated", "operator": "Exists"}, NO_SCHEDULE)
    assert not m.toleration_tolerates_taint({"key": "other", "operator": "Exists"}, NO_SCHEDULE)


def test_find_untolerated_taint_returns_first_untolerated_no_schedule_or_no_execute() -> None:
    taints = [
        {"key": "soft", "effect": "PreferNoSchedule"},
        NO_SCHEDULE,
        {"key": "evict", "effect": "NoExecute"},
    ]
    assert m.find_untolerated_taint(taints, []) is NO_SCHEDULE
    tols = [{"key": "dedicated", "operator": "Exists"}]
    assert m.find_untolerated_taint(taints, tols) == {"key": "evict", "effect": "NoExecute"}
    assert m.find_untolerated_taint(taints, [*tols, {"key": "evict", "operator": "Exists"}]) is None
    assert m.find_untolerated_taint([], None) is None
    soft = m.find_untolerated_taint(taints, [], effects=("PreferNoSchedule",))
    assert soft is not None and soft["key"] == "soft"


def test_untolerated_taint_reason_matches_kube_scheduler() -> None:
    assert m.untolerated_taint_reason(NO_SCHEDULE) == "node(s) had untolerated taint {dedicated: gpu}"


def test_intolerable_prefer_no_schedule_count_only_uses_relevant_tolerations() -> None:
    taints = [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "effect": "PreferNoSchedule"},
        {"key": "c", "effect": "NoSchedule"},
    ]
    assert m.count_intolerable_prefer_no_schedule(taints, []) == 2
    assert m.count_intolerable_prefer_no_schedule(taints, [{"key": "a", "operator": "Exists"}]) == 1
    assert (
        m.count_intolerable_prefer_no_schedule(
            taints, [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}]
        )
        == 1
    )
    assert (
        m.count_intolerable_prefer_no_schedule(
            taints, [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]
        )
        == 2
    )
    assert m.count_intolerable_prefer_no_schedule(taints, [{"operator": "Exists"}]) == 0


def test_unschedulable_node_needs_unschedulable_toleration() -> None:
    assert m.node_unschedulable_tolerated(False, None)
    assert not m.node_unschedulable_tolerated(True, None)
    assert m.node_unschedulable_tolerated(
        True, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    )


# ----------------------------------------------------------------------------- host ports


def test_pod_host_ports_defaults_ip_and_protocol_and_skips_unset_host_ports() -> None:
    containers = [
        {
            "ports": [
                {"containerPort": 80, "hostPort": 8080},
                {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                {"containerPort": 9090},
            ]
        },
        {"name": "no-ports"},
    ]
    assert m.pod_host_ports(containers) == [("0.0.0.0", "TCP", 8080), ("10.0.0.1", "UDP", 53)]


def test_wildcard_host_ip_conflicts_with_any_ip_on_same_protocol_and_port() -> None:
    used = [("10.0.0.1", "TCP", 80)]
    assert m.host_ports_conflict([("0.0.0.0", "TCP", 80)], used)
    assert not m.host_ports_conflict([("0.0.0.0", "UDP", 80)], used)
    assert not m.host_ports_conflict([("0.0.0.0", "TCP", 81)], used)


def test_specific_host_ip_conflicts_with_same_ip_or_wildcard_only() -> None:
    assert m.host_ports_conflict([("10.0.0.1", "TCP", 80)], [("10.0.0.1", "TCP", 80)])
    assert m.host_ports_conflict([("10.0.0.1", "TCP", 80)], [("0.0.0.0", "TCP", 80)])
    assert not m.host_ports_conflict([("10.0.0.2", "TCP", 80)], [("10.0.0.1", "TCP", 80)])
    assert not m.host_ports_conflict([], [("0.0.0.0", "TCP", 80)])


# ----------------------------------------------------------------------------- normalisation


def test_default_normalize_scales_to_max_with_integer_division() -> None:
    assert m.default_normalize([0, 3, 10]).tolist() == [0, 30, 100]
    assert m.default_normalize([1, 2, 3]).tolist() == [33, 66, 100]
    assert m.default_normalize([1, 2, 3], reverse=True).tolist() == [67, 34, 0]
    assert m.default_normalize([5], max_priority=10).tolist() == [10]


def test_default_normalize_all_zero_is_unchanged_or_max_when_reversed() -> None:
    assert m.default_normalize([0, 0]).tolist() == [0, 0]
    assert m.default_normalize([0, 0], reverse=True).tolist() == [100, 100]
    assert m.default_normalize([]).tolist() == []


def test_default_normalize_truncates_toward_zero_like_go() -> None:
    # max is 4: -3*100/4 = -75, 1*100/4 = 25; 2.9 is truncated to 2 before scaling
    assert m.default_normalize([-3, 1, 4]).tolist() == [-75, 25, 100]
    assert m.default_normalize(np.array([2.9, 4.0])).tolist() == [50, 100]


@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=20), st.booleans())
def test_normalised_scores_are_within_0_and_100(scores: list[int], reverse: bool) -> None:
    out = m.default_normalize(scores, reverse=reverse)
    assert out.shape == (len(scores),)
    assert all(0 <= s <= 100 for s in out.tolist())
    if scores and max(scores) > 0:
        best = int(np.argmax(scores))
        assert out[best] == (0 if reverse else 100)


def test_go_round_is_half_away_from_zero() -> None:
    assert [m.go_round(x) for x in (0.5, 1.5, 2.5, -0.5, 2.4999, 2.7726)] == [1, 2, 3, -1, 2, 3]


# ----------------------------------------------------------------------------- validation


def test_valid_affinity_passes_validation() -> None:
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [expr("zone", "In", "a"), expr("cores", "Gt", "4")],
                        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}],
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "zone",
                    "namespaces": ["prod"],
                    "matchLabelKeys": ["rev"],
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {},
                        "namespaceSelector": {},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        },
    }
    m.validate_node_affinity(aff, "spec.affinity")
    m.validate_node_affinity(None, "spec.affinity")


@pytest.mark.parametrize(
    ("aff", "message"),
    [
        (
            required({"matchExpressions": [expr("zone", "Foo", "a")]}),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].operator: got 'Foo'; "
            "expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
        ),
        (
            required(),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
            "must have at least one node selector term",
        ),
        (
            required({"matchExpressions": [expr("cores", "Gt", "1", "2")]}),
            "nodeSelectorTerms[0].matchExpressions[0].values: "
            "must have exactly one value when operator is Gt",
        ),
        (
            required({"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}),
            "nodeSelectorTerms[0].matchFields[0].key: got 'metadata.labels'; expected metadata.name",
        ),
        (preferred((0, {})), "preferredDuringSchedulingIgnoredDuringExecution[0].weight: got 0;"),
        (
            {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}},
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey: is required",
        ),
        (
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "matchLabelKeys": ["app"]}
                    ]
                }
            },
            "[0].matchLabelKeys: must not be specified when labelSelector is not set",
        ),
        (
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "zone",
                            "labelSelector": {},
                            "matchLabelKeys": ["a"],
                            "mismatchLabelKeys": ["a"],
                        }
                    ]
                }
            },
            "exists in both matchLabelKeys and mismatchLabelKeys",
        ),
        (
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "podAffinityTerm": {
                                "topologyKey": "zone",
                                "labelSelector": {"matchExpressions": [expr("a", "Exists", "x")]},
                            },
                        }
                    ]
                }
            },
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
            ".labelSelector.matchExpressions[0].values: must be empty when operator is Exists",
        ),
        ({"podAffinity": []}, "spec.affinity.podAffinity: got []"),
    ],
)
def test_affinity_validation_errors_name_the_path(aff: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        m.validate_node_affinity(aff, "spec.affinity")
    assert message in str(err.value)
    assert str(err.value).startswith("spec.affinity")


@pytest.mark.parametrize(
    ("tols", "message"),
    [
        (
            [{"key": "a", "operator": "Foo"}],
            "spec.tolerations[0].operator: got 'Foo'; expected one of Equal, Exists",
        ),
        (
            [{"operator": "Equal", "value": "x"}],
            "spec.tolerations[0].operator: must be Exists when key is empty",
        ),
        ([{"key": "a", "operator": "Exists", "value": "x"}], "spec.tolerations[0].value: must be empty"),
        ([{"key": "a", "effect": "Never"}], "spec.tolerations[0].effect: got 'Never'"),
        (
            [{"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5}],
            "spec.tolerations[0].effect: must be NoExecute when tolerationSeconds is set",
        ),
        ({"key": "a"}, "spec.tolerations: got {'key': 'a'}; expected a list"),
    ],
)
def test_toleration_validation_errors_name_the_path(tols: Any, message: str) -> None:
    with pytest.raises(
        SelectorError,
        match="^" + message.replace("[", r"\[").replace("]", r"\]").replace("{", r"\{").replace("}", r"\}"),
    ):
        m.validate_tolerations(tols, "spec.tolerations")


def test_valid_tolerations_and_taints_pass() -> None:
    m.validate_tolerations(
        [{"operator": "Exists"}, {"key": "a", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30}],
        "spec.tolerations",
    )
    m.validate_taints(
        [{"key": "a", "value": "b", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}],
        "spec.taints",
    )


@pytest.mark.parametrize(
    ("taints", "message"),
    [
        ([{"effect": "NoSchedule"}], "spec.taints[0].key: is required"),
        ([{"key": "a"}], "spec.taints[0].effect: is required"),
        ([{"key": "a", "effect": "Sometimes"}], "spec.taints[0].effect: got 'Sometimes'"),
        (
            [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "x", "effect": "NoSchedule"}],
            "spec.taints[1]: duplicate taint a:NoSchedule",
        ),
    ],
)
def test_taint_validation_errors_name_the_path(taints: Any, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        m.validate_taints(taints, "spec.taints")
    assert str(err.value).startswith(message)


SPREAD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"maxSkew": 0},
            "spec.topologySpreadConstraints[0].maxSkew: got 0; expected an integer greater than zero",
        ),
        ({"topologyKey": ""}, "spec.topologySpreadConstraints[0].topologyKey: is required"),
        ({"whenUnsatisfiable": "Never"}, "spec.topologySpreadConstraints[0].whenUnsatisfiable: got 'Never'"),
        ({"minDomains": 0}, "spec.topologySpreadConstraints[0].minDomains: got 0"),
        (
            {"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"},
            "spec.topologySpreadConstraints[0].minDomains: "
            "can only be set when whenUnsatisfiable is DoNotSchedule",
        ),
        ({"nodeTaintsPolicy": "Always"}, "spec.topologySpreadConstraints[0].nodeTaintsPolicy: got 'Always'"),
        (
            {"labelSelector": None, "matchLabelKeys": ["rev"]},
            "spec.topologySpreadConstraints[0].matchLabelKeys: "
            "must not be specified when labelSelector is not set",
        ),
        (
            {"labelSelector": {"matchExpressions": [expr("a", "Gt", "1")]}},
            "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: got 'Gt'",
        ),
    ],
)
def test_spread_constraint_validation_errors_name_the_path(change: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        m.validate_topology_spread_constraints([dict(SPREAD, **change)], "spec.topologySpreadConstraints")
    assert str(err.value).startswith(message)


def test_duplicate_spread_constraints_are_rejected() -> None:
    m.validate_topology_spread_constraints([SPREAD, dict(SPREAD, whenUnsatisfiable="ScheduleAnyway")], "c")
    with pytest.raises(SelectorError, match=r"^c\[1\]: duplicate constraint"):
        m.validate_topology_spread_constraints([SPREAD, dict(SPREAD, maxSkew=2)], "c")
