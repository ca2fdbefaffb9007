"""The per-session passes fed by the cache's change feed visit only the jobs that changed, and
come out as the walks over every job do.

A cluster of one node and many single-pod jobs whose node selector no node matches: every session leaves
them pending with fit errors, so each pass has work for them. Between sessions only one job
changes; the fed passes must visit that job (and the ones they must keep looking at), and
several sessions must produce the same PodGroup statuses, diagnoses and binds as the
from-scratch passes (the memo's one switch, ``SessionMemo.incremental = False``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.job import JobInfo
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.memo import SessionMemo
from pyvolcano.conf import default_configuration
from pyvolcano.diagnosis import diagnose
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.registry import default_registry

N_JOBS = 12


def _cluster() -> SchedulerCache:
    docs: list[dict[str, Any]] = [node("n1", cpu="8", memory="8Gi"), queue("q")]
    for j in range(N_JOBS):
        docs.append(podgroup(f"pg{j:02}", min_member=1))
        docs.append(pod(f"p{j:02}", f"pg{j:02}", nodeSelector={"zone": "x"}))  # no node has the label
    docs.append(podgroup("gang", min_member=3))
    docs.append(pod("g0", "gang", cpu="1"))  # a gang whose other pods are not created yet
    return cache_of(*docs)


def _sessions(cache: SchedulerCache, n: int, between: Any = None) -> list[SessionResult]:
    config = default_configuration()
    registry = default_registry()
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        if between is not None and i:
            between(cache, i)
        out.append(run_once(cache, config, plugins, actions, now=float(i), rng=rng))
    return out


def _state(cache: SchedulerCache, results: list[SessionResult]) -> list[object]:
    out: list[object] = []
    for res in results:
        out.append((sorted(res.binds), sorted(res.podgroup_phases.items()),
                    # A settled job keeps the diagnosis of the session that made it: its session
                    # name is all that differs from a diagnosis made afresh.
                    sorted((k, d.to_dict(session=False)) for k, d in res.diagnoses.items())))
    for uid, job in sorted(cache.pg_jobs.items()):
        pg = job.podgroup
        assert pg is not None
        out.append((uid, pg.phase, [(c.type, c.status, c.reason, c.message) for c in pg.conditions],
                    sorted((t.name, str(t.status), repr(t.pod.conditions)) for t in job.tasks.values())))
    return out


def _grow_one_job(cache: SchedulerCache, i: int) -> None:
    """Between sessions: one job's pod is deleted (the job changes), the node is unchanged."""
    job = cache.pg_jobs[f"ns/pg{i:02}"]
    task = next(iter(job.tasks.values()))
    cache.delete_pod(task.uid)


def test_the_fed_passes_give_what_the_walks_over_every_job_give(monkeypatch: pytest.MonkeyPatch) -> None:
    fed_cache = _cluster()
    fed = _state(fed_cache, _sessions(fed_cache, 4, _grow_one_job))
    monkeypatch.setattr(SessionMemo, "incremental", False)
    cache = _cluster()
    assert _state(cache, _sessions(cache, 4, _grow_one_job)) == fed
    assert any(res.diagnoses for res in _sessions(_cluster(), 1))  # the jobs are diagnosed


def test_after_the_first_session_the_fit_error_reset_visits_only_the_changed_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reset: list[str] = []
    original = JobInfo.reset_fit_err

    def spy(self: JobInfo) -> None:
        reset.append(self.uid)
        original(self)

    monkeypatch.setattr(JobInfo, "reset_fit_err", spy)
    cache = _cluster()
    _sessions(cache, 1)
    assert len(reset) == N_JOBS + 1  # the first session walks every job
    reset.clear()
    _sessions(cache, 1)
    # The last session recorded fit errors on the jobs it tried, so they are reported.
    tried = set(reset)
    assert tried and "ns/gang" not in tried
    reset.clear()
    _sessions(cache, 1)
    assert set(reset) <= tried


def test_the_diagnosis_of_a_settled_job_is_kept_not_computed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _cluster()
    _sessions(cache, 2)
    computed: list[str] = []
    original = diagnose._Context.diagnose

    def spy(self: Any, job: JobInfo) -> Any:
        computed.append(job.uid)
        return original(self, job)

    monkeypatch.setattr(diagnose._Context, "diagnose", spy)
    res = _sessions(cache, 1)[0]
    # The single-pod jobs were tried again (new fit errors); the incomplete gang was not.
    assert sorted(computed) == [f"ns/pg{j:02}" for j in range(N_JOBS)]
    assert "ns/gang" in res.diagnoses


def test_allocate_leaves_out_a_gang_whose_pods_are_not_all_created() -> None:
    cache = _cluster()
    _sessions(cache, 1)
    kept = {name: f for name, f in cache.memo._filters.items() if name.startswith("allocate/")}
    assert list(kept) == ["allocate/valid:gang"]
    jobs = [j.uid for j in kept["allocate/valid:gang"].select(cache.session_jobs())]
    assert jobs == [f"ns/pg{j:02}" for j in range(N_JOBS)]
    assert cache.pg_jobs["ns/gang"].count(TaskStatus.Pending) == 1


def _best_effort_cluster() -> SchedulerCache:
    """Best-effort pods (no requests) on a node that holds three pods: some placed per session,
    one that no node matches, and a job admitted (enqueue) in the session that backfills it."""
    docs: list[dict[str, Any]] = [node("n1", cpu="8", memory="8Gi", pods="3"), queue("q")]
    for j in range(6):
        docs.append(podgroup(f"be{j}", min_member=1))
        docs.append(pod(f"be{j}", f"be{j}", cpu=None, memory=None))
    docs.append(podgroup("stray", min_member=1))
    docs.append(pod("stray", "stray", cpu=None, memory=None, nodeSelector={"zone": "x"}))
    docs.append(podgroup("adm", min_member=1, phase="Pending"))
    docs.append(pod("adm", "adm", cpu=None, memory=None))
    docs.append(podgroup("cpu", min_member=1))
    docs.append(pod("cpu", "cpu", cpu="1"))  # not best effort: allocate's, never backfill's
    return cache_of(*docs)


def _free_one_bound_pod(cache: SchedulerCache, i: int) -> None:
    """Between sessions: a bound best-effort pod goes away, so the node has room for one more."""
    for _uid, job in sorted(cache.pg_jobs.items()):
        bound = [t for t in job.tasks.values() if t.node_name and t.resreq.is_empty()]
        if bound:
            cache.delete_pod(bound[0].uid)
            return


def test_backfill_on_the_change_feed_places_what_the_walk_over_every_job_places(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed_cache = _best_effort_cluster()
    fed_results = _sessions(fed_cache, 5, _free_one_bound_pod)
    fed = _state(fed_cache, fed_results)
    assert sum(len(res.binds) for res in fed_results) >= 5  # backfill placed pods in several sessions
    monkeypatch.setattr(SessionMemo, "incremental", False)
    cache = _best_effort_cluster()
    assert _state(cache, _sessions(cache, 5, _free_one_bound_pod)) == fed


def test_backfill_keeps_only_the_jobs_with_best_effort_work() -> None:
    cache = _best_effort_cluster()
    _sessions(cache, 1)
    kept = cache.memo._filters["backfill"].select(cache.session_jobs())
    # The node is full: the unplaced best-effort pods and the stray one are left; the job with
    # a CPU request and the placed pods' jobs are not.
    left = [j.uid for j in kept]
    assert "ns/stray" in left and "ns/cpu" not in left
    assert all(j.pending_best_effort for j in kept)
