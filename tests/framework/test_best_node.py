"""The best-node extension point (upstream ``Session.BestNodeFn``): ``select_best_node`` asks the
enabled choosers in tier order, the first answer that is not None wins, and without one the
best score wins, ties at random."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import node, open_session, pod, podgroup, queue
from pyvolcano.framework.session import Session

CONF = """
actions: allocate
tiers:
- plugins:
  - name: gang
  - name: priority
    {flag}
- plugins:
  - name: predicates
"""


def session(flag: str = "") -> Session:
    docs: list[dict[str, Any]] = [queue("q"), *(node(f"n{i}") for i in range(4)), podgroup("pg"), pod("p", "pg")]
    return open_session(*docs, conf=CONF.format(flag=flag))


def test_the_first_chooser_with_an_answer_picks_the_node() -> None:
    ssn = session()
    task = next(iter(ssn.jobs["ns/pg"].tasks.values()))
    asked: list[str] = []
    ssn.add_best_node_fn("gang", lambda t, idx, scores: asked.append("gang"))  # type: ignore[func-returns-value]
    ssn.add_best_node_fn("priority", lambda t, idx, scores: int(idx[-1]))
    ssn.add_best_node_fn("predicates", lambda t, idx, scores: int(idx[0]))
    idx = np.arange(4, dtype=np.int64)
    assert ssn.select_best_node(task, idx) == 3 and asked == ["gang"]


def test_a_chooser_whose_plugin_disables_best_node_is_not_asked() -> None:
    ssn = session("enableBestNode: false")
    task = next(iter(ssn.jobs["ns/pg"].tasks.values()))
    ssn.add_best_node_fn("priority", lambda t, idx, scores: int(idx[-1]))
    picks = {ssn.select_best_node(task, np.arange(4, dtype=np.int64)) for _ in range(40)}
    assert len(picks) > 1  # four equal nodes: the random pick among them


def test_without_a_chooser_the_pick_is_the_random_one_among_the_best_scores() -> None:
    with_none, plain = session(), session()
    with_none.add_best_node_fn("priority", lambda t, idx, scores: None)
    task_a = next(iter(with_none.jobs["ns/pg"].tasks.values()))
    task_b = next(iter(plain.jobs["ns/pg"].tasks.values()))
    idx = np.arange(4, dtype=np.int64)
    assert ([with_none.select_best_node(task_a, idx) for _ in range(20)]
            == [plain.select_best_node(task_b, idx) for _ in range(20)])
