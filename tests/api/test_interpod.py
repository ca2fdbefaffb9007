"""Specification tests for pyvolcano.api.interpod (kube-scheduler InterPodAffinity)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api import interpod as ip
from pyvolcano.api.interpod import ExistingPod
from pyvolcano.api.matching import SelectorError

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# n1, n2 in zone a; n3 in zone b; n4 has no zone label
NODES: dict[str, dict[str, str]] = {
    "n1": {HOST: "n1", ZONE: "a"},
    "n2": {HOST: "n2", ZONE: "a"},
    "n3": {HOST: "n3", ZONE: "b"},
    "n4": {HOST: "n4"},
}
ALL = list(NODES)

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"


def term(key: str = ZONE, selector: Any = None, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key, **extra}
    t["labelSelector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    return t


def req(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def pref(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


def pod(
    node: str,
    labels: dict[str, str] | None = None,
    ns: str = "default",
    affinity: dict[str, Any] | None = None,
) -> ExistingPod:
    return ExistingPod(ns, {"app": "web"} if labels is None else labels, node, affinity)


def verdicts(
    affinity: dict[str, Any] | None,
    existing: list[ExistingPod],
    labels: dict[str, str] | None = None,
    ns: str = "default",
    namespace_labels: dict[str, dict[str, str]] | None = None,
) -> dict[str, str | None]:
    state = ip.prefilter(
        ns, {"app": "db"} if labels is None else labels, affinity, existing, NODES, namespace_labels
    )
    return {n: ip.filter_node(state, n, NODES[n]) for n in ALL}


# ----------------------------------------------------------------------------- filter: pod affinity


def test_required_affinity_admits_nodes_in_a_domain_with_a_matching_pod() -> None:
    v = verdicts(req("podAffinity", term()), [pod("n1")])
    assert v == {"n1": None, "n2": None, "n3": AFFINITY_REASON, "n4": AFFINITY_REASON}


def test_node_lacking_topology_key_never_satisfies_affinity() -> None:
    # the matching pod sits on n4, which has no zone: nobody can satisfy the zone term
    v = verdicts(req("podAffinity", term()), [pod("n4")])
    assert v == {n: AFFINITY_REASON for n in ALL}


def test_all_required_terms_must_match_the_same_existing_pod() -> None:
    aff = req(
        "podAffinity",
        term(ZONE, {"matchLabels": {"app": "web"}}),
        term(ZONE, {"matchLabels": {"tier": "fe"}}),
    )
    split = [pod("n1", {"app": "web"}), pod("n3", {"tier": "fe"})]
    assert set(verdicts(aff, split).values()) == {AFFINITY_REASON}
    together = [pod("n3", {"app": "web", "tier": "fe"})]
    assert verdicts(aff, together)["n3"] is None


def test_first_pod_of_self_affine_group_may_schedule() -> None:
    aff = req("podAffinity", term())
    v = verdicts(aff, [pod("n1", {"app": "other"})], labels={"app": "web"})
    # no pod matches anywhere, the pod matches its own term: every node with the key passes
    assert v == {"n1": None, "n2": None, "n3": None, "n4": AFFINITY_REASON}


def test_first_pod_rule_needs_the_pod_to_match_its_own_terms() -> None:
    v = verdicts(req("podAffinity", term()), [], labels={"app": "db"})
    assert set(v.values()) == {AFFINITY_REASON}


def test_first_pod_rule_does_not_apply_once_a_matching_pod_exists() -> None:
    v = verdicts(req("podAffinity", term()), [pod("n3")], labels={"app": "web"})
    assert v == {"n1": AFFINITY_REASON, "n2": AFFINITY_REASON, "n3": None, "n4": AFFINITY_REASON}


def test_null_label_selector_in_term_matches_no_pod() -> None:
    aff = req("podAffinity", {"topologyKey": ZONE, "labelSelector": None})
    assert set(verdicts(aff, [pod("n1")]).values()) == {AFFINITY_REASON}


def test_affinity_term_defaults_to_own_namespace() -> None:
    aff = req("podAffinity", term())
    assert set(verdicts(aff, [pod("n1", ns="other")]).values()) == {AFFINITY_REASON}
    assert verdicts(aff, [pod("n1", ns="default")])["n1"] is None


def test_affinity_term_namespaces_list_replaces_own_namespace() -> None:
    aff = req("podAffinity", term(namespaces=["other"]))
    assert verdicts(aff, [pod("n1", ns="other")])["n1"] is None
    assert verdicts(aff, [pod("n1", ns="default")])["n1"] == AFFINITY_REASON


def test_empty_namespace_selector_selects_all_namespaces() -> None:
    aff = req("podAffinity", term(namespaceSelector={}))
    assert verdicts(aff, [pod("n3", ns="anything")])["n3"] is None


def test_namespace_selector_matches_namespace_labels() -> None:
    aff = req("podAffinity", term(namespaceSelector={"matchLabels": {"team": "x"}}))
    ns_labels = {"tx": {"team": "x"}, "ty": {"team": "y"}}
    assert verdicts(aff, [pod("n3", ns="tx")], namespace_labels=ns_labels)["n3"] is None
    assert verdicts(aff, [pod("n3", ns="ty")], namespace_labels=ns_labels)["n3"] == AFFINITY_REASON
    # an unknown namespace has no labels
    assert verdicts(aff, [pod("n3", ns="tz")], namespace_labels=ns_labels)["n3"] == AFFINITY_REASON
    unlabelled = req(
        "podAffinity",
        term(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
    )
    assert verdicts(unlabelled, [pod("n3", ns="tz")], namespace_labels=ns_labels)["n3"] is None
    # namespaces and namespaceSelector are ORed
    both = req("podAffinity", term(namespaces=["ty"], namespaceSelector={"matchLabels": {"team": "x"}}))
    assert verdicts(both, [pod("n3", ns="ty")], namespace_labels=ns_labels)["n3"] is None


def test_match_label_keys_merge_incoming_pod_label_values() -> None:
    aff = req("podAffinity", term(selector={"matchLabels": {"app": "web"}}, matchLabelKeys=["rev"]))
    existing = [pod("n1", {"app": "web", "rev": "1"}), pod("n3", {"app": "web", "rev": "2"})]
    v = verdicts(aff, existing, labels={"app": "db", "rev": "2"})
    assert v == {"n1": AFFINITY_REASON, "n2": AFFINITY_REASON, "n3": None, "n4": AFFINITY_REASON}
    # a key the pod does not carry is not merged
    v = verdicts(aff, existing, labels={"app": "db"})
    assert v["n1"] is None and v["n3"] is None


def test_mismatch_label_keys_exclude_pods_with_the_incoming_value() -> None:
    anti = req("podAntiAffinity", term(selector={}, mismatchLabelKeys=["tenant"]))
    existing = [pod("n1", {"tenant": "t1"}), pod("n3", {"tenant": "t2"})]
    v = verdicts(anti, existing, labels={"tenant": "t1"})
    assert v == {"n1": None, "n2": None, "n3": ANTI_REASON, "n4": None}


# ----------------------------------------------------------------------------- filter: anti-affinity


def test_anti_affinity_rejects_domains_holding_matching_pods() -> None:
    v = verdicts(req("podAntiAffinity", term()), [pod("n1")])
    assert v == {"n1": ANTI_REASON, "n2": ANTI_REASON, "n3": None, "n4": None}


def test_anti_affinity_by_hostname_rejects_only_that_node() -> None:
    v = verdicts(req("podAntiAffinity", term(HOST)), [pod("n1")])
    assert v == {"n1": ANTI_REASON, "n2": None, "n3": None, "n4": None}


def test_anti_affinity_of_existing_pod_rejects_incoming() -> None:
    guard = pod(
        "n3", {"app": "guard"}, affinity=req("podAntiAffinity", term(ZONE, {"matchLabels": {"app": "db"}}))
    )
    v = verdicts(None, [guard], labels={"app": "db"})
    assert v == {"n1": None, "n2": None, "n3": EXISTING_REASON, "n4": None}
    # an incoming pod the term does not select is unaffected
    assert set(verdicts(None, [guard], labels={"app": "web"}).values()) == {None}


def test_existing_anti_affinity_uses_the_incoming_pods_namespace_labels() -> None:
    guard = pod(
        "n3",
        {},
        ns="sys",
        affinity=req("podAntiAffinity", term(ZONE, {}, namespaceSelector={"matchLabels": {"env": "prod"}})),
    )
    ns_labels = {"prod": {"env": "prod"}}
    assert verdicts(None, [guard], ns="prod", namespace_labels=ns_labels)["n3"] == EXISTING_REASON
    assert verdicts(None, [guard], ns="dev", namespace_labels=ns_labels)["n3"] is None


def test_existing_pod_anti_affinity_defaults_to_its_own_namespace() -> None:
    guard = pod("n3", {}, ns="sys", affinity=req("podAntiAffinity", term(ZONE, {})))
    assert verdicts(None, [guard], ns="default")["n3"] is None
    assert verdicts(None, [guard], ns="sys")["n3"] == EXISTING_REASON


def test_reasons_are_checked_in_kube_scheduler_order() -> None:
    guard = pod("n1", {"app": "web"}, affinity=req("podAntiAffinity", term(ZONE, {})))
    aff = {**req("podAffinity", term()), **req("podAntiAffinity", term(HOST))}
    v = verdicts(aff, [guard], labels={"app": "db"})
    assert v == {"n1": ANTI_REASON, "n2": EXISTING_REASON, "n3": AFFINITY_REASON, "n4": AFFINITY_REASON}


def test_pods_on_unknown_nodes_are_ignored() -> None:
    assert set(verdicts(req("podAntiAffinity", term()), [pod("gone")]).values()) == {None}


# ----------------------------------------------------------------------------- fast paths / state


def test_pod_without_affinity_gets_trivial_state() -> None:
    state = ip.prefilter("default", {"app": "web"}, None, [pod("n1")], NODES)
    assert ip.is_trivial(state)
    assert all(ip.filter_node(state, n, NODES[n]) is None for n in ALL)


def test_existing_anti_affinity_makes_state_non_trivial() -> None:
    guard = pod("n1", {}, affinity=req("podAntiAffinity", term(ZONE, {})))
    assert not ip.is_trivial(ip.prefilter("default", {}, None, [guard], NODES))


def test_has_pod_affinity_terms() -> None:
    assert not ip.has_pod_affinity_terms(None)
    assert not ip.has_pod_affinity_terms({"nodeAffinity": {}})
    assert not ip.has_pod_affinity_terms({"podAffinity": {}})
    assert ip.has_pod_affinity_terms(req("podAntiAffinity", term()))
    assert ip.has_pod_affinity_terms(pref("podAffinity", (1, term())))


def test_with_pod_adds_and_removes_matching_pods() -> None:
    state = ip.prefilter("default", {"app": "db"}, req("podAntiAffinity", term()), [pod("n1")], NODES)
    assert ip.filter_node(state, "n2", NODES["n2"]) == ANTI_REASON
    removed = state.with_pod(pod("n1"), NODES["n1"], -1)
    assert ip.filter_node(removed, "n2", NODES["n2"]) is None
    assert ip.filter_node(state, "n2", NODES["n2"]) == ANTI_REASON  # original untouched
    added = removed.with_pod(pod("n3"), NODES["n3"], +1)
    assert ip.filter_node(added, "n3", NODES["n3"]) == ANTI_REASON


def test_with_pod_tracks_existing_pods_anti_affinity() -> None:
    state = ip.prefilter("default", {"app": "db"}, None, [], NODES)
    guard = pod("n3", {}, affinity=req("podAntiAffinity", term(ZONE, {})))
    added = state.with_pod(guard, NODES["n3"])
    assert ip.filter_node(added, "n3", NODES["n3"]) == EXISTING_REASON
    assert ip.filter_node(added.with_pod(guard, NODES["n3"], -1), "n3", NODES["n3"]) is None


def test_malformed_incoming_term_raises_with_path() -> None:
    bad = req("podAffinity", term(selector={"matchExpressions": [{"key": "a", "operator": "Foo"}]}))
    with pytest.raises(
        SelectorError,
        match=r"^spec\.affinity\.podAffinity\.requiredDuringScheduling"
        r"IgnoredDuringExecution\[0\]\.labelSelector",
    ):
        ip.prefilter("default", {}, bad, [], NODES)


def test_malformed_existing_pod_terms_are_ignored() -> None:
    bad = pod(
        "n1",
        {},
        affinity=req("podAntiAffinity", term(ZONE, {"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
    )
    assert ip.is_trivial(ip.prefilter("default", {}, None, [bad], NODES))


# ----------------------------------------------------------------------------- score


def test_preferred_affinity_and_anti_affinity_score_hand_computed() -> None:
    # +10 per web pod in the zone, -5 per web pod on the host; one web pod on n1
    aff = {**pref("podAffinity", (10, term(ZONE))), **pref("podAntiAffinity", (5, term(HOST)))}
    scores = ip.score_nodes("default", {"app": "db"}, aff, [pod("n1")], NODES, ALL)
    # raw: n1 = 10 - 5 = 5, n2 = 10, n3 = 0, n4 = 0 -> (s - 0) * 100 / 10
    assert scores.tolist() == [50, 100, 0, 0]


def test_existing_pods_required_affinity_counts_with_hard_weight() -> None:
    fan = pod("n3", {"app": "fan"}, affinity=req("podAffinity", term(ZONE, {"matchLabels": {"app": "db"}})))
    other = pod(
        "n1", {"app": "x"}, affinity=pref("podAffinity", (3, term(HOST, {"matchLabels": {"app": "db"}})))
    )
    # raw: n1 = 3 (other's preferred, hostname), n3 = hard weight (zone b), n2 = n4 = 0
    s1 = ip.score_nodes("default", {"app": "db"}, None, [fan, other], NODES, ALL)
    assert s1.tolist() == [100, 0, 33, 0]  # weight 1: n3 = 1 -> int(100 * 1/3)
    s5 = ip.score_nodes("default", {"app": "db"}, None, [fan, other], NODES, ALL, hard_pod_affinity_weight=5)
    assert s5.tolist() == [60, 0, 100, 0]  # n1 = 3/5
    s0 = ip.score_nodes("default", {"app": "db"}, None, [fan, other], NODES, ALL, hard_pod_affinity_weight=0)
    assert s0.tolist() == [100, 0, 0, 0]


def test_existing_pods_preferred_anti_affinity_lowers_score() -> None:
    hater = pod("n1", {}, affinity=pref("podAntiAffinity", (4, term(ZONE, {"matchLabels": {"app": "db"}}))))
    scores = ip.score_nodes("default", {"app": "db"}, None, [hater], NODES, ALL)
    # raw: n1 = n2 = -4, n3 = n4 = 0 -> min -4, max 0
    assert scores.tolist() == [0, 0, 100, 100]


def test_scores_are_zero_without_any_affinity() -> None:
    assert ip.score_nodes("default", {}, None, [pod("n1")], NODES, ALL).tolist() == [0, 0, 0, 0]
    assert ip.score_nodes("default", {}, None, [], NODES, []).tolist() == []


def test_equal_raw_scores_normalise_to_zero() -> None:
    aff = pref("podAffinity", (10, term(ZONE)))
    scores = ip.score_nodes("default", {}, aff, [pod("n1")], NODES, ["n1", "n2"])
    assert scores.tolist() == [0, 0]


def test_score_counts_accumulate_per_topology_value() -> None:
    aff = pref("podAffinity", (2, term(ZONE)))
    existing = [pod("n1"), pod("n2"), pod("n3")]
    # zone a: 2 pods * 2 = 4, zone b: 2 -> n1, n2 = 4; n3 = 2; n4 = 0
    assert ip.score_nodes("default", {}, aff, existing, NODES, ALL).tolist() == [100, 100, 50, 0]


_pods = st.lists(
    st.tuples(
        st.sampled_from([*ALL, "gone"]),
        st.sampled_from(["web", "db", "x"]),
        st.sampled_from(["default", "other"]),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(existing=_pods, w1=st.integers(1, 100), w2=st.integers(1, 100), hard=st.integers(0, 10))
def test_normalised_interpod_scores_are_within_0_and_100(
    existing: list[tuple[str, str, str]], w1: int, w2: int, hard: int
) -> None:
    aff = {**pref("podAffinity", (w1, term(ZONE))), **pref("podAntiAffinity", (w2, term(HOST)))}
    pods = [
        ExistingPod(ns, {"app": app}, node, req("podAffinity", term(HOST, {"matchLabels": {"app": "db"}})))
        for node, app, ns in existing
    ]
    scores = ip.score_nodes("default", {"app": "db"}, aff, pods, NODES, ALL, hard_pod_affinity_weight=hard)
    assert all(0 <= s <= 100 for s in scores.tolist())
    assert scores.max() in (0, 100)
