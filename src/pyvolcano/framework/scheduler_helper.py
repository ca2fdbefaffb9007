"""Node selection (upstream ``pkg/scheduler/util/scheduler_helper.go``).

How a session finds and ranks nodes for a task: ``predicate_nodes`` examines candidates
from the round-robin start (the session memo's ``last_processed_node_index``) and stops at
upstream's ``numFeasibleNodesToFind``, recording fit errors only for the nodes it examined;
``feasible_nodes`` is its fast path for tasks with a predicate cache key, over a feasibility
mask kept across sessions (a :class:`~pyvolcano.cache.memo.RowMemo`, re-evaluated only on
rows the node table changed); ``select_best_node`` and ``sort_nodes_by_score`` rank by the
summed node-order scores, breaking ties with the session's seeded generator (``select_best_node``
asks the best-node plugins first, as upstream's allocate does). The allocate and
preempt predicates (``allocate_predicate``, ``preempt_predicate``) combine the resource fit
with the plugins' predicates.

:class:`SchedulerHelper` is the part of :class:`~pyvolcano.framework.session.Session` that
does this; it is not used on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, FitErrors, insufficient_reason
from pyvolcano.framework.session_plugins import SessionPlugins

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache

__all__ = ["BASELINE_PERCENTAGE_OF_NODES_TO_FIND", "MIN_NODES_TO_FIND", "MIN_PERCENTAGE_OF_NODES_TO_FIND",
           "SchedulerHelper"]

MIN_NODES_TO_FIND = 100
MIN_PERCENTAGE_OF_NODES_TO_FIND = 5
BASELINE_PERCENTAGE_OF_NODES_TO_FIND = 50


class SchedulerHelper(SessionPlugins):
    """Feasible-node search and node ranking over the session's plugins."""

    cache: SchedulerCache
    rng: np.random.Generator

    # ------------------------------------------------------------------ node selection helpers
    def num_feasible_nodes_to_find(self, n: int) -> int:
        opts = self.cache.options
        if n <= opts.min_nodes_to_find or opts.percentage_of_nodes_to_find >= 100:
            return n
        pct = opts.percentage_of_nodes_to_find
        if pct <= 0:
            pct = BASELINE_PERCENTAGE_OF_NODES_TO_FIND - n // 125
            pct = max(pct, opts.min_percentage_of_nodes_to_find)
        return max(n * pct // 100, opts.min_nodes_to_find)

    def predicate_nodes(
        self,
        task: TaskInfo,
        idx: np.ndarray,
        predicate: Callable[[TaskInfo, np.ndarray], tuple[np.ndarray, FitErrors]],
        *,
        limit: bool = True,
    ) -> tuple[np.ndarray, FitErrors]:
        """Upstream ``PredicateNodes``: feasible nodes from a round-robin start, up to numNodesToFind.

        ``idx`` is the candidate node index array in node order. Fit errors are recorded only for
        nodes that were examined, as upstream does.
        """
        n = len(idx)
        if n == 0:
            return idx, FitErrors()
        start = self.memo.last_processed_node_index % n
        order = idx if start == 0 else np.concatenate([idx[start:], idx[:start]])
        want = self.num_feasible_nodes_to_find(n) if limit else n
        # Evaluate in chunks from the round-robin start and stop once enough feasible nodes
        # are found, as upstream stops its workers (only examined nodes get fit errors).
        chunk = n if want >= n else min(n, max(1024, 2 * want))
        found: list[np.ndarray] = []
        n_found = 0
        errors = FitErrors()
        pos = 0
        processed = n
        while pos < n:
            part = order[pos : pos + chunk]
            ok, fe = predicate(task, part)
            hits = np.flatnonzero(ok)
            if n_found + len(hits) >= want:
                need = want - n_found
                cut = int(hits[need - 1]) + 1
                found.append(part[hits[:need]])
                processed = pos + cut
                errors.groups.extend(_restrict_errors(fe, part[:cut]).groups if cut < len(part) else fe.groups)
                n_found = want
                break
            found.append(part[hits])
            n_found += len(hits)
            errors.groups.extend(fe.groups)
            errors.err = errors.err or fe.err
            pos += len(part)
        self.memo.last_processed_node_index = (start + processed) % n
        feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return feasible, errors

    def feasible_nodes(self, task: TaskInfo, key: Hashable) -> np.ndarray:
        """Fast path of :meth:`predicate_nodes` with :meth:`allocate_predicate` over all nodes.

        Uses a per-key feasibility mask kept in the cache across sessions: only rows in the node
        table's change log since the mask was computed are re-evaluated. The round-robin window
        (numNodesToFind from the last processed index) is applied exactly as in
        :meth:`predicate_nodes`. Returns an empty array when no node is feasible; the caller
        then runs the full path to collect fit errors (which leaves the round-robin index
        where it is, as the full path does when it examines every node).
        """
        mask = self.feasibility_mask(task, key)
        # The same round-robin window as the full path, over the cached verdicts.
        feasible, _ = self.predicate_nodes(
            task, np.arange(len(mask), dtype=np.int64), lambda _t, order: (mask[order], FitErrors())
        )
        return feasible

    def feasibility_mask(self, task: TaskInfo, key: Hashable) -> np.ndarray:
        """The allocate predicate's verdict on every node for tasks of ``key``, up to date.

        Kept in the session memo across sessions; only rows changed since it was last brought
        up to date are re-evaluated. The returned array is the stored one (callers that update
        rows themselves write it back with :meth:`store_feasibility`).
        """
        table = self.node_table
        mask, known, stale = self.memo.feasibility.refresh(key, table)
        if stale is None:
            mask[:], _ = self.allocate_predicate(task, np.arange(table.n, dtype=np.int64))
            known[:] = True
        elif len(stale):
            mask[stale], _ = self.allocate_predicate(task, stale)
            known[stale] = True
        return mask

    def store_feasibility(self, key: Hashable, mask: np.ndarray, position: int) -> None:
        """Record ``mask`` as the verdicts for ``key`` as of change-log ``position``."""
        self.memo.feasibility.put(key, mask, position)

    def allocate_predicate(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, FitErrors]:
        """Allocate's predicate: InitResreq ≤ FutureIdle, then every plugin predicate."""
        fe = FitErrors()
        vec = self.node_table.task_vector(task)
        fit = self.node_table.fit_mask(vec, idx)
        if not fit.all():
            _, failures = self.node_table.fits(vec, idx)
            assigned = np.zeros(len(idx), dtype=bool)
            for name, mask in failures:
                new = mask & ~assigned
                if new.any():
                    fe.add(insufficient_reason([name]), Code.Unschedulable, idx[new])
                    assigned |= new
        if fit.all():
            pok, groups = self.predicate_failures(task, idx)
            for st, nodes in groups:
                fe.add(st.reason, st.code, nodes)
            return pok, fe
        live = np.flatnonzero(fit)
        ok = np.zeros(len(idx), dtype=bool)
        if len(live):
            pok, groups = self.predicate_failures(task, idx[live])
            ok[live[pok]] = True
            for st, nodes in groups:
                fe.add(st.reason, st.code, nodes)
        return ok, fe

    def preempt_predicate(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, FitErrors]:
        """``PredicateForPreemptAction``: only unresolvable/error statuses reject a node."""
        fe = FitErrors()
        ok = np.ones(len(idx), dtype=bool)
        _pok, groups = self.predicate_failures(task, idx)
        for st, nodes in groups:
            if st.aborts:
                fe.add(st.reason, st.code, nodes)
                ok &= ~np.isin(idx, nodes)
        return ok, fe

    def select_best_node(self, task: TaskInfo, idx: np.ndarray) -> int:
        """Score candidates and pick the best: a best-node plugin's choice (upstream
        ``BestNodeFn``), else the best score, ties broken uniformly at random."""
        if len(idx) == 1:
            return int(idx[0])
        scores = self.node_order_scores(task, idx)
        if self.has("best_node"):
            chosen = self.best_node(task, idx, scores)
            if chosen is not None:
                return chosen
        best = scores.max()
        ties = np.flatnonzero(scores == best)
        pick = ties[0] if len(ties) == 1 else ties[int(self.rng.integers(len(ties)))]
        return int(idx[pick])

    def sort_nodes_by_score(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        if len(idx) <= 1:
            return idx
        scores = self.node_order_scores(task, idx)
        order = np.argsort(-scores, kind="stable")
        return idx[order]


def _restrict_errors(errors: FitErrors, examined: np.ndarray) -> FitErrors:
    out = FitErrors()
    out.err = errors.err
    for g in errors.groups:
        keep = g.nodes[np.isin(g.nodes, examined)]
        out.add(g.reason, g.code, keep)
    return out
