"""Gangs placed as a batch decide exactly as one pod at a time.

Within allocate's batched placement, consecutive replicas of one task template are taken as
a run (``batch_templates``) and four per-pod calls get batch forms: the statement's
allocation with one allocate event per plugin (``batch_statement``), the queue-quota check
counted once (``batch_quota``) and JobReady asked only when the gang's count can make it
true (``batch_ready``); a gang the quota cuts short of JobReady is walked without placing
and undoing its replicas (``batch_quota_cut``). The property test runs the same sessions with every form on, with
each one switched off, and on the per-pod path (``batch_replicas`` off), on generated
clusters where queue quotas cut gangs short, nodes fill up (pipelining and fit errors),
gangs mix two templates and best-effort pods, and terminating pods release resources,
with upstream's numNodesToFind and with windows of two or three nodes (so that one
vectorised step of a chunk takes many windows, their tie-break draws together); it
requires identical binds (in order), pipelined tasks, evictions, PodGroup phases and
conditions, fit errors, the round-robin index, and the queue and job shares as allocate
left them. Configurations include hierarchical DRF, whose allocate handler has no batch
form, so the statement falls back to one task at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from batch_outcome import session_outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import dump, node, pod, podgroup, queue
from pyvolcano.actions.allocate import Allocate
from pyvolcano.actions.allocate.tasks import TaskPlacement
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.task_template import same_content, template_signature
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
    # Hierarchical DRF (upstream refuses it in one tier with proportion).
    "hdrf": DEFAULT_SCHEDULER_CONF.replace("  - name: drf\n", "  - name: drf\n    enableHierarchy: true\n")
    .replace("  - name: proportion\n", ""),
}
FORMS = ["batch_templates", "batch_statement", "batch_quota", "batch_ready", "batch_quota_cut"]
REQUESTS = [("1", "1Gi"), ("2", "2Gi"), ("500m", "512Mi"), ("3", "6Gi")]


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    n_queues = draw(st.integers(1, 3))
    for q in range(n_queues):
        spec: dict[str, Any] = {}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": str(draw(st.integers(2, 30)))}
        docs.append(queue(f"q{q}", weight=draw(st.integers(1, 4)), **spec))
    n_nodes = draw(st.integers(1, 24))
    for i in range(n_nodes):
        docs.append(node(f"n{i:02d}", cpu=draw(st.sampled_from(["2", "4", "8"])),
                         memory=draw(st.sampled_from(["4Gi", "16Gi"])), pods=draw(st.sampled_from(["4", "110"])),
                         labels={"zone": draw(st.sampled_from(["a", "b"])), "kubernetes.io/hostname": f"n{i:02d}"}))
    docs.append(podgroup("running", queue="q0", min_member=1, phase="Running"))
    for k in range(draw(st.integers(0, 5))):
        cpu, mem = draw(st.sampled_from(REQUESTS))
        p = pod(f"r{k}", "running", cpu=cpu, memory=mem, node_name=f"n{draw(st.integers(0, n_nodes - 1)):02d}",
                phase="Running")
        if draw(st.booleans()):
            p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        docs.append(p)
    for j in range(draw(st.integers(1, 7))):
        replicas = draw(st.integers(1, 16))
        docs.append(podgroup(f"g{j}", queue=f"q{draw(st.integers(0, n_queues - 1))}",
                             min_member=draw(st.integers(1, replicas))))
        first = draw(st.sampled_from(REQUESTS))
        second = draw(st.sampled_from(REQUESTS))
        # Which replicas take the second template: none, a block at the end, or every third.
        mix = draw(st.sampled_from(["one", "block", "interleaved"]))
        selector = {"nodeSelector": {"zone": "a"}} if draw(st.integers(0, 3)) == 0 else {}
        for r in range(replicas):
            use_second = (mix == "block" and r >= replicas // 2) or (mix == "interleaved" and r % 3 == 2)
            cpu, mem = second if use_second else first
            if draw(st.integers(0, 12)) == 0:
                cpu = mem = None  # best effort
            docs.append(pod(f"g{j}-{r:02d}", f"g{j}", cpu=cpu, memory=mem, priority=10 if use_second else None,
                            labels={"app": f"g{j}"}, **selector))
    return docs


def _resource(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    return (r.milli_cpu, r.memory, tuple(sorted(r.scalars.items())))


def _shares(ssn: Session) -> list[Any]:
    """The queue and job accounts of proportion, capacity and drf, as allocate left them."""
    out: list[Any] = []
    for opt, plugin in ssn.plugins:
        queue_opts: Mapping[str, Any] | None = getattr(plugin, "queue_opts", None)
        if queue_opts is None and getattr(plugin, "session", None) is not None:
            queue_opts = plugin.session.opts  # type: ignore[attr-defined]
        if queue_opts:
            out.append((opt.name, sorted((name, _resource(a.allocated), a.share) for name, a in queue_opts.items())))
        job_attrs: Mapping[str, Any] | None = getattr(plugin, "job_attrs", None)
        if job_attrs:
            out.append((opt.name, sorted((uid, _resource(a.allocated), a.share) for uid, a in job_attrs.items())))
    return out


class _Recording(Allocate):
    """Allocate, then a record of the plugins' shares."""

    def __init__(self, arguments: Mapping[str, Any] | None, record: list[Any]):
        super().__init__(arguments)
        self.record = record

    def execute(self, ssn: Session) -> None:
        super().execute(ssn)
        self.record.append(_shares(ssn))


def run(docs: list[dict[str, Any]], conf: str, *, seed: int, sessions: int, **options: Any) -> list[Any]:
    objs = load_manifest_text(dump(*docs), "test.yaml")
    cache = SchedulerCache.from_objects(objs, SchedulerOptions(**options))
    config = load_scheduler_conf(conf)
    registry = default_registry()
    plugins = registry.plugin_factories(config.plugin_names())
    out: list[Any] = []
    actions = {**registry.action_factories(config.actions),
               "allocate": lambda arguments: _Recording(arguments, out)}
    rng = np.random.default_rng(seed)
    for i in range(sessions):
        res = run_once(cache, config, plugins, actions, now=float(i), rng=rng)
        out.extend(session_outcome(cache, res))
    return out


# numNodesToFind: upstream's (every node of these small clusters), or windows of two or three
# nodes, so that a chunk takes many windows in one vectorised step (its tie-break draws
# together, nodes leaving the feasible set in the middle of it).
WINDOWS: dict[str, dict[str, int]] = {
    "upstream": {},
    "2 nodes": {"min_nodes_to_find": 2, "percentage_of_nodes_to_find": 1},
    "3 nodes": {"min_nodes_to_find": 3, "percentage_of_nodes_to_find": 1},
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=clusters(), conf=st.sampled_from(sorted(CONFS)), seed=st.integers(0, 2**16), sessions=st.integers(1, 2),
       window=st.sampled_from(sorted(WINDOWS)))
def test_every_batch_form_decides_exactly_as_the_per_pod_path(
    docs: list[dict[str, Any]], conf: str, seed: int, sessions: int, window: str
) -> None:
    opts: dict[str, Any] = dict(WINDOWS[window])
    per_pod = run(docs, CONFS[conf], seed=seed, sessions=sessions, batch_replicas=False, **opts)
    assert run(docs, CONFS[conf], seed=seed, sessions=sessions, **opts) == per_pod
    for form in FORMS:
        assert run(docs, CONFS[conf], seed=seed, sessions=sessions, **{form: False}, **opts) == per_pod, form


def test_a_queue_quota_cuts_a_gang_short_as_one_pod_at_a_time_would() -> None:
    # q holds 5 CPUs: 5 of the gang's 8 one-CPU replicas fit, the gang is not ready, and
    # the statement is discarded; the 2-replica gang after it fits.
    docs: list[dict[str, Any]] = [queue("q", capability={"cpu": "5"}), *(node(f"n{i}", cpu="8") for i in range(4))]
    docs.append(podgroup("big", queue="q", min_member=8))
    docs += [pod(f"big-{r}", "big") for r in range(8)]
    docs.append(podgroup("small", queue="q", min_member=2))
    docs += [pod(f"small-{r}", "small") for r in range(2)]
    per_pod = run(docs, CONFS["default"], seed=0, sessions=1, batch_replicas=False)
    assert sorted(p for p, _node in per_pod[1][0]) == ["ns/small-0", "ns/small-1"]
    assert run(docs, CONFS["default"], seed=0, sessions=1) == per_pod


@st.composite
def quota_cut_clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Whole gangs (minMember = replicas) in queues whose capability cuts most of them short."""
    docs: list[dict[str, Any]] = []
    n_queues = draw(st.integers(1, 3))
    for q in range(n_queues):
        docs.append(queue(f"q{q}", weight=draw(st.integers(1, 3)), capability={"cpu": str(draw(st.integers(3, 40)))}))
    n_nodes = draw(st.integers(2, 30))
    for i in range(n_nodes):
        docs.append(node(f"n{i:02d}", cpu=draw(st.sampled_from(["4", "8"])), memory="32Gi",
                         labels={"kubernetes.io/hostname": f"n{i:02d}"}))
    for j in range(draw(st.integers(2, 6))):
        replicas = draw(st.integers(2, 20))
        docs.append(podgroup(f"g{j}", queue=f"q{draw(st.integers(0, n_queues - 1))}", min_member=replicas))
        cpu, mem = draw(st.sampled_from(REQUESTS))
        docs += [pod(f"g{j}-{r:02d}", f"g{j}", cpu=cpu, memory=mem, labels={"app": f"g{j}"}) for r in range(replicas)]
    return docs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=quota_cut_clusters(), conf=st.sampled_from(["default", "default+binpack", "capacity"]),
       seed=st.integers(0, 2**16), window=st.sampled_from(sorted(WINDOWS)))
def test_gangs_cut_short_by_the_quota_decide_as_placed_and_undone(
    docs: list[dict[str, Any]], conf: str, seed: int, window: str
) -> None:
    opts: dict[str, Any] = dict(WINDOWS[window])
    placed_then_undone = run(docs, CONFS[conf], seed=seed, sessions=2, batch_quota_cut=False, **opts)
    assert run(docs, CONFS[conf], seed=seed, sessions=2, **opts) == placed_then_undone


@pytest.mark.parametrize("conf", ["default", "default+binpack", "capacity"])
def test_gangs_the_quota_cuts_short_are_walked_without_placing_and_decide_the_same(
    conf: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # q0 holds 40 CPUs: after the first gang (24) the next ones get 16 of their 24 replicas
    # from the quota, so each is cut short; a small gang in q1 still fits after them.
    docs: list[dict[str, Any]] = [queue("q0", capability={"cpu": "40"}), queue("q1")]
    docs += [node(f"n{i:02d}", cpu="8", memory="32Gi") for i in range(40)]
    for j in range(4):
        docs.append(podgroup(f"g{j}", queue="q0", min_member=24))
        docs += [pod(f"g{j}-{r:02d}", f"g{j}", cpu="1", memory="1Gi") for r in range(24)]
    docs.append(podgroup("small", queue="q1", min_member=3))
    docs += [pod(f"small-{r}", "small", cpu="2", memory="1Gi") for r in range(3)]
    walked: list[bool] = []
    original = TaskPlacement._quota_cut

    def recording(self: TaskPlacement, *args: Any) -> bool:
        walked.append(original(self, *args))
        return walked[-1]

    monkeypatch.setattr(TaskPlacement, "_quota_cut", recording)
    placed_then_undone = run(docs, CONFS[conf], seed=3, sessions=2, batch_quota_cut=False)
    assert not walked
    walked_out = run(docs, CONFS[conf], seed=3, sessions=2)
    assert True in walked
    assert walked_out == placed_then_undone
    assert walked_out == run(docs, CONFS[conf], seed=3, sessions=2, batch_replicas=False)


@pytest.mark.parametrize("conf", sorted(CONFS))
def test_large_gangs_on_many_nodes_decide_as_the_per_pod_path(conf: str) -> None:
    # 400 nodes (numNodesToFind 184): each replica's window is a new slice of the cluster, so
    # the runs are cut into chunks where the windows would come back to rows chosen before.
    docs: list[dict[str, Any]] = [queue("q0", weight=1), queue("q1", weight=3)]
    docs += [node(f"n{i:03d}", cpu="16", memory="64Gi") for i in range(400)]
    for j, (cpu, replicas) in enumerate([("2", 120), ("4", 80), ("1", 200), ("8", 60)]):
        docs.append(podgroup(f"g{j}", queue=f"q{j % 2}", min_member=replicas // 2))
        docs += [pod(f"g{j}-{r:03d}", f"g{j}", cpu=cpu, memory="2Gi") for r in range(replicas)]
    per_pod = run(docs, CONFS[conf], seed=7, sessions=2, batch_replicas=False)
    assert run(docs, CONFS[conf], seed=7, sessions=2) == per_pod
    assert len(per_pod[1][0]) == 460


def test_replicas_share_a_template_and_their_identities_do_not_enter_it() -> None:
    docs = [pod(f"g-{r}", "g", labels={"volcano.sh/task-index": str(r), "app": "g"}) for r in range(2)]
    docs.append(pod("g-2", "g", cpu="2", labels={"app": "g"}))
    tasks = [TaskInfo(p) for p in load_manifest_text(dump(*docs), "test.yaml").pods]
    first, second, other = (template_signature(t) for t in tasks)
    assert first == second
    assert first != other


def test_same_content_agrees_with_the_signature() -> None:
    docs = [pod("g-0", "g", labels={"volcano.sh/task-index": "0"}),
            pod("g-1", "g", labels={"volcano.sh/task-index": "1"}),
            pod("g-2", "g", labels={"volcano.sh/task-index": "2", "extra": "x"}),
            pod("g-3", "g", labels={"volcano.sh/task-index": "3"}, nodeSelector={"zone": "a"}),
            pod("g-4", "g", labels={"volcano.sh/task-index": "4"}, memory="2Gi")]
    tasks = [TaskInfo(p) for p in load_manifest_text(dump(*docs), "test.yaml").pods]
    for a in tasks:
        for b in tasks:
            assert same_content(a, b) == (template_signature(a) == template_signature(b))


def test_chunks_of_several_windows_with_nodes_filling_up_decide_as_the_per_pod_path() -> None:
    # 3,000 nodes (numNodesToFind 780): up to three replicas share one vectorised step.
    # Binpack prefers the one-CPU nodes at the start of the cluster, which a replica fills:
    # they leave the feasible set in the middle of a step (the positions after them shift).
    conf = ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: drf\n  - name: predicates\n"
            "  - name: proportion\n  - name: binpack\n")
    docs: list[dict[str, Any]] = [queue("q")]
    docs += [node(f"n{i:04d}", cpu="1" if i < 300 else "3", memory="8Gi") for i in range(3000)]
    for j in range(12):
        docs.append(podgroup(f"g{j}", queue="q", min_member=40))
        docs += [pod(f"g{j}-{r:02d}", f"g{j}", cpu="1", memory="1Gi") for r in range(40)]
    per_pod = run(docs, conf, seed=2, sessions=1, batch_replicas=False)
    assert run(docs, conf, seed=2, sessions=1) == per_pod
    assert len(per_pod[1][0]) == 480
    assert sum(node < "n0300" for _pod, node in per_pod[1][0]) > 100
