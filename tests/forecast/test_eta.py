"""Start-time estimates: a forward simulation of the current state (pyvolcano.forecast.eta)."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue
from pyvolcano.conf import default_configuration
from pyvolcano.forecast.eta import estimate_starts, format_seconds
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.restore import RuntimePolicy, runtime_of
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.workload import Submission
from pyvolcano.store.base import to_rfc3339

KINDS = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")


def _with_duration(doc: dict[str, Any], duration: str) -> dict[str, Any]:
    doc["metadata"]["annotations"]["pyvolcano.io/duration"] = duration
    doc["spec"]["containers"][0]["image"] = "busybox"  # the store admits what a cluster would
    return doc


def _running(name: str, group: str, *, cpu: str, started: float, created: float, **kw: Any) -> dict[str, Any]:
    d = pod(name, group, cpu=cpu, node_name="n1", phase="Running", **kw)
    d["metadata"]["creationTimestamp"] = to_rfc3339(created)
    d["status"]["startTime"] = to_rfc3339(started)
    return d


def _created(doc: dict[str, Any], at: float) -> dict[str, Any]:
    doc["metadata"]["creationTimestamp"] = to_rfc3339(at)
    return doc


def _estimate(docs: list[dict[str, Any]], keys: list[str], now: float, policy: RuntimePolicy | None = None) -> Any:
    est, _fc = estimate_starts(docs, keys, default_configuration(), default_registry(), now=now,
                               policy=policy or RuntimePolicy())
    return est


def _workload() -> list[Submission]:
    first = [queue("q"), node("n1"), podgroup("a", phase="Pending"), _with_duration(pod("a-0", "a", cpu="3"), "100s")]
    later = [podgroup("b", phase="Pending"), _with_duration(pod("b-0", "b", cpu="3"), "50s")]
    return [Submission(at=0.0, document=i, source="first", obj=d) for i, d in enumerate(first)] + [
        Submission(at=30.0, document=i, source="later", obj=d) for i, d in enumerate(later)]


def test_eta_equals_the_simulated_start_of_the_same_state() -> None:
    config, registry = default_configuration(), default_registry()
    # The whole history, simulated: when does b start?
    full = Simulation(config=config, registry=registry)
    full.submit(_workload())
    started: dict[str, float] = {}

    def on_session(t: float, _result: Any) -> None:
        job = full.cache.pg_jobs.get("ns/b")
        if job is not None and job.is_ready():
            started.setdefault("ns/b", t)

    full.on_session = on_session
    full.run()
    assert 100.0 <= started["ns/b"] <= 102.0  # once a-0 (100 s) has ended
    # The same history stopped at 40 s, its store read back as a snapshot, and estimated.
    part = Simulation(config=config, registry=registry)
    part.submit(_workload())
    part.run(until=40.0)
    docs = [obj for kind in KINDS for obj in part.store.list(kind)]
    assert any(d["kind"] == "Pod" and d["status"]["phase"] == "Running" for d in docs)
    est = _estimate(docs, ["ns/b"], now=40.0)
    assert est["ns/b"].start == started["ns/b"]
    assert est["ns/b"].message == f"in {format_seconds(started['ns/b'] - 40.0)}"


def _vcjob(name: str, replicas: int, cpu: str, duration: str | None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "busybox",
                                                         "resources": {"requests": {"cpu": cpu}}}]}}
    if duration is not None:
        template["metadata"] = {"annotations": {"pyvolcano.io/duration": duration}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "q",
                     "tasks": [{"name": "w", "replicas": replicas, "template": template}]}}


def _vcjob_workload(b_duration: str | None = "50s") -> list[Submission]:
    first = [queue("q"), node("n1"), _vcjob("a", 1, "3", "100s")]
    return [Submission(at=0.0, document=i, source="first", obj=d) for i, d in enumerate(first)] + [
        Submission(at=30.0, document=0, source="later", obj=_vcjob("b", 2, "1500m", b_duration))]


def _vcjob_starts(sim: Simulation, started: dict[str, float]) -> None:
    def on_session(t: float, _result: Any) -> None:
        for key, job in sim.cache.pg_jobs.items():
            if job.is_ready():
                started.setdefault(key.split("/")[1].split("-")[0], t)

    sim.on_session = on_session


def test_eta_of_a_volcano_job_whose_pods_are_not_created_yet_equals_the_simulated_start() -> None:
    config, registry = default_configuration(), default_registry()
    full = Simulation(config=config, registry=registry)
    full.submit(_vcjob_workload())
    started: dict[str, float] = {}
    _vcjob_starts(full, started)
    full.run()
    assert started["b"] >= 100.0  # once a's pod (100 s) has ended and b's controller made its pods
    part = Simulation(config=config, registry=registry)
    part.submit(_vcjob_workload())
    part.run(until=40.0)
    docs = [obj for kind in (*KINDS, "Job") for obj in part.store.list(kind)]
    [b_group] = [d for d in docs if d["kind"] == "PodGroup" and d["metadata"]["name"].startswith("b-")]
    assert (b_group.get("status") or {}).get("phase", "Pending") == "Pending"
    assert not [d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"].startswith("b-")]
    key = f"ns/{b_group['metadata']['name']}"
    est = _estimate(docs, [key], now=40.0)
    assert est[key].start == started["b"], est[key]
    # without its Job the PodGroup would never get pods: the state must carry it
    no_jobs = [d for d in docs if d["kind"] != "Job"]
    assert _estimate(no_jobs, [key], now=40.0)[key].start is None


def test_start_behind_a_volcano_job_pod_of_unknown_runtime_is_unknown() -> None:
    config, registry = default_configuration(), default_registry()
    part = Simulation(config=config, registry=registry)
    part.submit([Submission(at=0.0, document=i, source="s", obj=d) for i, d in enumerate(
        [queue("q"), node("n1"), _vcjob("a", 1, "3", None)])] + [
        Submission(at=30.0, document=0, source="later", obj=_vcjob("b", 2, "1500m", "50s"))])
    part.run(until=40.0)
    docs = [obj for kind in (*KINDS, "Job") for obj in part.store.list(kind)]
    [b_group] = [d for d in docs if d["kind"] == "PodGroup" and d["metadata"]["name"].startswith("b-")]
    key = f"ns/{b_group['metadata']['name']}"
    est = _estimate(docs, [key], now=40.0)[key]
    assert est.start is None and est.unknown_pods == 1 and "1 running pod" in est.message, est


def test_a_plain_podgroup_behind_a_volcano_job_is_estimated_after_the_job_finishes() -> None:
    config, registry = default_configuration(), default_registry()
    part = Simulation(config=config, registry=registry)
    part.submit([Submission(at=0.0, document=i, source="s", obj=d) for i, d in enumerate(
        [queue("q"), node("n1"), _vcjob("a", 1, "3", "100s")])] + [
        Submission(at=30.0, document=i, source="later", obj=d) for i, d in enumerate(
            [podgroup("p", phase="Pending"), _with_duration(pod("p-0", "p", cpu="3"), "10s")])])
    part.run(until=40.0)
    docs = [obj for kind in (*KINDS, "Job") for obj in part.store.list(kind)]
    est = _estimate(docs, ["ns/p"], now=40.0)["ns/p"]
    # the run does not stop when the last Volcano Job finishes: p starts once a's pod has ended
    assert est.start is not None and 100.0 <= est.start <= 102.0, est


def test_running_pod_runtime_counts_from_its_start_time() -> None:
    docs = [queue("q"), node("n1"), _created(podgroup("a", phase="Running"), 900.0),
            _with_duration(_running("a-0", "a", cpu="4", started=970.0, created=900.0), "100s"),
            _created(podgroup("b"), 950.0), _created(pod("b-0", "b", cpu="4"), 950.0)]
    est = _estimate(docs, ["ns/b"], now=1000.0)
    assert est["ns/b"].start == 1070.0
    assert est["ns/b"].message == "in 1m10s"


def test_start_behind_a_running_pod_without_duration_is_unknown_not_invented() -> None:
    docs = [queue("q"), node("n1"), podgroup("a", phase="Running"),
            _running("a-0", "a", cpu="4", started=970.0, created=900.0), podgroup("b"), pod("b-0", "b", cpu="4")]
    est = _estimate(docs, ["ns/b"], now=1000.0)
    assert est["ns/b"].start is None
    assert est["ns/b"].unknown_pods == 1
    assert est["ns/b"].message == "unknown: depends on runtimes of 1 running pod without a duration"


def test_queue_default_runtime_replaces_the_unknown() -> None:
    docs = [queue("q"), node("n1"), podgroup("a", phase="Running"),
            _running("a-0", "a", cpu="4", started=970.0, created=900.0), podgroup("b"), pod("b-0", "b", cpu="4")]
    est = _estimate(docs, ["ns/b"], now=1000.0, policy=RuntimePolicy(per_queue={"q": 200.0}, default=5.0))
    assert est["ns/b"].start == 1170.0
    est = _estimate(docs, ["ns/b"], now=1000.0, policy=RuntimePolicy(per_queue={"other": 200.0}, default=50.0))
    assert est["ns/b"].start == 1020.0


def test_a_job_that_fits_no_node_never_starts() -> None:
    docs = [queue("q"), node("n1"), podgroup("b"), pod("b-0", "b", cpu="8")]
    est = _estimate(docs, ["ns/b"], now=0.0)
    assert est["ns/b"].start is None
    assert est["ns/b"].message == "never: the simulated cluster cannot start it"


def test_runtime_comes_from_duration_then_deadline_then_queue_then_global_default() -> None:
    policy = RuntimePolicy(per_queue={"q": 60.0}, default=30.0)
    p = pod("p", "g", activeDeadlineSeconds=600)
    assert runtime_of(_with_duration(pod("p", "g", activeDeadlineSeconds=600), "90s"), "q", policy) == ("duration",
                                                                                                         90.0)
    assert runtime_of(p, "q", policy) == ("activeDeadlineSeconds", 600.0)
    assert runtime_of(pod("p", "g"), "q", policy) == ("queue default", 60.0)
    assert runtime_of(pod("p", "g"), "other", policy) == ("default", 30.0)
    assert runtime_of(pod("p", "g"), "other", RuntimePolicy()) == ("unknown", None)


def test_format_seconds_reads_like_a_duration() -> None:
    assert [format_seconds(s) for s in (0, 59, 70, 3600, 90061, 1.5)] == ["0s", "59s", "1m10s", "1h", "1d1h1m1s",
                                                                          "1.5s"]
