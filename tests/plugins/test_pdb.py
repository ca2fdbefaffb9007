"""pdb: PodDisruptionBudgets drop the eviction victims that would break them (preempt, reclaim,
shuffle; gangpreempt and gangreclaim with ``enableGangEviction``)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.actions.gang_cluster import LOW, Sessions, gang, waiting

from builders import cache_of, node, pdb, pod, podgroup, queue, schedule
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.pdb import Pdb, budgets_by_namespace, filter_victims

LABELS = {"app": "web"}


def conf(actions: str) -> str:
    """gang only says which jobs starve; pdb is the only plugin voting on victims."""
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
    enableReclaimable: false
    enableJobReady: false
  - name: pdb
"""


def running(name: str, group: str = "web", labels: dict[str, str] | None = LABELS, **kw: Any) -> dict[str, Any]:
    return pod(name, group, node_name="n1", phase="Running", labels=labels, **kw)


def web(*budgets: dict[str, Any], preemptor_cpu: str = "1", extra: tuple[dict[str, Any], ...] = ()) -> list[Any]:
    """Two running web pods fill n1 (2 cpu); a pending 'urgent' pod of the same queue waits."""
    return [
        queue("q"), node("n1", cpu="2", memory="4Gi"), *budgets,
        podgroup("web", phase="Running"), running("web-0"), running("web-1"), *extra,
        podgroup("urgent"), pod("urgent-0", "urgent", cpu=preemptor_cpu, memory="1Gi"),
    ]


def test_pdb_drops_victim_that_would_break_budget() -> None:
    out = schedule(*web(pdb("web", LABELS, 0)), conf=conf("preempt"))
    assert out["evictions"] == [] and out["pipelined"] == {}


def test_a_budget_with_room_lets_preempt_evict_one_pod() -> None:
    out = schedule(*web(pdb("web", LABELS, 1)), conf=conf("preempt"))
    assert len(out["evictions"]) == 1 and out["pipelined"] == {"ns/urgent-0": "n1"}


def test_the_budget_is_shared_by_the_victims_of_one_node() -> None:
    # The preemptor needs both pods gone; the budget allows one, so nothing is evicted.
    out = schedule(*web(pdb("web", LABELS, 1), preemptor_cpu="2"), conf=conf("preempt"))
    assert out["evictions"] == []


def test_reclaim_respects_the_budget() -> None:
    docs = [queue("q"), queue("other"), node("n1", cpu="2", memory="4Gi"), pdb("web", LABELS, 0),
            podgroup("web", queue="other", phase="Running"), running("web-0"), running("web-1"),
            podgroup("urgent"), pod("urgent-0", "urgent", cpu="1", memory="1Gi")]
    assert schedule(*docs, conf=conf("reclaim"))["evictions"] == []
    docs[3] = pdb("web", LABELS, 2)
    assert len(schedule(*docs, conf=conf("reclaim"))["evictions"]) == 1


def test_shuffle_evicts_only_what_the_budget_allows() -> None:
    docs = [queue("q"), node("n1", cpu="4", memory="4Gi"), pdb("web", LABELS, 1), podgroup("web", phase="Running"),
            running("web-0"), running("web-1"), running("web-2")]
    shuffle = "actions: shuffle\ntiers:\n- plugins:\n  - name: pdb\n"
    assert len(schedule(*docs, conf=shuffle)["evictions"]) == 1


def tasks_of(*docs: dict[str, Any]) -> list[Any]:
    cache = cache_of(*docs)
    return sorted(cache.tasks.values(), key=lambda t: t.uid)


def test_a_pod_without_labels_is_never_a_victim() -> None:
    tasks = tasks_of(queue("q"), node("n1"), podgroup("web"), running("a", labels=None), running("b"))
    assert [t.name for t in filter_victims({}, tasks)] == ["b"]


def test_a_pod_listed_in_disrupted_pods_does_not_use_the_budget() -> None:
    budget = pdb("web", LABELS, 0, disrupted=["a"])
    tasks = tasks_of(queue("q"), node("n1"), budget, podgroup("web"), running("a"), running("b"))
    cache = cache_of(budget)
    assert [t.name for t in filter_victims(budgets_by_namespace(cache.pod_disruption_budgets), tasks)] == ["a"]


def test_every_matching_budget_must_allow_the_disruption() -> None:
    loose = pdb("loose", {"app": "web"}, 5)
    tight = pdb("tight", {"tier": "front"}, 0)
    tasks = tasks_of(queue("q"), node("n1"), podgroup("web"), running("a", labels={"app": "web", "tier": "front"}),
                     running("b", labels={"app": "web"}))
    cache = cache_of(loose, tight)
    assert [t.name for t in filter_victims(budgets_by_namespace(cache.pod_disruption_budgets), tasks)] == ["b"]


def test_match_expressions_select_as_label_selectors_do() -> None:
    budget = pdb("web", {}, 0)
    budget["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}
    tasks = tasks_of(queue("q"), node("n1"), podgroup("web"), running("a", labels={"app": "api"}),
                     running("b", labels={"app": "db"}))
    cache = cache_of(budget)
    assert [t.name for t in filter_victims(budgets_by_namespace(cache.pod_disruption_budgets), tasks)] == ["b"]


def test_budgets_of_other_namespaces_and_empty_selectors_protect_nothing() -> None:
    elsewhere = pdb("web", LABELS, 0, ns="other")
    everything = pdb("all", {}, 0)
    tasks = tasks_of(queue("q"), node("n1"), podgroup("web"), running("a"))
    cache = cache_of(elsewhere, everything)
    assert [t.name for t in filter_victims(budgets_by_namespace(cache.pod_disruption_budgets), tasks)] == ["a"]


def victim_gang_with_budget(allowed: int) -> list[dict[str, Any]]:
    docs = [LOW, {**LOW, "metadata": {"name": "high"}, "value": 1000}, queue("q"), node("n1", cpu="1", memory="4Gi"),
            *gang("victim", ["n1"], cpu="1"), *waiting("preemptor", 1, cpu="1"), pdb("victim", {"app": "v"}, allowed)]
    for d in docs:
        if d["kind"] == "Pod" and d["metadata"]["name"].startswith("victim"):
            d["metadata"]["labels"] = {"app": "v"}
    return docs


GANG_CONF = """
actions: "allocate, gangpreempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: pdb{args}
- plugins:
  - name: predicates
"""


def test_gangpreempt_ignores_budgets_by_default_as_upstream() -> None:
    out = Sessions(victim_gang_with_budget(0), GANG_CONF.format(args="")).run()
    assert out.evictions == ["ns/victim-0"]


def test_enable_gang_eviction_makes_gangpreempt_respect_budgets() -> None:
    args = "\n    arguments:\n      enableGangEviction: true"
    assert Sessions(victim_gang_with_budget(0), GANG_CONF.format(args=args)).run().evictions == []
    assert Sessions(victim_gang_with_budget(1), GANG_CONF.format(args=args)).run().evictions == ["ns/victim-0"]


def test_a_malformed_argument_is_refused_with_its_name() -> None:
    with pytest.raises(ArgumentError, match="enableGangEviction"):
        Pdb({"enableGangEviction": "sometimes"})
