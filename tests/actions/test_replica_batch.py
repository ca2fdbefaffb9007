"""Batched placement of replicas (actions/allocate/replica_batch.py) decides exactly as the per-pod path.

The property test builds many seeded clusters (nodes of several sizes, labels and taints,
running and terminating pods, queues with and without capability, gangs with node selectors,
tolerations, pod anti-affinity, priorities and partial minMember) and runs the same sessions
with ``batch_replicas`` on and off: binds (in order), pipelined tasks, evictions, PodGroup
phases and conditions, fit errors and the round-robin index must be identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from batch_outcome import session_outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import dump, node, pod, podgroup, queue
from pyvolcano.actions.allocate.replica_batch import ReplicaBatch
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.framework.session import Session
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

CONFS = {
    "default": DEFAULT_SCHEDULER_CONF,
    "default+binpack": DEFAULT_SCHEDULER_CONF + "  - name: binpack\n",
    "capacity": DEFAULT_SCHEDULER_CONF.replace("name: proportion", "name: capacity") + "  - name: binpack\n",
}
REQUESTS = [("1", "1Gi"), ("2", "2Gi"), ("500m", "512Mi"), ("3", "6Gi"), ("4", "1Gi")]


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    n_queues = draw(st.integers(1, 3))
    for q in range(n_queues):
        spec: dict[str, Any] = {}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": str(draw(st.integers(4, 40)))}
        docs.append(queue(f"q{q}", weight=draw(st.integers(1, 4)), **spec))
    n_nodes = draw(st.integers(1, 30))
    for i in range(n_nodes):
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if draw(st.integers(0, 5)) == 0 else None
        docs.append(node(f"n{i:02d}", cpu=draw(st.sampled_from(["2", "4", "8", "16"])),
                         memory=draw(st.sampled_from(["4Gi", "8Gi", "32Gi"])),
                         pods=draw(st.sampled_from(["3", "110"])),
                         labels={"zone": draw(st.sampled_from(["a", "b"])), "kubernetes.io/hostname": f"n{i:02d}"},
                         taints=taints))
    docs.append(podgroup("running", queue="q0", min_member=1, phase="Running"))
    for k in range(draw(st.integers(0, 6))):
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["metadata"] = {"deletionTimestamp": "2024-01-01T00:00:00Z"}
        cpu, mem = draw(st.sampled_from(REQUESTS))
        p = pod(f"r{k}", "running", cpu=cpu, memory=mem, node_name=f"n{draw(st.integers(0, n_nodes - 1)):02d}",
                phase="Running")
        if "metadata" in extra:
            p["metadata"].update(extra["metadata"])
        docs.append(p)
    for j in range(draw(st.integers(1, 8))):
        replicas = draw(st.integers(1, 14))
        docs.append(podgroup(f"g{j}", queue=f"q{draw(st.integers(0, n_queues - 1))}",
                             min_member=draw(st.integers(1, replicas))))
        cpu, mem = draw(st.sampled_from(REQUESTS))
        spec = {}
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
        if draw(st.integers(0, 3)) == 0:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        labels = {"app": f"g{j}"}
        if draw(st.integers(0, 5)) == 0:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": f"g{j}"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        priority = draw(st.sampled_from([None, 1, 10]))
        # Replicas of one template, except now and then a second template in the same gang.
        other = draw(st.sampled_from(REQUESTS)) if draw(st.integers(0, 3)) == 0 else None
        for r in range(replicas):
            c, m = other if other is not None and r % 3 == 2 else (cpu, mem)
            docs.append(pod(f"g{j}-{r}", f"g{j}", cpu=c, memory=m, priority=priority, labels=labels, **spec))
    return docs


def run(docs: list[dict[str, Any]], conf: str, *, batch: bool, seed: int, sessions: int) -> list[Any]:
    objs = load_manifest_text(dump(*docs), "test.yaml")
    cache = SchedulerCache.from_objects(objs, SchedulerOptions(batch_replicas=batch))
    config = load_scheduler_conf(conf)
    registry = default_registry()
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    for i in range(sessions):
        res = run_once(cache, config, plugins, actions, now=float(i), rng=rng)
        out.extend(session_outcome(cache, res))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=clusters(), conf=st.sampled_from(sorted(CONFS)), seed=st.integers(0, 2**16), sessions=st.integers(1, 2))
def test_batched_replicas_decide_exactly_as_the_per_pod_path(
    docs: list[dict[str, Any]], conf: str, seed: int, sessions: int
) -> None:
    per_pod = run(docs, CONFS[conf], batch=False, seed=seed, sessions=sessions)
    batched = run(docs, CONFS[conf], batch=True, seed=seed, sessions=sessions)
    assert batched == per_pod


def test_gang_replicas_spread_by_round_robin_window_and_seeded_ties() -> None:
    # 300 equal nodes: numNodesToFind is 300 * 46% = 138, so every replica sees a different
    # window and every choice is a tie broken by the generator.
    docs: list[dict[str, Any]] = [queue("q")]
    docs += [node(f"n{i:03d}", cpu="8", memory="16Gi") for i in range(300)]
    docs.append(podgroup("g", queue="q", min_member=40))
    docs += [pod(f"g-{r:02d}", "g", cpu="1", memory="1Gi") for r in range(40)]
    for seed in (0, 1):
        per_pod = run(docs, CONFS["default+binpack"], batch=False, seed=seed, sessions=1)
        batched = run(docs, CONFS["default+binpack"], batch=True, seed=seed, sessions=1)
        assert batched == per_pod
        binds = per_pod[0][0]
        assert len(binds) == 40
        assert per_pod[0][4] != 0  # the round-robin index moved


def test_batch_falls_back_to_the_per_pod_path_for_inter_pod_affinity() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "g"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i}", cpu="8") for i in range(3))]
    docs.append(podgroup("g", queue="q", min_member=3))
    docs += [pod(f"g-{r}", "g", labels={"app": "g"}, affinity=anti) for r in range(3)]
    res = run(docs, CONFS["default"], batch=True, seed=0, sessions=1)
    assert sorted(node for _pod, node in res[0][0]) == ["n0", "n1", "n2"]
    assert res == run(docs, CONFS["default"], batch=False, seed=0, sessions=1)


def _refuse(self: ReplicaBatch, task: Any) -> int | None:
    raise AssertionError("batched placement used")


def test_device_sharing_keeps_allocate_on_the_per_pod_path(monkeypatch: Any) -> None:
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i}", cpu="8", nvidia__com__gpu="4") for i in range(3))]
    docs.append(podgroup("g", queue="q", min_member=3))
    docs += [pod(f"g-{r}", "g") for r in range(3)]
    conf = DEFAULT_SCHEDULER_CONF + ("  - name: deviceshare\n    arguments:\n"
                                     "      deviceshare.GPUNumberEnable: true\n")
    monkeypatch.setattr(ReplicaBatch, "select", _refuse)
    monkeypatch.setattr(ReplicaBatch, "select_many", lambda self, task, _m: _refuse(self, task))
    res = run(docs, conf, batch=True, seed=0, sessions=1)
    assert len(res[0][0]) == 3
    with pytest.raises(AssertionError, match="batched placement used"):
        run(docs, DEFAULT_SCHEDULER_CONF, batch=True, seed=0, sessions=1)


@pytest.mark.parametrize("projection", [True, False])
def test_rows_chosen_earlier_are_re_evaluated_when_the_window_comes_back_to_them(
    projection: bool, monkeypatch: Any
) -> None:
    # 240 two-CPU nodes (numNodesToFind 240 * 47% = 112): the window goes round the cluster
    # about every two replicas, so most selections meet rows the batch chose before (with
    # their projected values, or dirty without projection); nodes fill up and leave the
    # feasible set; a second template and a nominated replica of the first one interleave.
    if not projection:
        monkeypatch.setattr(Session, "replicas_projectable", lambda _self, _task: False)
    docs: list[dict[str, Any]] = [queue("q")]
    docs += [node(f"n{i:03d}", cpu="2", memory="8Gi") for i in range(240)]
    for j, (cpu, replicas) in enumerate([("1", 150), ("2", 60), ("1", 120)]):
        docs.append(podgroup(f"g{j}", queue="q", min_member=replicas))
        docs += [pod(f"g{j}-{r:03d}", f"g{j}", cpu=cpu, memory="1Gi") for r in range(replicas)]
    docs[-1]["status"]["nominatedNodeName"] = "n007"
    for conf in ("default", "default+binpack"):
        per_pod = run(docs, CONFS[conf], batch=False, seed=3, sessions=2)
        batched = run(docs, CONFS[conf], batch=True, seed=3, sessions=2)
        assert batched == per_pod
        assert len(per_pod[0][0]) >= 200


def test_host_ports_keep_the_batch_without_projection() -> None:
    # The ports predicate reads the node's task dict, so these replicas are batched with
    # dirty rows only; a second replica on the same node conflicts on the port.
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i:02d}", cpu="8") for i in range(30))]
    docs.append(podgroup("g", queue="q", min_member=30))
    for r in range(30):
        p = pod(f"g-{r:02d}", "g")
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        docs.append(p)
    per_pod = run(docs, CONFS["default+binpack"], batch=False, seed=1, sessions=1)
    assert per_pod == run(docs, CONFS["default+binpack"], batch=True, seed=1, sessions=1)
    assert len({node for _pod, node in per_pod[0][0]}) == 30


@pytest.mark.parametrize("conf", ["actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
                                  "  - name: binpack\n", CONFS["default+binpack"]])
def test_replicas_with_one_request_and_different_non_zero_requests_decide_as_the_per_pod_path(conf: str) -> None:
    # One container without a memory request, or two: the same request, but kube-scheduler's
    # non-zero memory is 200Mi or 400Mi, so projections made for one do not fit the other.
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i:02d}", cpu="4", memory="2Gi") for i in range(12))]
    docs.append(podgroup("g", queue="q", min_member=1))
    for r in range(40):
        p = pod(f"g-{r:02d}", "g", cpu="1" if r % 2 else "500m", memory=None)
        if not r % 2:
            p["spec"]["containers"].append({"name": "side", "resources": {"requests": {"cpu": "500m"}}})
        docs.append(p)
    per_pod = run(docs, conf, batch=False, seed=5, sessions=1)
    assert per_pod == run(docs, conf, batch=True, seed=5, sessions=1)
    assert len(per_pod[0][0]) > 12
