"""The cache's kept views of its jobs: the jobs a session visits and the change feed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.objects import PodGroup, Queue
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache


def _walked(cache: SchedulerCache) -> dict[str, object]:
    return {uid: j for uid, j in sorted(cache.pg_jobs.items()) if j.queue in cache.queues}


# (op, job index): 0 = PodGroup deleted, 1 = (re)added in queue a, 2 = moved to queue b,
# 3 = queue b deleted, 4 = queue b created again
steps = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=30)


@settings(max_examples=60)
@given(steps)
def test_session_jobs_equal_a_walk_over_the_podgroups_of_existing_queues(ops: list[tuple[int, int]]) -> None:
    cache = cache_of(node("n1"), queue("a"), queue("b"),
                     *[podgroup(f"pg{j}", queue="ab"[j % 2]) for j in range(4)], pod("p0", "pg0"))
    assert list(cache.session_jobs()) == list(_walked(cache))
    for op, j in ops:
        if op == 0:
            cache.delete_podgroup("ns", f"pg{j}")
        elif op in (1, 2):
            cache.add_podgroup(PodGroup(namespace="ns", name=f"pg{j}", uid=f"pg{j}", queue="ab"[op - 1]))
        elif op == 3:
            cache.delete_queue("b")
        else:
            cache.upsert_queue(Queue(name="b", uid="b"))
        view = cache.session_jobs()
        assert view == _walked(cache) and list(view) == list(_walked(cache))
        view.clear()  # each call hands out its own dict
        assert cache.session_jobs() == _walked(cache)


def test_change_feed_reports_jobs_that_change_join_or_leave_the_sessions_view() -> None:
    cache = cache_of(node("n1"), queue("a"), queue("b"), podgroup("pg0", queue="a"), podgroup("pg1", queue="b"),
                     pod("p0", "pg0"))
    got = cache.job_changes.subscribe()
    job = cache.pg_jobs["ns/pg0"]
    (task,) = job.tasks.values()
    job.update_task_status(task, task.status)
    job.set_phase("Inqueue")
    assert got == set()  # nothing moved
    job.set_phase("Running")
    job.update_task_status(task, TaskStatus.Allocated)
    assert got == {"ns/pg0"}
    got.clear()
    cache.delete_queue("b")
    assert got == {"ns/pg1"}
    got.clear()
    cache.upsert_queue(Queue(name="b", uid="b"))
    cache.delete_podgroup("ns", "pg0")
    assert got == {"ns/pg0", "ns/pg1"}


def test_a_subscriber_that_stops_draining_holds_at_most_the_feeds_limit() -> None:
    cache = cache_of(node("n1"), queue("a"), *[podgroup(f"pg{j}", queue="a") for j in range(5)])
    cache.job_changes.limit = 3
    got = cache.job_changes.subscribe()
    for j in range(5):
        cache.pg_jobs[f"ns/pg{j}"].set_phase("Running")
    assert len(got) <= 3 and got.overflowed
    assert got.take() is None  # walk every job
    assert not got.overflowed and not got
    cache.pg_jobs["ns/pg4"].set_phase("Completed")
    cache.pg_jobs["ns/pg1"].set_phase("Completed")
    assert got.take() == ["ns/pg1", "ns/pg4"]
