"""End-to-end simulations: controllers, scheduler and kubelets on one virtual clock."""

from __future__ import annotations

from typing import Any

import yaml

from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.runtime import Simulation, SimulationResult
from pyvolcano.simulator.workload import ClusterEvent, Submission

# Without enqueue, allocate admits Pending PodGroups itself (upstream), so a high-priority job
# whose queue is full still gets pods that preempt can place.
PREEMPT_CONF = """
actions: "allocate, preempt, backfill"
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
"""


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": res}}


def job(name: str, *, replicas: int = 2, cpu: str = "1", duration: str | None = "60s", min_available: int | None = None,
        policies: list[dict[str, str]] | None = None, max_retry: int | None = None,
        annotations: dict[str, str] | None = None, priority_class: str | None = None) -> dict[str, Any]:
    tmpl_ann = dict(annotations or {})
    if duration is not None:
        tmpl_ann["pyvolcano.io/duration"] = duration
    spec: dict[str, Any] = {
        "minAvailable": replicas if min_available is None else min_available,
        "schedulerName": "volcano",
        "tasks": [{"name": "worker", "replicas": replicas, "template": {
            "metadata": {"annotations": tmpl_ann},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                     "restartPolicy": "Never", **({"priorityClassName": priority_class} if priority_class else {})},
        }}],
    }
    if policies:
        spec["policies"] = policies
    if max_retry is not None:
        spec["maxRetry"] = max_retry
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def run(objs: list[tuple[float, dict[str, Any]]], *, conf: str | None = None, events: list[ClusterEvent] = (),
        until: float = 24 * 3600, seed: int = 0) -> tuple[SimulationResult, Simulation]:
    config = default_configuration() if conf is None else load_scheduler_conf(conf)
    sim = Simulation(config=config, registry=default_registry(), seed=seed)
    sim.submit([Submission(at, i, "test", yaml.safe_load(yaml.safe_dump(o))) for i, (at, o) in enumerate(objs)])
    sim.cluster_events(list(events))
    return sim.run(until=until), sim


def test_gang_job_waits_until_capacity_frees_then_starts() -> None:
    res, _ = run([(0, node("n1", cpu="4")), (0, job("first", replicas=4, duration="100s")),
                  (10, job("second", replicas=4, duration="50s"))])
    first, second = res.jobs["default/first"], res.jobs["default/second"]
    assert first.phase == second.phase == "Completed"
    assert second.started is not None and first.finished is not None
    assert second.started >= first.finished
    assert second.finished is not None and second.finished - second.started == 50


def test_task_failure_with_restart_job_retries_then_completes() -> None:
    j = job("flaky", policies=[{"event": "PodFailed", "action": "RestartJob"}], max_retry=3,
            annotations={"pyvolcano.io/exit-code": "3", "pyvolcano.io/failing-attempts": "2"})
    res, _ = run([(0, node("n1")), (0, j)])
    rec = res.jobs["default/flaky"]
    assert rec.phase == "Completed"
    assert rec.retry_count == 2


def test_max_retry_exhausted_fails_the_job() -> None:
    j = job("doomed", policies=[{"event": "PodFailed", "action": "RestartJob"}], max_retry=2,
            annotations={"pyvolcano.io/exit-code": "1"})
    res, _ = run([(0, node("n1")), (0, j)])
    assert res.jobs["default/doomed"].phase == "Failed"
    assert res.jobs["default/doomed"].retry_count == 2


def test_high_priority_job_preempts_low_priority_job_which_restarts() -> None:
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
           for n, v in (("high", 1000), ("low", 1))]
    low = job("low", replicas=4, duration="300s", priority_class="low",
              policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    high = job("high", replicas=2, duration="60s", priority_class="high")
    res, sim = run([(0, pcs[0]), (0, pcs[1]), (0, node("n1", cpu="4")), (0, low), (30, high)], conf=PREEMPT_CONF)
    assert res.jobs["default/high"].phase == "Completed"
    assert res.jobs["default/low"].phase == "Completed"
    assert res.jobs["default/low"].retry_count >= 1
    assert any("evict" in what for _t, what in res.timeline)
    assert sim.metrics.jobs and any(j.preemptions for j in sim.metrics.jobs)


# Upstream's shipped Helm chart configuration (installer/helm/chart/volcano/config/
# volcano-scheduler.conf) with the eviction action added.
CHART_PLUGINS = """
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
CHART_PREEMPT_CONF = 'actions: "enqueue, allocate, preempt, backfill"' + CHART_PLUGINS
CHART_RECLAIM_CONF = 'actions: "enqueue, allocate, backfill, reclaim"' + CHART_PLUGINS
RESTART_ON_EVICTION = [{"event": "PodEvicted", "action": "RestartJob"}]


def priority_classes() -> list[tuple[float, dict[str, Any]]]:
    return [(0, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v})
            for n, v in (("high", 1000), ("low", 1))]


def in_queue(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["spec"]["queue"] = name
    return obj


def evictions(res: SimulationResult, reason: str) -> list[str]:
    return [what for _t, what in res.timeline if what.startswith("evict ") and what.endswith(f"({reason})")]


def test_urgent_job_preempts_an_elastic_batch_job_that_fills_the_only_node() -> None:
    batch = job("batch", replicas=8, min_available=2, duration="10m", priority_class="low",
                policies=RESTART_ON_EVICTION)
    urgent = job("urgent", replicas=1, duration="60s", priority_class="high")
    res, sim = run([*priority_classes(), (0, node("n1", cpu="8")), (0, batch), (120, urgent)],
                   conf=CHART_PREEMPT_CONF)
    started = res.jobs["default/urgent"].started
    assert started is not None and started < 130  # not when batch finishes (600 s)
    assert len(evictions(res, "preempt")) == 1
    assert res.jobs["default/batch"].retry_count == 1  # PodEvicted -> RestartJob
    assert res.jobs["default/batch"].phase == res.jobs["default/urgent"].phase == "Completed"
    by_key = {m.key: m for m in sim.metrics.jobs}
    assert by_key["default/batch"].preemptions == 1


def test_preempted_elastic_job_without_policy_keeps_running_and_recreates_the_evicted_pod() -> None:
    batch = job("batch", replicas=8, min_available=2, duration="10m", priority_class="low")
    urgent = job("urgent", replicas=1, duration="60s", priority_class="high")
    res, _ = run([*priority_classes(), (0, node("n1", cpu="8")), (0, batch), (120, urgent)],
                 conf=CHART_PREEMPT_CONF)
    assert len(evictions(res, "preempt")) == 1
    assert res.jobs["default/batch"].retry_count == 0
    assert not any("default/batch Running ->" in what and "Completed" not in what for _t, what in res.timeline)
    assert res.jobs["default/batch"].pods["succeeded"] == 8


def test_job_of_a_lighter_queue_reclaims_from_the_queue_that_holds_the_whole_cluster() -> None:
    queues = [(0, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": n},
                   "spec": {"weight": w}}) for n, w in (("heavy", 2), ("light", 1))]
    batch = in_queue(job("batch", replicas=8, min_available=2, duration="10m", policies=RESTART_ON_EVICTION),
                     "heavy")
    urgent = in_queue(job("urgent", replicas=1, duration="60s"), "light")
    res, _ = run([*queues, (0, node("n1", cpu="8")), (0, batch), (120, urgent)], conf=CHART_RECLAIM_CONF)
    started = res.jobs["default/urgent"].started
    assert started is not None and started < 130
    assert len(evictions(res, "reclaim")) == 1
    assert res.jobs["default/batch"].retry_count == 1
    assert res.jobs["default/batch"].phase == "Completed"


def test_podgroup_turns_running_in_the_session_after_its_pods_bind() -> None:
    # Nothing else happens after the bind, yet upstream's next session sets the PodGroup
    # Running; enqueue's plugins depend on it (an Inqueue PodGroup reserves its minResources).
    res, sim = run([(0, node("n1")), (0, job("solo", replicas=2, duration="300s"))], until=10)
    [pg] = sim.store.list("PodGroup")
    assert pg["status"]["phase"] == "Running"
    assert res.sessions == 3  # enqueue, bind, phase


def test_ray_job_of_upstreams_example_runs_to_completion() -> None:
    # example/integrations/ray/ray-example.yaml, with a duration and requests.
    def ray_task(name: str, replicas: int) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {
            "metadata": {"annotations": {"pyvolcano.io/duration": "60s"}},
            "spec": {"containers": [{"name": name, "image": "bitnami/ray:2.49.0",
                                     "resources": {"requests": {"cpu": "1"}}}], "restartPolicy": "OnFailure"}}}
    ray_job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
               "metadata": {"name": "ray-cluster-job", "namespace": "default"},
               "spec": {"minAvailable": 3, "schedulerName": "volcano", "plugins": {"ray": []}, "queue": "default",
                        "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                        "tasks": [ray_task("head", 1), ray_task("worker", 2)]}}
    res, sim = run([(0, node("n1")), (0, ray_job)], until=30)
    assert res.jobs["default/ray-cluster-job"].phase == "Running"
    assert sim.store.get("Service", "default", "ray-cluster-job-head-svc")
    worker = sim.store.get("Pod", "default", "ray-cluster-job-worker-0")
    assert worker["spec"]["containers"][0]["command"][-1] == (
        "ray start --block --address=ray-cluster-job-head-0.ray-cluster-job:6379")
    res, _ = run([(0, node("n1")), (0, ray_job)])
    assert res.jobs["default/ray-cluster-job"].phase == "Completed"


def test_suspend_and_resume_through_commands() -> None:
    def command(name: str, action: str) -> dict[str, Any]:
        return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                "metadata": {"name": name, "namespace": "default"}, "action": action,
                "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "svc", "uid": ""}}

    res, _ = run([(0, node("n1")), (0, job("svc", duration="600s")), (100, command("suspend", "AbortJob")),
                    (200, command("resume", "ResumeJob"))])
    rec = res.jobs["default/svc"]
    phases = [what for _t, what in res.timeline if what.startswith("job default/svc")]
    assert any("-> Aborted" in p or "-> Aborting" in p for p in phases), phases
    assert rec.phase == "Completed"
    assert rec.finished is not None and rec.finished >= 200 + 600


def test_node_failure_mid_job_fails_its_pods_and_restart_policy_recovers() -> None:
    j = job("resilient", replicas=2, duration="300s", policies=[{"event": "PodFailed", "action": "RestartJob"}],
            max_retry=3)
    res, _ = run([(0, node("n1", cpu="2")), (0, node("n2", cpu="2")), (0, j)],
                 events=[ClusterEvent(60, "NodeDown", "n1", 0, "test")])
    rec = res.jobs["default/resilient"]
    assert any("NodeDown n1" in what for _t, what in res.timeline)
    assert rec.retry_count >= 1
    assert rec.phase == "Completed"


def test_rejected_objects_are_reported_and_the_run_goes_on() -> None:
    bad = job("bad", replicas=1, min_available=5)
    res, _ = run([(0, node("n1")), (0, bad), (0, job("good"))])
    assert [r["name"] for r in res.rejected] == ["default/bad"]
    assert "minAvailable" in res.rejected[0]["error"] or "minavailable" in res.rejected[0]["error"].lower()
    assert res.jobs["default/good"].phase == "Completed"


def test_same_seed_same_json() -> None:
    objs = [(0, node("n1")), (0, node("n2")), *[(float(i * 7), job(f"j{i}", duration=f"{30 + i}s")) for i in range(6)]]
    a, _ = run(objs, seed=3)
    b, _ = run(objs, seed=3)
    ja, jb = a.to_json(), b.to_json()
    ja["stats"].pop("wall_seconds")
    jb["stats"].pop("wall_seconds")
    assert ja == jb


def test_virtual_clock_skips_idle_time() -> None:
    res, _ = run([(0, node("n1")), (0, job("long", duration="10h"))])
    assert res.jobs["default/long"].finished == 1 + 36000
    assert res.sessions < 20


def test_finished_job_cleanup_by_ttl_runs_no_extra_session() -> None:
    def workload(ttl: int | None) -> list[tuple[float, dict[str, Any]]]:
        first = job("first", duration="10s")
        if ttl is not None:
            first["spec"]["ttlSecondsAfterFinished"] = ttl
        return [(0, node("n1")), (0, first), (200, job("second", duration="10s"))]

    kept, kept_sim = run(workload(None))
    cleaned, cleaned_sim = run(workload(60))
    assert [j.phase for j in cleaned.jobs.values()] == ["Completed", "Completed"]
    assert {j["metadata"]["name"] for j in cleaned_sim.store.list("Job")} == {"second"}
    assert {j["metadata"]["name"] for j in kept_sim.store.list("Job")} == {"first", "second"}
    assert cleaned.sessions == kept.sessions


def test_a_job_created_again_after_cleanup_is_waited_for() -> None:
    first = job("again", duration="10s")
    first["spec"]["ttlSecondsAfterFinished"] = 5
    res, _ = run([(0, node("n1")), (0, first), (100, job("again", duration="30s"))])
    rec = res.jobs["default/again"]
    assert rec.submitted == 100 and rec.phase == "Completed"
    assert rec.finished is not None and rec.finished >= 130
    assert res.virtual_seconds == rec.finished


def _hypernode(name: str, *nodes: str) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]}}


TOPOLOGY_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""


def test_hypernodes_created_and_deleted_during_a_run_change_the_schedulers_tree() -> None:
    # two racks of two 4-CPU nodes; a hard job of four whole-node pods fits in neither rack until
    # a four-node HyperNode is created at 30 s
    topology_job = job("wide", replicas=4, cpu="3", duration="60s")
    topology_job["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    objs = [(0, node(f"n{i}")) for i in range(4)]
    objs += [(0, _hypernode("rack-a", "n0", "n1")), (0, _hypernode("rack-b", "n2", "n3")), (0, topology_job),
             (30, _hypernode("row", "n0", "n1", "n2", "n3"))]
    res, sim = run(objs, conf=TOPOLOGY_CONF, until=20)
    assert res.jobs["default/wide"].started is None
    assert sorted(sim.cache.hypernodes) == ["rack-a", "rack-b"]
    res = sim.run(until=200)
    wide = res.jobs["default/wide"]
    assert wide.phase == "Completed" and wide.started is not None and 30 <= wide.started <= 32
    tree = sim.cache.hypernode_tree
    assert tree.nodes("row") == {"n0", "n1", "n2", "n3"} and "rack-a" in tree.hypernodes_of("n0")
    sim.store.delete("HyperNode", None, "rack-a")
    sim.run(until=201)
    assert "rack-a" not in sim.cache.hypernodes and "rack-a" not in tree
    assert tree.hypernodes_of("n0")[0] == "row" and "rack-a" not in tree.hypernodes_of("n0")
