"""The allocate worksheet (actions/_helpers.py) pops tasks in upstream's task order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, open_session, pod, podgroup, queue
from pyvolcano.actions._helpers import SortedTasks, task_queue
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.util.priority_queue import PriorityQueue


def _pods(specs: list[tuple[bool, int, int, int | None]]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [queue("q"), podgroup("pg", queue="q", min_member=1)]
    for k, (indexed, second, index, priority) in enumerate(specs):
        name = f"pg-w{k}-{index}" if indexed else f"p{k}"
        p = pod(name, "pg", priority=priority)
        p["metadata"]["creationTimestamp"] = f"2024-01-01T00:00:{second:02d}Z"
        docs.append(p)
    return docs


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 4), st.sampled_from([None, 1, 5])),
                min_size=1, max_size=12),
       st.sampled_from([DEFAULT_SCHEDULER_CONF, "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"]))
def test_sorted_worksheet_pops_as_the_comparator_heap(specs: list[tuple[bool, int, int, int | None]],
                                                      conf: str) -> None:
    ssn = open_session(*_pods(specs), conf=conf)
    tasks = sorted(ssn.jobs["ns/pg"].tasks.values(), key=lambda t: t.uid)
    heap = PriorityQueue(ssn.task_order_fn, tasks)
    queue_ = task_queue(ssn, tasks)
    mixed = 0 < sum(1 for t in tasks if t.index is not None) < len(tasks)
    assert isinstance(queue_, SortedTasks) != mixed
    assert [queue_.pop().uid for _ in range(len(tasks))] == [heap.pop().uid for _ in range(len(tasks))]
    assert not queue_


def test_sorted_worksheet_keeps_pushed_tasks_in_order() -> None:
    cache = cache_of(*_pods([(True, 0, 3, 1), (True, 0, 1, 1), (True, 0, 2, 9)]))
    tasks = sorted(cache.jobs["ns/pg"].tasks.values(), key=lambda t: t.uid)
    q = SortedTasks(lambda t: (-t.priority, t.index, t.uid), tasks)
    first = q.pop()
    assert first.priority == 9
    q.push(first)
    assert [q.pop().index for _ in range(3)] == [2, 1, 3]
    assert len(q) == 0
