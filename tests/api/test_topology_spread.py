"""Specification tests for pyvolcano.api.topology_spread (kube-scheduler PodTopologySpread)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api import topology_spread as ts
from pyvolcano.api.topology_spread import SpreadPod

HOST = "kubernetes.io/hostname"
ZONE = "zone"
SKEW = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"

Nodes = dict[str, tuple[dict[str, str], list[dict[str, Any]]]]


def nodes(**zones: str | None) -> Nodes:
    """name=zone (None: no zone label); every node has a hostname label."""
    out: Nodes = {}
    for name, zone in zones.items():
        labels = {HOST: name}
        if zone is not None:
            labels[ZONE] = zone
        out[name] = (labels, [])
    return out


def constraint(
    key: str = ZONE, when: str = "DoNotSchedule", max_skew: int = 1, selector: Any = "web", **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    c["labelSelector"] = {"matchLabels": {"app": selector}} if isinstance(selector, str) else selector
    return c


def web(node: str, n: int = 1, ns: str = "default", **labels: str) -> list[SpreadPod]:
    return [SpreadPod(ns, {"app": "web", **labels}, node) for _ in range(n)]


def verdicts(
    constraints: Sequence[dict[str, Any]],
    existing: list[SpreadPod],
    cluster: Nodes,
    labels: Mapping[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> dict[str, str | None]:
    state = ts.prefilter(
        "default",
        {"app": "web"} if labels is None else labels,
        constraints,
        node_selector,
        affinity,
        tolerations,
        existing,
        cluster,
    )
    return {n: ts.filter_node(state, n, cluster[n][0]) for n in cluster}


# ----------------------------------------------------------------------------- filter


def test_spread_max_skew_rejects_overloaded_domain() -> None:
    cluster = nodes(n1="a", n2="b", n3="c")
    v = verdicts([constraint()], web("n1", 2) + web("n2", 1), cluster)
    # counts a=2, b=1, c=0; min 0: a -> 3 > 1, b -> 2 > 1, c -> 1 ok
    assert v == {"n1": SKEW, "n2": SKEW, "n3": None}
    assert verdicts([constraint(max_skew=2)], web("n1", 2) + web("n2", 1), cluster) == {
        "n1": SKEW,
        "n2": None,
        "n3": None,
    }


def test_node_missing_topology_key_is_rejected_with_missing_label_reason() -> None:
    cluster = nodes(n1="a", n2=None)
    assert verdicts([constraint()], [], cluster) == {"n1": None, "n2": MISSING}


def test_empty_domains_count_towards_the_global_minimum() -> None:
    cluster = nodes(n1="a", n2="a", n3="b")
    # zone b exists (n3) with no pods, so min = 0
    assert verdicts([constraint()], web("n1"), cluster) == {"n1": SKEW, "n2": SKEW, "n3": None}


def test_spread_min_domains_treats_global_min_as_zero() -> None:
    cluster = nodes(n1="a", n2="b")
    existing = web("n1") + web("n2")
    # two domains with one pod each: global min 1, skew 1 + 1 - 1 = 1 fits
    assert verdicts([constraint()], existing, cluster) == {"n1": None, "n2": None}
    # minDomains 3 > 2 eligible domains: global min is 0, skew 2 > 1
    assert verdicts([constraint(minDomains=3)], existing, cluster) == {"n1": SKEW, "n2": SKEW}
    assert verdicts([constraint(minDomains=2)], existing, cluster) == {"n1": None, "n2": None}


def test_pod_not_matching_its_own_selector_adds_no_self_match() -> None:
    cluster = nodes(n1="a", n2="b")
    # a=1, b=0; a "db" pod adds nothing: skew on a = 1 + 0 - 0 = 1 fits
    assert verdicts([constraint()], web("n1"), cluster, labels={"app": "db"}) == {"n1": None, "n2": None}
    # a "web" pod counts itself: skew on a = 1 + 1 - 0 = 2
    assert verdicts([constraint()], web("n1"), cluster) == {"n1": SKEW, "n2": None}
    assert verdicts([constraint()], web("n1", 2), cluster, labels={"app": "db"}) == {"n1": SKEW, "n2": None}


def test_only_same_namespace_non_terminating_pods_count() -> None:
    cluster = nodes(n1="a", n2="b")
    existing = [*web("n1", 3, ns="other"), SpreadPod("default", {"app": "web"}, "n1", terminating=True)]
    assert verdicts([constraint()], existing, cluster) == {"n1": None, "n2": None}


def test_unrestricted_selector_counts_no_pods() -> None:
    # kube-scheduler quirk: countPodsMatchSelector returns 0 for an empty selector
    cluster = nodes(n1="a", n2="b")
    assert verdicts([constraint(selector={})], web("n1", 5), cluster) == {"n1": None, "n2": None}
    # ... while a null selector matches nothing at all (no self match either)
    assert verdicts([constraint(selector=None)], web("n1", 5), cluster) == {"n1": None, "n2": None}


def test_match_label_keys_restrict_counting_to_the_pods_value() -> None:
    cluster = nodes(n1="a", n2="b")
    existing = web("n1", 2, rev="1") + web("n2", 1, rev="2")
    c = [constraint(matchLabelKeys=["rev"])]
    # rev=2: a=0, b=1 -> n2 skew 2 > 1, n1 fits
    assert verdicts(c, existing, cluster, labels={"app": "web", "rev": "2"}) == {"n1": None, "n2": SKEW}
    # without matchLabelKeys all web pods count: a=2, b=1
    assert verdicts([constraint()], existing, cluster, labels={"app": "web", "rev": "2"}) == {
        "n1": SKEW,
        "n2": None,
    }


def test_node_affinity_policy_honor_excludes_non_matching_nodes_from_domains() -> None:
    cluster = nodes(n1="a", n2="b", n3="c")
    cluster["n1"][0]["pool"] = "spot"
    cluster["n2"][0]["pool"] = "spot"
    existing = web("n1") + web("n2")
    selector = {"pool": "spot"}
    # Honor (default): zone c (n3 is not spot) is not a domain: a=1, b=1, min 1 -> skew 1
    assert verdicts([constraint()], existing, cluster, node_selector=selector) == {
        "n1": None,
        "n2": None,
        "n3": None,
    }
    # Ignore: zone c counts as an empty domain, min 0 -> skew 2 on a and b
    assert verdicts([constraint(nodeAffinityPolicy="Ignore")], existing, cluster, node_selector=selector) == {
        "n1": SKEW,
        "n2": SKEW,
        "n3": None,
    }
    # the same through required node affinity
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        }
    }
    assert verdicts([constraint()], existing, cluster, affinity=aff) == {"n1": None, "n2": None, "n3": None}
    assert verdicts([constraint(nodeAffinityPolicy="Ignore")], existing, cluster, affinity=aff) == {
        "n1": SKEW,
        "n2": SKEW,
        "n3": None,
    }


def test_node_taints_policy_honor_excludes_untolerated_nodes() -> None:
    cluster = nodes(n1="a", n2="b")
    cluster["n2"][1].append({"key": "gpu", "effect": "NoSchedule"})
    existing = web("n1")
    # Ignore (default): b=0 is a domain -> n1 skew 2
    assert verdicts([constraint()], existing, cluster)["n1"] == SKEW
    # Honor: zone b is not eligible, only a=1 -> min 1, skew 1
    assert verdicts([constraint(nodeTaintsPolicy="Honor")], existing, cluster)["n1"] is None
    tol = [{"key": "gpu", "operator": "Exists"}]
    assert verdicts([constraint(nodeTaintsPolicy="Honor")], existing, cluster, tolerations=tol)["n1"] == SKEW


def test_nodes_missing_any_constraint_key_are_not_domains() -> None:
    cluster = nodes(n1="a", n2="b")
    del cluster["n2"][0][HOST]
    c = [constraint(ZONE), constraint(HOST, max_skew=5)]
    # n2 lacks the hostname key, so zone b is not a domain: a=1 is the minimum
    v = verdicts(c, web("n1"), cluster)
    assert v == {"n1": None, "n2": MISSING}


def test_multiple_constraints_on_the_same_key_keep_separate_counts() -> None:
    cluster = nodes(n1="a", n2="b")
    existing = web("n1", 2) + [SpreadPod("default", {"app": "db"}, "n2")] * 2
    c = [constraint(max_skew=3), constraint(max_skew=1, selector="db")]
    # web: a=2, b=0 (n1 skew 3 ok); db: a=0, b=2 (n2 skew 2 > 1)
    assert verdicts(c, existing, cluster) == {"n1": None, "n2": SKEW}


def test_schedule_anyway_constraints_do_not_filter() -> None:
    cluster = nodes(n1="a", n2=None)
    state = ts.prefilter(
        "default",
        {"app": "web"},
        [constraint(when="ScheduleAnyway")],
        None,
        None,
        None,
        web("n1", 9),
        cluster,
    )
    assert ts.is_trivial(state)
    assert ts.filter_node(state, "n2", cluster["n2"][0]) is None


def test_with_pod_updates_counts_and_minimum() -> None:
    cluster = nodes(n1="a", n2="b")
    state = ts.prefilter("default", {"app": "web"}, [constraint()], None, None, None, web("n1"), cluster)
    assert ts.filter_node(state, "n1", cluster["n1"][0]) == SKEW
    added = state.with_pod(web("n2")[0], cluster["n2"][0])
    assert added.counts == [{"a": 1, "b": 1}]
    assert ts.filter_node(added, "n1", cluster["n1"][0]) is None
    assert state.counts == [{"a": 1, "b": 0}]  # original untouched
    other_ns = state.with_pod(SpreadPod("x", {"app": "web"}, "n2"), cluster["n2"][0])
    assert other_ns.counts == state.counts


# ----------------------------------------------------------------------------- score


def score(
    constraints: Sequence[dict[str, Any]],
    existing: list[SpreadPod],
    cluster: Nodes,
    candidates: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    **kw: Any,
) -> list[int]:
    out = ts.score_nodes(
        "default",
        {"app": "web"} if labels is None else labels,
        constraints,
        kw.get("node_selector"),
        kw.get("affinity"),
        kw.get("tolerations"),
        existing,
        cluster,
        list(cluster) if candidates is None else candidates,
    )
    return [int(x) for x in out]


def test_zone_spread_score_hand_computed() -> None:
    cluster = nodes(n1="a", n2="a", n3="b")
    existing = web("n1", 2) + web("n3", 1)
    # weight ln(2 + 2); raw a = round(2 * 1.386) = 3, b = round(1.386) = 1
    # normalised 100 * (max + min - s) / max: a -> 100 * 1 / 3 = 33, b -> 100
    assert score([constraint(when="ScheduleAnyway")], existing, cluster) == [33, 33, 100]


def test_hostname_spread_counts_pods_on_the_node_itself() -> None:
    cluster = nodes(n1="a", n2="a", n3="a")
    existing = web("n1", 3) + web("n2", 1)
    # size = 3 candidates: weight ln 5 = 1.609; raw n1 = round(4.828) = 5, n2 = round(1.609) = 2, n3 = 0
    assert score([constraint(HOST, when="ScheduleAnyway")], existing, cluster) == [0, 60, 100]


def test_max_skew_waters_down_differences() -> None:
    cluster = nodes(n1="a", n2="b")
    existing = web("n1", 1)
    # weight ln 4: raw a = round(1.386 + 4) = 5, b = round(0 + 4) = 4 -> a: 100*4/5 = 80, b: 100
    assert score([constraint(when="ScheduleAnyway", max_skew=5)], existing, cluster) == [80, 100]
    assert score([constraint(when="ScheduleAnyway", max_skew=1)], existing, cluster) == [0, 100]


def test_nodes_missing_a_key_score_zero() -> None:
    cluster = nodes(n1="a", n2="b", n3=None)
    assert score([constraint(when="ScheduleAnyway")], web("n1"), cluster) == [0, 100, 0]


def test_all_zero_raw_scores_normalise_to_max() -> None:
    cluster = nodes(n1="a", n2="b", n3=None)
    assert score([constraint(when="ScheduleAnyway")], [], cluster) == [100, 100, 0]


def test_pods_without_schedule_anyway_constraints_score_zero() -> None:
    cluster = nodes(n1="a", n2="b")
    assert score([], web("n1"), cluster) == [0, 0]
    assert score([constraint()], web("n1"), cluster) == [0, 0]
    assert score([constraint(when="ScheduleAnyway")], web("n1"), {}, candidates=[]) == []


def test_score_counts_pods_on_non_candidate_nodes_of_candidate_domains() -> None:
    cluster = nodes(n1="a", n2="a", n3="b", n4="c")
    existing = web("n1", 4) + web("n4", 1)
    # candidates n2 (zone a) and n3 (zone b): zone c is not a candidate domain; size 2
    # raw a = round(4 * ln 4) = round(5.545) = 6, b = 0 -> a: 100 * (6 + 0 - 6) / 6 = 0, b: 100
    assert score([constraint(when="ScheduleAnyway")], existing, cluster, candidates=["n2", "n3"]) == [0, 100]


def test_score_weights_combine_across_constraints() -> None:
    cluster = nodes(n1="a", n2="a", n3="b")
    existing = web("n1", 1) + web("n3", 2)
    c = [constraint(when="ScheduleAnyway"), constraint(HOST, when="ScheduleAnyway")]
    wz, wh = math.log(4), math.log(5)
    raw = [round(1 * wz + 1 * wh), round(1 * wz + 0 * wh), round(2 * wz + 2 * wh)]
    assert raw == [3, 1, 6]
    lo, hi = min(raw), max(raw)
    assert score(c, existing, cluster) == [100 * (hi + lo - s) // hi for s in raw] == [66, 100, 16]


def test_score_honours_node_inclusion_policies() -> None:
    cluster = nodes(n1="a", n2="a", n3="b")
    cluster["n1"][1].append({"key": "dedicated", "effect": "NoSchedule"})
    existing = web("n1", 3)
    c_ignore = [constraint(when="ScheduleAnyway")]
    c_honor = [constraint(when="ScheduleAnyway", nodeTaintsPolicy="Honor")]
    # Ignore: zone a holds 3 pods; Honor: n1 is excluded, so zone a counts 0
    assert score(c_ignore, existing, cluster, candidates=["n2", "n3"]) == [0, 100]
    assert score(c_honor, existing, cluster, candidates=["n2", "n3"]) == [100, 100]


_placements = st.lists(
    st.tuples(st.sampled_from(["n1", "n2", "n3", "n4", "n5"]), st.sampled_from(["web", "db"])), max_size=15
)


@settings(max_examples=60, deadline=None)
@given(
    existing=_placements,
    max_skew=st.integers(1, 4),
    key=st.sampled_from([ZONE, HOST]),
    candidates=st.lists(st.sampled_from(["n1", "n2", "n3", "n4", "n5"]), max_size=5, unique=True),
)
def test_normalised_spread_scores_are_within_0_and_100(
    existing: list[tuple[str, str]], max_skew: int, key: str, candidates: list[str]
) -> None:
    cluster = nodes(n1="a", n2="a", n3="b", n4="c", n5=None)
    pods = [SpreadPod("default", {"app": app}, node) for node, app in existing]
    out = score(
        [constraint(key, when="ScheduleAnyway", max_skew=max_skew)], pods, cluster, candidates=candidates
    )
    assert len(out) == len(candidates)
    assert all(0 <= s <= 100 for s in out)
    for name, s in zip(candidates, out):
        if key not in cluster[name][0]:
            assert s == 0


@settings(max_examples=60, deadline=None)
@given(existing=_placements)
def test_filter_admits_the_least_loaded_domain(existing: list[tuple[str, str]]) -> None:
    cluster = nodes(n1="a", n2="a", n3="b", n4="c", n5=None)
    pods = [SpreadPod("default", {"app": app}, node) for node, app in existing]
    v = verdicts([constraint()], pods, cluster)
    counts = {"a": 0, "b": 0, "c": 0}
    for node, app in existing:
        zone = cluster[node][0].get(ZONE)
        if app == "web" and zone is not None:
            counts[zone] += 1
    lo = min(counts.values())
    for name in ("n1", "n2", "n3", "n4"):
        zone = cluster[name][0][ZONE]
        assert (v[name] is None) == (counts[zone] + 1 - lo <= 1)
    assert v["n5"] == MISSING
