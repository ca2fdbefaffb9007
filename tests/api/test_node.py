"""NodeTable's trial accounting (api/node.py) leaves exactly the columns a placement leaves."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.task import TaskStatus

COLUMNS = ("idle", "used", "pipelined", "releasing", "future", "allocatable")


def _snapshot(table, n):  # type: ignore[no-untyped-def]
    cols = {name: [a[:n].copy() for a in getattr(table, name)] for name in COLUMNS}
    cols["other"] = [table.nonzero_cpu[:n].copy(), table.nonzero_mem[:n].copy(), table.task_count[:n].copy()]
    return cols


def _equal(a, b) -> bool:  # type: ignore[no-untyped-def]
    return all(np.array_equal(x, y) for k in a for x, y in zip(a[k], b[k], strict=True))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["300m", "1", "2500m"]), min_size=1, max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6), st.sampled_from(["700m", "1", "3"]))
def test_trial_add_accounts_as_add_task_and_undo_restores_every_column(placed, allocated, cpu) -> None:  # type: ignore[no-untyped-def]
    docs = [queue("q"), podgroup("pg", queue="q", min_member=1)]
    docs += [node(f"n{i}", cpu="7", memory="9Gi", nvidia__com__gpu="2") for i in range(6)]
    docs += [pod(f"r{k}", "pg", cpu=c, memory="333Mi", node_name=f"n{k}", phase="Running")
             for k, c in enumerate(placed)]
    docs.append(pod("p-0", "pg", cpu=cpu, memory="1234Mi"))
    cache = cache_of(*docs)
    table = cache.node_table
    task = next(t for t in cache.tasks.values() if t.name == "p-0")
    vec = table.task_vector(task)
    rows = np.arange(6, dtype=np.int64)
    mode = np.array(allocated, dtype=bool)
    before = _snapshot(table, table.n)
    position = table.change_position
    undo = table.trial_add(rows, vec, task.nonzero_request(), mode)
    trial = _snapshot(table, table.n)
    undo()
    assert _equal(_snapshot(table, table.n), before)
    assert table.change_position == position
    # The same task really placed on each row, one row at a time, as allocate would.
    for i in range(6):
        node_info = cache.node_list[i]
        task.status = TaskStatus.Allocated if mode[i] else TaskStatus.Pipelined
        node_info.add_task(task)
        for name in COLUMNS:
            for d in range(len(table.dims)):
                assert getattr(table, name)[d][i] == trial[name][d][i], (name, d, i)
        assert table.nonzero_cpu[i] == trial["other"][0][i]
        assert table.task_count[i] == trial["other"][2][i]
        node_info.remove_task(task)
