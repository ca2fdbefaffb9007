"""JobSums: per-queue sums kept by deltas, walking every job or fed by the cache's change feed,
equal the sums recomputed from scratch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from cache_changes import apply_change
from pyvolcano.api.job import JobInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.job_sums import JobSums


def _allocated_and_pending(job: JobInfo) -> tuple[Resource, Resource]:
    return job.allocated.clone(), job.pending_request.clone()


def _fresh(jobs: dict[str, JobInfo]) -> dict[str, list[Resource]]:
    out: dict[str, list[Resource]] = {}
    for job in jobs.values():
        sums = out.setdefault(job.queue, [Resource(), Resource()])
        for total, part in zip(sums, _allocated_and_pending(job), strict=True):
            total.add(part)
    return out


def _as_dict(sums: dict[str, list[Resource]]) -> dict[str, list[dict[str, float]]]:
    return {q: [dict(r.items()) for r in rs] for q, rs in sorted(sums.items())}


def _cluster(n_jobs: int):
    docs = [node("n1", cpu="64", memory="256Gi", nvidia__com_gpu="8"), queue("a"), queue("b")]
    for j in range(n_jobs):
        docs.append(podgroup(f"pg{j}", queue="ab"[j % 2], min_member=1))
        for t in range(2):
            extra = {"nvidia__com_gpu": "1"} if (j + t) % 3 == 0 else {}
            p = pod(f"p{j}-{t}", f"pg{j}", cpu=str(1 + t))
            if extra:
                p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
            docs.append(p)
    return cache_of(*docs)


# (op, job index, task index): 0 = allocate, 1 = back to pending, 2 = delete the task, 3 = drop the PodGroup
ops = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 1)), max_size=40)


@settings(max_examples=60)
@given(ops)
def test_job_sums_equal_fresh_sums_after_any_mutations(steps: list[tuple[int, int, int]]) -> None:
    cache = _cluster(6)
    sums = JobSums(2, _allocated_and_pending)
    for op, j, t in steps:
        uid = f"ns/pg{j}"
        job = cache.pg_jobs.get(uid)
        if job is not None:
            task = next((x for x in job.tasks.values() if x.name == f"p{j}-{t}"), None)
            if task is not None and op == 0:
                job.update_task_status(task, TaskStatus.Allocated)
            elif task is not None and op == 1:
                job.update_task_status(task, TaskStatus.Pending)
            elif task is not None and op == 2:
                cache.delete_pod(task.uid)
            elif op == 3:
                cache.delete_podgroup("ns", f"pg{j}")
        assert _as_dict(sums.refresh(cache.pg_jobs)) == _as_dict(_fresh(cache.pg_jobs))


def test_job_sums_drop_a_scalar_dimension_when_no_job_carries_it() -> None:
    gpu_pod = pod("p0", "pg0")
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    cache = cache_of(node("n1", nvidia__com_gpu="8"), queue("a"), podgroup("pg0", queue="a"), gpu_pod,
                     podgroup("pg1", queue="a"), pod("p1", "pg1"))
    sums = JobSums(2, _allocated_and_pending)
    assert "nvidia.com/gpu" in sums.refresh(cache.pg_jobs)["a"][1].scalars
    cache.delete_podgroup("ns", "pg0")
    cache.delete_pod(next(t.uid for t in cache.tasks.values() if t.name == "p0"))
    after = sums.refresh(cache.pg_jobs)["a"][1]
    assert "nvidia.com/gpu" not in after.scalars
    assert after.milli_cpu == 1000


def test_job_sums_recompute_only_jobs_whose_state_changed() -> None:
    cache = _cluster(4)
    seen: list[str] = []

    def contribution(job: JobInfo) -> tuple[Resource, Resource]:
        seen.append(job.uid)
        return _allocated_and_pending(job)

    sums = JobSums(2, contribution)
    sums.refresh(cache.pg_jobs)
    seen.clear()
    job = cache.pg_jobs["ns/pg2"]
    job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Allocated)
    sums.refresh(cache.pg_jobs)
    assert seen == ["ns/pg2"]


def test_job_sums_see_a_job_recreated_under_the_same_uid_between_refreshes() -> None:
    cache = cache_of(node("n1"), queue("a"), podgroup("pg0", queue="a"), pod("p0", "pg0", cpu="1"))
    sums = JobSums(2, _allocated_and_pending)
    sums.refresh(cache.pg_jobs)
    old = cache.pg_jobs["ns/pg0"]
    fresh = JobInfo("ns/pg0")  # same uid, same (zero) counter, different content
    assert old.podgroup is not None
    fresh.set_podgroup(old.podgroup)
    fresh.version = old.version
    assert _as_dict(sums.refresh({"ns/pg0": fresh}))["a"][1]["cpu"] == 0.0


def _session_view(cache: SchedulerCache) -> dict[str, JobInfo]:
    return {uid: j for uid, j in cache.sorted_pg_jobs() if j.queue in cache.queues}


# (op, job index, task index): 0-3 as above, 4 = the job's queue deleted, 5 = created again,
# 6 = the PodGroup added again (a new JobInfo when the job had gone)
fed_ops = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(0, 1)), max_size=40)


@settings(max_examples=60)
@given(fed_ops)
def test_job_sums_fed_by_the_change_feed_equal_fresh_sums_after_any_mutations(
    steps: list[tuple[int, int, int]],
) -> None:
    cache = _cluster(6)
    sums = JobSums(2, _allocated_and_pending, changes=cache.job_changes)
    assert _as_dict(sums.refresh(_session_view(cache))) == _as_dict(_fresh(_session_view(cache)))
    for op, j, t in steps:
        apply_change(cache, op, j, t)
        view = _session_view(cache)
        assert _as_dict(sums.refresh(view)) == _as_dict(_fresh(view))


def test_job_sums_fed_by_the_change_feed_visit_only_the_jobs_it_reported() -> None:
    cache = _cluster(4)
    seen: list[str] = []

    def contribution(job: JobInfo) -> tuple[Resource, Resource]:
        seen.append(job.uid)
        return _allocated_and_pending(job)

    sums = JobSums(2, contribution, changes=cache.job_changes)
    sums.refresh(cache.pg_jobs)
    assert sorted(seen) == [f"ns/pg{j}" for j in range(4)]  # the first refresh walks every job
    seen.clear()
    for uid in ("ns/pg3", "ns/pg1"):
        job = cache.pg_jobs[uid]
        job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Allocated)
    sums.refresh(cache.pg_jobs)
    assert seen == ["ns/pg1", "ns/pg3"]  # in uid order
    seen.clear()
    sums.refresh(cache.pg_jobs)
    assert seen == []


def test_job_sums_walk_every_job_once_after_their_subscription_overflowed() -> None:
    cache = _cluster(6)
    cache.job_changes.limit = 2
    sums = JobSums(2, _allocated_and_pending, changes=cache.job_changes)
    sums.refresh(cache.pg_jobs)
    for j in (0, 1, 2, 5):  # four jobs reported: more than the limit, so they are dropped
        job = cache.pg_jobs[f"ns/pg{j}"]
        job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Allocated)
    assert sums._changed is not None and sums._changed.overflowed
    assert _as_dict(sums.refresh(cache.pg_jobs)) == _as_dict(_fresh(cache.pg_jobs))
    assert not sums._changed.overflowed
