"""apply_event: which store changes can alter a scheduling decision."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import node, pod, podgroup, queue
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import apply_event
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry


def _with_meta(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj["metadata"]
    md.setdefault("uid", f"{md.get('namespace', '')}/{md['name']}")
    md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    return obj


def _cache(*objs: dict[str, Any]) -> SchedulerCache:
    cache = SchedulerCache()
    for o in objs:
        apply_event(cache, "ADDED", o["kind"], _with_meta(o))
    return cache


def _finished_job(name: str, q: str = "q") -> list[dict[str, Any]]:
    return [podgroup(name, queue=q, phase="Completed"),
            pod(f"{name}-0", name, node_name="n1", phase="Succeeded")]


def test_running_pod_deletion_frees_capacity_and_is_relevant() -> None:
    p = pod("p", "pg", node_name="n1", phase="Running")
    cache = _cache(node("n1"), queue("q"), podgroup("pg", phase="Running"), p)
    epoch = cache.capacity_epoch
    assert apply_event(cache, "DELETED", "Pod", p)
    assert cache.capacity_epoch > epoch


def test_cleanup_of_a_finished_job_is_quiet_while_its_queue_keeps_jobs() -> None:
    done_pg, done_pod = _finished_job("done")
    cache = _cache(node("n1"), queue("q"), podgroup("other", queue="q", phase="Inqueue"), done_pg, done_pod)
    epoch = cache.capacity_epoch
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    assert not apply_event(cache, "DELETED", "PodGroup", done_pg)
    assert cache.capacity_epoch == epoch
    # the job lost its PodGroup too, so its lost pod needs no session either
    assert not cache.take_status_changes()


def test_finished_pod_deletion_of_a_live_job_asks_for_a_session_later() -> None:
    done_pg, done_pod = _finished_job("done")
    cache = _cache(node("n1"), queue("q"), done_pg, done_pod)
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    assert cache.take_status_changes()  # the PodGroup is still there: its counts change
    assert not cache.take_status_changes()


def test_deleting_the_last_job_of_a_queue_is_relevant() -> None:
    done_pg, done_pod = _finished_job("done", q="lonely")
    cache = _cache(node("n1"), queue("q"), queue("lonely"), podgroup("other", queue="q"), done_pg, done_pod)
    assert not apply_event(cache, "DELETED", "Pod", done_pod)
    # proportion's queue set changes: deserved shares can move
    assert apply_event(cache, "DELETED", "PodGroup", done_pg)



def _bind_in_a_session(cache: SchedulerCache) -> list[str]:
    config = load_scheduler_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n')
    registry = default_registry()
    result = run_once(cache, config, registry.plugin_factories(config.plugin_names()),
                               registry.action_factories(config.actions), now=0.0, rng=np.random.default_rng(0))
    return [key for key, _node in result.binds]


def _bound(p: dict[str, Any], phase: str = "Pending") -> dict[str, Any]:
    """The pod as the store reports it after the bind (and, with Running, after the kubelet)."""
    p["spec"]["nodeName"] = "n1"
    p["status"]["phase"] = phase
    return p


def test_bound_pod_that_completes_its_gang_asks_for_the_session_that_sets_the_podgroup_running() -> None:
    # The bind session closes while its tasks are Binding, so the PodGroup stays Inqueue; the
    # next session (upstream runs one every period) would set it Running, which enqueue's
    # plugins read (overcommit and proportion reserve an Inqueue PodGroup's minResources).
    pods = [pod(f"g-{i}", "g") for i in range(2)]
    cache = _cache(node("n1"), queue("q"), podgroup("g", min_member=2, phase="Inqueue"), *pods)
    assert _bind_in_a_session(cache) == ["ns/g-0", "ns/g-1"]
    assert cache.pg_jobs["ns/g"].podgroup.phase == "Inqueue"
    assert apply_event(cache, "MODIFIED", "Pod", _bound(pods[0]))
    # once a session has written Running, the kubelet's updates change nothing
    apply_event(cache, "MODIFIED", "PodGroup", _with_meta(podgroup("g", min_member=2, phase="Running")))
    for p in pods:
        assert not apply_event(cache, "MODIFIED", "Pod", _bound(p, "Running"))


def test_bound_pod_of_a_gang_whose_podgroup_phase_stays_is_quiet() -> None:
    first, second = pod("g-0", "g", node_name="n1", phase="Running"), pod("g-1", "g")
    cache = _cache(node("n1"), queue("q"), podgroup("g", min_member=1, phase="Running"), first, second)
    assert _bind_in_a_session(cache) == ["ns/g-1"]
    assert cache.pg_jobs["ns/g"].podgroup.phase == "Running"
    assert not apply_event(cache, "MODIFIED", "Pod", _bound(second))
    assert not apply_event(cache, "MODIFIED", "Pod", _bound(second, "Running"))


def _partitioned(selector: dict[str, Any], tier: int = 1) -> list[dict[str, Any]]:
    return [{"name": "workers", "subGroupSize": 2, "labelSelector": selector,
             "networkTopology": {"mode": "hard", "highestTierAllowed": tier}}]


def test_a_podgroup_update_of_its_network_topology_reaches_the_cache_and_asks_for_a_session() -> None:
    from pyvolcano.api.network_topology import NetworkTopology

    cache = _cache(node("n1"), queue("q"), podgroup("pg", networkTopology={"mode": "soft"}))
    assert not apply_event(cache, "MODIFIED", "PodGroup",
                           _with_meta(podgroup("pg", networkTopology={"mode": "soft"})))  # nothing changed
    changed = _with_meta(podgroup("pg", networkTopology={"mode": "hard", "highestTierAllowed": 1}))
    assert apply_event(cache, "MODIFIED", "PodGroup", changed)
    assert cache.pg_jobs["ns/pg"].podgroup.network_topology == NetworkTopology("hard", 1)
    assert apply_event(cache, "MODIFIED", "PodGroup", _with_meta(podgroup("pg")))  # the constraint removed
    assert cache.pg_jobs["ns/pg"].podgroup.network_topology is None


def test_a_podgroup_update_of_its_sub_group_policy_is_relevant_even_when_only_the_selector_changes() -> None:
    by_task = {"matchLabels": {"volcano.sh/task-spec": "workers"}}
    cache = _cache(node("n1"), queue("q"), podgroup("pg", subGroupPolicy=_partitioned(by_task)))

    def update(policy: list[dict[str, Any]]) -> bool:
        return apply_event(cache, "MODIFIED", "PodGroup", _with_meta(podgroup("pg", subGroupPolicy=policy)))

    assert not update(_partitioned(by_task))
    assert update(_partitioned(by_task, 2))
    assert cache.pg_jobs["ns/pg"].podgroup.sub_group_policy[0].network_topology.highest_tier_allowed == 2
    other = {"matchLabels": {"volcano.sh/task-spec": "ps"}}
    assert update(_partitioned(other, 2))
    assert cache.pg_jobs["ns/pg"].podgroup.sub_group_policy[0].label_selector == other


def test_an_event_older_than_the_schedulers_own_bind_does_not_make_the_pod_pending_again() -> None:
    from pyvolcano.api.task import TaskStatus
    from pyvolcano.cache.ingest import resync_pod
    from pyvolcano.store.memory import InMemoryStore

    p = pod("p", "pg")
    cache = _cache(node("n1"), queue("q"), podgroup("pg", queue="q", phase="Inqueue"), p)
    task = next(iter(cache.tasks.values()))
    cache.bind(task, "n1")
    # e.g. the PodScheduled condition written before the bind comes back after it
    apply_event(cache, "MODIFIED", "Pod", p)
    task = next(iter(cache.tasks.values()))
    assert (task.status, task.pod.node_name) == (TaskStatus.Bound, "n1")
    # the API server refused the bind: the resync puts back the stored, unbound pod
    class _Store(InMemoryStore):
        def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
            return p

    resync_pod(cache, _Store(), "ns", "p")
    assert len(cache.tasks) == 1
    task = next(iter(cache.tasks.values()))
    assert (task.status, task.pod.node_name) == (TaskStatus.Pending, "")
