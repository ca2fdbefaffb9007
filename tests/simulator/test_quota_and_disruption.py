"""ResourceQuotas and PodDisruptionBudgets in a simulation: the quota controller's status.used,
the API server's quota admission, the disruption controller's status, and the resourcequota,
pdb and cdp plugins working on them over time."""

from __future__ import annotations

from typing import Any

from builders import node, pdb, queue
from pyvolcano.store.base import Forbidden
from sim_builders import simulate, vcjob

QUOTA_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: resourcequota
"""


def quota(hard: dict[str, str], ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team", "namespace": ns},
            "spec": {"hard": hard}}


def test_the_quota_controller_keeps_status_used_in_step_with_the_pods() -> None:
    _res, sim = simulate([(0, node("n1", cpu="8")), (0, quota({"cpu": "4", "pods": "10"})),
                         (1, vcjob("a", replicas=2, cpu="1", duration="30s"))], conf=QUOTA_CONF, until=10)
    status = sim.store.get("ResourceQuota", "default", "team")["status"]
    assert status == {"hard": {"cpu": "4", "pods": "10"}, "used": {"cpu": "2", "pods": "2"}}
    sim.run(until=100)  # the pods finish: Succeeded pods use nothing
    status = sim.store.get("ResourceQuota", "default", "team")["status"]
    assert status["used"] == {"cpu": "0", "pods": "0"}


def test_podgroups_wait_in_pending_while_the_quota_is_full() -> None:
    res, _sim = simulate([(0, node("n1", cpu="8")), (0, quota({"cpu": "3"})),
                         (1, vcjob("a", replicas=2, cpu="1", duration="60s")),
                         (2, vcjob("b", replicas=2, cpu="1", duration="60s"))], conf=QUOTA_CONF)
    a, b = res.jobs["default/a"], res.jobs["default/b"]
    assert a.started is not None and b.started is not None
    assert b.started >= a.finished  # b's 2 cpu fit in the quota only once a's pods are done
    assert res.rejected == []


def test_the_api_server_refuses_a_pod_over_the_quota() -> None:
    _res, sim = simulate([(0, node("n1", cpu="8")), (0, quota({"cpu": "1"}))], until=5)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x",
                                                                "resources": {"requests": {"cpu": "2"}}}]}}
    try:
        sim.store.create(pod)
    except Forbidden as e:
        assert "exceeded quota: team, requested: cpu=2, used: cpu=0, limited: cpu=1" in str(e)
    else:
        raise AssertionError("the pod was admitted over its quota")


def web(labels: dict[str, str]) -> dict[str, Any]:
    job = vcjob("web", replicas=3, cpu="1", duration=None, min_available=1)
    job["spec"]["tasks"][0]["template"]["metadata"]["labels"] = labels
    return job


def test_the_disruption_controller_counts_the_ready_pods() -> None:
    budget = pdb("web", {"app": "web"}, 0, ns="default")
    budget["spec"]["minAvailable"] = 2
    del budget["status"]
    _res, sim = simulate([(0, node("n1", cpu="8")), (0, budget), (1, web({"app": "web"}))], until=30)
    status = sim.store.get("PodDisruptionBudget", "default", "web")["status"]
    assert status == {"currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "expectedPods": 3,
                      "disruptedPods": {}}


def test_a_percentage_over_a_volcano_jobs_pods_allows_no_disruption() -> None:
    budget = pdb("web", {"app": "web"}, 0, ns="default")
    budget["spec"]["maxUnavailable"] = "50%"
    del budget["status"]
    _res, sim = simulate([(0, node("n1", cpu="8")), (0, budget), (1, web({"app": "web"}))], until=30)
    # A vcjob has no scale subresource: the expected count is unknown, as on a real cluster.
    assert sim.store.get("PodDisruptionBudget", "default", "web")["status"]["disruptionsAllowed"] == 0


PREEMPT_CONF = """
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: {plugin}
- plugins:
  - name: predicates
  - name: proportion
"""


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def preemption(plugin: str, *extra: tuple[float, dict[str, Any]], low: dict[str, Any] | None = None) -> Any:
    low = low or vcjob("low", replicas=2, cpu="1", duration=None, min_available=1, priority_class="low")
    return simulate([(0, node("n1", cpu="2")), (0, queue("default")), (0, priority_class("low", 1)),
                     (0, priority_class("high", 100)), *extra, (1, low),
                     (20, vcjob("high", replicas=1, cpu="1", duration="10s", priority_class="high"))],
                    conf=PREEMPT_CONF.format(plugin=plugin), until=120)


def test_preemption_waits_for_the_disruption_budget() -> None:
    low = vcjob("low", replicas=2, cpu="1", duration=None, min_available=1, priority_class="low")
    low["spec"]["tasks"][0]["template"]["metadata"]["labels"] = {"app": "low"}
    budget = pdb("low", {"app": "low"}, 0, ns="default")
    budget["spec"]["minAvailable"] = 2
    del budget["status"]
    res, _sim = preemption("pdb", (0, budget), low=low)
    assert res.jobs["default/high"].started is None  # both low pods must stay: nothing may go
    res, _sim = preemption("pdb", low=low)
    assert res.jobs["default/high"].started is not None


def test_preemption_waits_for_the_cooldown_on_the_virtual_clock() -> None:
    low = vcjob("low", replicas=2, cpu="1", duration=None, min_available=1, priority_class="low")
    low["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["volcano.sh/cooldown-time"] = "60s"
    res, _sim = preemption("cdp", low=low)
    high = res.jobs["default/high"]
    assert high.started is not None and high.started >= 61  # low's pods were bound at about 1 s


def test_cluster_and_workload_files_take_quotas_and_budgets(tmp_path: Any) -> None:
    import pytest
    import yaml

    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.simulator.workload import load_workload

    budget = pdb("web", {"app": "web"}, 0, ns="default")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), quota({"cpu": "4"}), budget]))
    subs, _ = load_workload(path, cluster=True)
    assert [s.kind for s in subs] == ["Node", "ResourceQuota", "PodDisruptionBudget"]
    assert [s.kind for s in load_workload(path)[0]] == ["Node", "ResourceQuota", "PodDisruptionBudget"]
    budget["spec"]["minAvailble"] = 1
    path.write_text(yaml.safe_dump_all([budget]))
    with pytest.raises(ManifestError, match=r'spec\.minAvailble: unknown field "minAvailble"; did you mean '
                                            r'"minAvailable"\?'):
        load_workload(path)
