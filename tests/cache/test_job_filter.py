"""JobFilter: the jobs a pass can act on, kept by the change feed, are the jobs of the session
for which the predicate holds, in uid order, after any changes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from cache_changes import apply_change
from pyvolcano.api.job import JobInfo
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache


def _has_pending(job: JobInfo) -> bool:
    return job.is_pending() or len(job.tasks_in(TaskStatus.Pending)) != job.pending_best_effort


def _cluster(n_jobs: int) -> SchedulerCache:
    docs = [node("n1", cpu="64", memory="256Gi"), queue("a"), queue("b")]
    for j in range(n_jobs):
        docs.append(podgroup(f"pg{j}", queue="ab"[j % 2], min_member=1, phase="Pending" if j % 3 == 0 else "Inqueue"))
        docs += [pod(f"p{j}-{t}", f"pg{j}", cpu=str(1 + t)) for t in range(2)]
    return cache_of(*docs)


def _walk(jobs: dict[str, JobInfo]) -> list[str]:
    return [uid for uid, job in jobs.items() if _has_pending(job)]


# (op, job index, task index), op as in cache_changes.apply_change
ops = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 5), st.integers(0, 1)), max_size=40)


@settings(max_examples=80)
@given(ops, st.integers(1, 4))
def test_the_kept_selection_equals_a_walk_over_every_job_after_any_changes(
    steps: list[tuple[int, int, int]], every: int
) -> None:
    cache = _cluster(6)
    selection = cache.memo.job_filter("test", _has_pending)
    assert [j.uid for j in selection.select(cache.session_jobs())] == _walk(cache.session_jobs())
    for i, (op, j, t) in enumerate(steps):
        apply_change(cache, op, j, t)
        if i % every == 0:  # a pass does not run after every change
            view = cache.session_jobs()
            assert [x.uid for x in selection.select(view)] == _walk(view)
    view = cache.session_jobs()
    assert [x.uid for x in selection.select(view)] == _walk(view)


def test_the_selection_re_evaluates_only_the_reported_jobs() -> None:
    cache = _cluster(4)
    looked: list[str] = []

    def wanted(job: JobInfo) -> bool:
        looked.append(job.uid)
        return _has_pending(job)

    selection = cache.memo.job_filter("test", wanted)
    selection.select(cache.session_jobs())
    assert len(looked) == len(cache.jobs)  # the first selection walks every job
    looked.clear()
    job = cache.pg_jobs["ns/pg2"]
    job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Allocated)
    selection.select(cache.session_jobs())
    assert looked == ["ns/pg2"]
    looked.clear()
    selection.select(cache.session_jobs())
    assert looked == []


def test_switched_off_the_selection_is_every_job_of_the_session() -> None:
    cache = _cluster(4)
    for job in cache.pg_jobs.values():
        for task in list(job.tasks.values()):
            job.update_task_status(task, TaskStatus.Running)
            job.set_phase("Running")
    selection = cache.memo.job_filter("test", _has_pending)
    view = cache.session_jobs()
    assert selection.select(view) == []
    assert selection.select(view, enabled=False) == list(view.values())
