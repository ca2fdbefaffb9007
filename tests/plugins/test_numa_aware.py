"""numa-aware: the cpu manager's hints and CPU choice, the topology-manager policies, the
predicate and score in a session, and the CPUs a bound pod keeps until its node's exporter
reports it (upstream numaaware/*_test.go and the cache's AddUnassignedNumaPods)."""

from __future__ import annotations

import pytest

from builders import cache_of, guaranteed, node, numatopology, open_session, plugin_conf, pod, podgroup, queue
from pyvolcano.api.numatopology import CpuInfo, PodMeta
from pyvolcano.api.objects import Container
from pyvolcano.cache.ingest import apply_event
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.plugins.numa_aware import cpumanager, policy
from pyvolcano.plugins.numa_aware.cpumanager import TopologyHint
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

# cpu_mng_test.go's topology: cpus 0-3 on NUMA node 0 (socket 0, cores 0-1), 4-7 on NUMA node 1.
DETAIL = {c: CpuInfo(numa=c // 4, socket=c // 4, core=c // 2) for c in range(8)}
TOPO = cpumanager.CpuTopology(DETAIL)
N0, N1, BOTH = 0b01, 0b10, 0b11


def cpus(n: int | str) -> Container:
    return Container("main", requests={"cpu": str(n), "memory": "1Gi"}, limits={"cpu": str(n), "memory": "1Gi"})


@pytest.mark.parametrize(("request_", "free", "expected"), [
    (4, range(8), [(N0, True), (N1, True), (BOTH, False)]),  # test-1
    (4, range(1, 8), [(N1, True), (BOTH, False)]),  # test-2
    (5, range(8), [(BOTH, True)]),  # test-3
    (8, range(8), [(BOTH, True)]),  # test-4
    (9, range(8), []),  # test-5
    (4, range(2, 6), [(BOTH, False)]),  # test-6
])
def test_cpu_hints_are_upstreams_for_each_free_set(request_: int, free: range,
                                                    expected: list[tuple[int, bool]]) -> None:
    hints = cpumanager.hints(cpus(request_), TOPO, {}, {"cpu": frozenset(free)})
    assert hints == {"cpu": [TopologyHint(mask, pref) for mask, pref in expected]}


def test_a_fractional_or_missing_cpu_request_has_no_preference() -> None:
    assert cpumanager.hints(cpus("1500m"), TOPO, {}, {"cpu": frozenset(range(8))}) is None
    assert cpumanager.hints(Container("main", requests={"memory": "1Gi"}), TOPO, {}, {"cpu": frozenset()}) is None


@pytest.mark.parametrize(("request_", "free", "best", "taken"), [
    (4, range(8), N0, {0, 1, 2, 3}),  # Test_Allocate test-1
    (4, range(1, 8), N1, {4, 5, 6, 7}),  # test-2
    (5, range(8), BOTH, {0, 1, 2, 3, 4}),  # test-3
    (5, range(1, 8), BOTH, {1, 4, 5, 6, 7}),  # test-4
    (8, range(1, 8), BOTH, set()),  # test-5: not enough cpus
])
def test_allocation_takes_the_cpus_upstream_takes(request_: int, free: range, best: int, taken: set[int]) -> None:
    got = cpumanager.allocate(cpus(request_), TopologyHint(best, True), TOPO, {}, {"cpu": frozenset(free)})
    assert got == {"cpu": frozenset(taken)}


def test_a_reserved_cpu_is_taken_by_topology_and_never_offered() -> None:
    hints = cpumanager.hints(cpus(4), TOPO, {"cpu": "1"}, {"cpu": frozenset(range(8))})
    # cpu 0 is reserved: NUMA node 0 has 3 cpus left, so it gives no single-node hint (test-2's hints).
    assert hints == {"cpu": [TopologyHint(N1, True), TopologyHint(BOTH, False)]}


def H(mask: int, preferred: bool) -> TopologyHint:
    return TopologyHint(mask, preferred)


# policy_{best_effort,restricted,single_numa_node}_test.go: one cpu and one gpu provider.
POLICY_CASES = {
    "test-1": ([H(BOTH, False), H(N0, True)], [H(BOTH, False), H(N0, True)]),
    "test-2": ([H(BOTH, False), H(N1, True)], [H(BOTH, False), H(N1, True)]),
    "test-3": ([H(BOTH, False), H(N0, True), H(N1, True)], [H(BOTH, False), H(N0, True), H(N1, True)]),
    "test-4": ([H(BOTH, False), H(N0, True)], [H(BOTH, False), H(N1, True)]),
    "test-5": ([H(BOTH, False), H(N0, True)], [H(BOTH, True)]),
}


@pytest.mark.parametrize(("policy_name", "case", "best", "admit"), [
    ("best-effort", "test-1", H(N0, True), True),
    ("best-effort", "test-2", H(N1, True), True),
    ("best-effort", "test-3", H(N0, True), True),
    ("best-effort", "test-4", H(N0, False), True),
    ("best-effort", "test-5", H(N0, True), True),
    ("restricted", "test-1", H(N0, True), True),
    ("restricted", "test-4", H(N0, False), False),
    ("restricted", "test-5", H(N0, True), True),
    ("single-numa-node", "test-1", H(N0, True), True),
    ("single-numa-node", "test-3", H(N0, True), True),
    ("single-numa-node", "test-4", H(BOTH, False), False),
    ("single-numa-node", "test-5", H(BOTH, False), False),
])
def test_policies_merge_provider_hints_as_upstream(policy_name: str, case: str, best: TopologyHint,
                                                  admit: bool) -> None:
    cpu, gpu = POLICY_CASES[case]
    assert policy.predicate(policy_name, [0, 1], [{"cpu": cpu}, {"gpu": gpu}]) == (best, admit)


def test_policy_none_admits_without_a_hint() -> None:
    assert policy.predicate("none", [0, 1], []) == (TopologyHint(None, False), True)


def _cluster(*extra: dict, policy_name: str = "single-numa-node", free: str = "0-7") -> list[dict]:
    return [queue("q"), node("n1", cpu="16"), numatopology("n1", policy_name, free), *extra]


def _pod(name: str, n: int, policy_name: str | None = "single-numa-node") -> list[dict]:
    return [podgroup(f"pg-{name}", min_member=1), guaranteed(pod(name, f"pg-{name}", cpu=str(n)), policy_name)]


def _schedule(docs: list[dict], flags: str = "enablePredicate: true", sessions: int = 1,
              cache=None) -> dict:  # type: ignore[no-untyped-def]
    conf = load_scheduler_conf(f"actions: allocate\ntiers:\n- plugins:\n  - name: numa-aware\n    {flags}\n")
    return schedule_objects(cache or cache_of(*docs), conf, default_registry(), sessions=sessions, seed=0)


def test_cpus_a_pod_takes_in_a_session_are_not_offered_to_the_next_pod() -> None:
    out = _schedule(_cluster(*_pod("a", 4), *_pod("b", 4), *_pod("c", 4)))
    assert out["binds"] == {"ns/a": "n1", "ns/b": "n1"}  # NUMA node 0, then 1; c finds no node with 4 free


def test_a_pod_whose_policy_differs_from_the_node_fails_with_the_node_policy_in_the_reason() -> None:
    out = _schedule(_cluster(*_pod("a", 2, "best-effort")))
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/pg-a"]["node_failures"] == {
        "task topology policy[best-effort] is different with node[single-numa-node]": 1}


def test_a_burstable_pod_is_not_checked() -> None:
    docs = [queue("q"), node("n1", cpu="16"), numatopology("n1", "single-numa-node", "2-5"),
            podgroup("pg", min_member=1), pod("a", "pg", cpu="4")]
    pod_doc = docs[-1]
    pod_doc["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = "single-numa-node"
    assert _schedule(docs)["binds"] == {"ns/a": "n1"}


def test_score_prefers_the_node_where_the_pod_spans_fewer_numa_nodes() -> None:
    docs = [queue("q"), node("n1", cpu="16"), node("n2", cpu="16"), numatopology("n1", "best-effort", "2-5"),
            numatopology("n2", "best-effort", "0-7"), *_pod("a", 4, "best-effort")]
    session = open_session(*docs, conf=plugin_conf("numa-aware", {}))
    job = session.jobs["ns/pg-a"]
    [task] = job.tasks.values()
    idx = session.all_node_indices()
    ok, _groups = session.predicate_failures(task, idx)
    assert ok.all()
    assert list(session.node_order_scores(task, idx)) == [0.0, 50.0]
    assert _schedule(docs, "enablePredicate: true\n    enableNodeOrder: true")["binds"] == {"ns/a": "n2"}


def test_a_bound_pod_keeps_its_cpus_until_the_exporter_lists_it() -> None:
    cache = cache_of(*_cluster(*_pod("a", 4)))
    _schedule([], cache=cache)
    held = cache.unassigned_numa["n1"]
    [(meta, sets)] = held.items()
    assert meta == PodMeta("ns-a", "a", "ns") and sets == {"cpu": frozenset({0, 1, 2, 3})}
    # The exporter has not caught up: the next session still sees cpus 0-3 taken.
    assert cache.numa_scheduler_infos()["n1"].free["cpu"] == frozenset(range(4, 8))
    # It reports the pod: the exporter's figures are the truth again, the placement is forgotten.
    reported = numatopology("n1", free="4-7", podAllocations=[{"uid": "ns-a", "name": "a", "namespace": "ns"}])
    apply_event(cache, "MODIFIED", "Numatopology", reported)
    assert cache.numa_scheduler_infos()["n1"].free["cpu"] == frozenset(range(4, 8))
    assert "n1" not in cache.unassigned_numa


def test_deleting_a_bound_pod_releases_the_cpus_it_held() -> None:
    cache = cache_of(*_cluster(*_pod("a", 4)))
    _schedule([], cache=cache)
    cache.delete_pod("ns-a")
    assert cache.numa_scheduler_infos()["n1"].free["cpu"] == frozenset(range(8))


def test_nothing_changes_for_pods_without_numa_needs() -> None:
    docs = [queue("q"), node("n1"), podgroup("pg", min_member=1), pod("a", "pg")]
    assert _schedule(docs)["binds"] == {"ns/a": "n1"}
    session = open_session(*docs, conf=plugin_conf("numa-aware", {}))
    [task] = session.jobs["ns/pg"].tasks.values()
    assert session.predicate_cache_key(task) is not None  # the feasibility memo and replica batch still serve it
