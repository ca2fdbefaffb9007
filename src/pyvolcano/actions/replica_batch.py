"""Batched placement of identical replicas for allocate (the per-pod path's decisions, cheaper).

Design. When every enabled predicate and node-order plugin declares, for a task, that its
verdict or score on a node depends only on the task's template and that node's own state
(the cache keys of :meth:`Session.add_predicate_fn` and :meth:`Session.add_node_order_fn`,
the condition the equivalence caches already rely on) and no enabled plugin opted out
(``batchable=False``: device sharing and the GPU placement policies), the replicas of the task that
allocate pops one after another share one :class:`ReplicaBatch`. It keeps, over the
feasible nodes in node order (doubled, so that a round-robin window is one contiguous
slice), the summed node score, whether the request fits Idle, and the score masked to the
nodes where it does. For each replica it takes upstream's window (numNodesToFind feasible
nodes from ``last_processed_node_index``) as a slice, picks the best score among the nodes
where the request fits Idle (else among all of the window: the pipelining case), breaks
ties with the session's generator exactly as :meth:`Session.select_best_node` does, and
moves the round-robin index as :meth:`Session.predicate_nodes` does. The chosen row becomes
*dirty*: its values are stale, but nothing reads them until a later window reaches it (the
window moves on by numNodesToFind feasible nodes per replica, so that is once per turn
around the cluster) or a selection finds rows in the node table's change log that the batch
did not choose. Then every dirty and changed row is re-evaluated in one vectorised call of
the same predicate and scoring callbacks as the per-pod path.

Everything else stays per pod in allocate: the task queue, the queue-quota check, PrePredicate,
the statement's allocate or pipeline and the plugins' allocate events, JobReady.

Invariants: the batch is valid only for tasks whose (predicate key, node-order key) equal
its own; no selection reads a dirty row or a row changed since the batch's change-log
position, so placements made by the per-pod path in between are seen; it writes the feasibility verdicts back to the
cache's store, so the per-pod path and later sessions see the same masks. It records no fit
errors: when no node is feasible, :meth:`select` returns None and the per-pod path runs,
records the errors and leaves the round-robin index where it would.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np

from pyvolcano.api.resource import MIN_RESOURCE
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.session import Session

__all__ = ["BatchKey", "ReplicaBatch", "batch_key"]

BatchKey = tuple[Hashable, Hashable]


def batch_key(ssn: Session, task: TaskInfo) -> BatchKey | None:
    """The key under which ``task`` may join a batch, or None (per-pod path only)."""
    if task.pod.nominated_node_name:
        return None
    pkey = ssn.predicate_cache_key(task)
    if pkey is None:
        return None
    skey = ssn.node_order_cache_key(task)
    if skey is None:
        return None
    return (pkey, skey)


class ReplicaBatch:
    """Feasible nodes and their scores for the replicas of one template (see module doc)."""

    __slots__ = (
        "dirty", "fidx", "fidx2", "idle2", "idle_all", "key", "mask", "masked2", "member", "n", "position",
        "scores2", "scores_all", "ssn", "vec", "want",
    )

    def __init__(self, ssn: Session, task: TaskInfo, key: BatchKey):
        self.ssn = ssn
        self.key = key
        table = ssn.node_table
        self.n = table.n
        self.want = ssn.num_feasible_nodes_to_find(self.n)
        self.vec = table.task_vector(task)
        # Rows this batch chose since its values were last brought up to date, with their
        # position in ``fidx``: their values are stale until the next _sync.
        self.dirty: dict[int, int] = {}
        self._start(task)

    def _start(self, task: TaskInfo) -> None:
        self.mask = self.ssn.feasibility_mask(task, self.key[0])
        # The verdicts fidx was built from (the store's mask may be brought up to date by the
        # per-pod path in between, so it cannot tell which verdicts flipped).
        self.member = self.mask.copy()
        self.position = self.ssn.node_table.change_position
        self.dirty.clear()
        self._rebuild(task, np.flatnonzero(self.member).astype(np.int64))

    def _rebuild(self, task: TaskInfo, fidx: np.ndarray) -> None:
        ssn = self.ssn
        self.fidx = fidx
        table = ssn.node_table
        self.idle_all = np.zeros(self.n, dtype=bool)
        self.scores_all = np.zeros(self.n, dtype=np.float64)
        if len(fidx):
            self.idle_all[fidx] = table.fit_mask(self.vec, fidx, future=False)
            self.scores_all[fidx] = ssn.node_order_scores(task, fidx)
        self._window_arrays()

    def _window_arrays(self) -> None:
        fidx = self.fidx
        idle = self.idle_all[fidx]
        scores = self.scores_all[fidx]
        self.fidx2 = np.concatenate([fidx, fidx])
        self.idle2 = np.concatenate([idle, idle])
        self.scores2 = np.concatenate([scores, scores])
        self.masked2 = np.where(self.idle2, self.scores2, -np.inf)

    def _sync(self, task: TaskInfo) -> None:
        """Re-evaluate the rows changed since the batch was last up to date, and the dirty ones."""
        ssn = self.ssn
        table = ssn.node_table
        changed = table.changes_since(self.position)
        if changed is None:
            # The change log no longer reaches back: start again from the store.
            self._start(task)
            return
        if self.dirty:
            changed = np.union1d(changed, np.fromiter(self.dirty, dtype=np.int64, count=len(self.dirty)))
            self.dirty.clear()
        self.position = table.change_position
        if not len(changed):
            return
        ok = self._verdicts(task, changed)
        member = self.member
        flipped = bool((member[changed] != ok).any())
        member[changed] = ok
        self.mask[changed] = ok
        ssn.store_feasibility(self.key[0], self.mask, self.position)
        rows = changed[ok]
        if len(rows):
            idle = self._fits_idle(rows)
            scores = ssn.node_local_scores(task, rows)
            self.idle_all[rows] = idle
            self.scores_all[rows] = scores
        if flipped:
            self.fidx = np.flatnonzero(member).astype(np.int64)
            self._window_arrays()
            return
        if not len(rows):
            return
        f = len(self.fidx)
        pos = np.searchsorted(self.fidx, rows)
        masked = np.where(idle, scores, -np.inf)
        for p in (pos, pos + f):
            self.idle2[p] = idle
            self.scores2[p] = scores
            self.masked2[p] = masked

    def _verdicts(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """:meth:`Session.allocate_predicate`'s pass mask over ``rows`` (its errors unused)."""
        if len(rows) != 1:
            return self.ssn.allocate_predicate(task, rows)[0]
        # One row: the same fit comparison as NodeTable.fit_mask, on Python floats.
        future = self.ssn.node_table.future
        i = int(rows[0])
        for d, v in self.vec:
            if not float(future[d][i]) > v - MIN_RESOURCE:
                return np.zeros(1, dtype=bool)
        ok, _groups = self.ssn.predicate_failures(task, rows)
        return ok

    def _fits_idle(self, rows: np.ndarray) -> np.ndarray:
        """``NodeTable.fit_mask(vec, rows, future=False)``, on Python floats for one row."""
        table = self.ssn.node_table
        if len(rows) != 1:
            return table.fit_mask(self.vec, rows, future=False)
        idle = table.idle
        i = int(rows[0])
        fits = all(float(idle[d][i]) > v - MIN_RESOURCE for d, v in self.vec)
        return np.array([fits], dtype=bool)

    def select(self, task: TaskInfo) -> int | None:
        """The node the per-pod path would choose for ``task``; None to run the per-pod path.

        Moves the round-robin index and consumes the session's generator as the per-pod path
        does. None (nothing moved, nothing consumed) when no node is feasible or a score is
        not a finite number. The chosen row becomes dirty: it is re-evaluated only when a
        later window reaches it or something else changed the node table.
        """
        ssn = self.ssn
        table = ssn.node_table
        if table.change_position != self.position:
            tail = table.rows_changed_since(self.position)
            dirty = self.dirty
            if tail is None or not all(r in dirty for r in tail):
                self._sync(task)
            else:
                # Only the rows this batch chose changed: they are dirty already.
                self.position = table.change_position
        n = self.n
        cache = ssn.cache
        start = cache.last_processed_node_index % n
        want = self.want
        while True:
            f = len(self.fidx)
            if f == 0:
                return None
            k = int(self.fidx.searchsorted(start))
            m = want if f >= want else f
            if not self.dirty or not self._dirty_in(k, m, f):
                break
            self._sync(task)
        window = slice(k, k + m)
        idle = self.idle2[window]
        n_idle = int(np.count_nonzero(idle))
        cand = self.masked2[window] if n_idle else self.scores2[window]
        n_cand = n_idle if n_idle else m
        if n_cand == 1:
            pick = int(idle.nonzero()[0][0]) if n_idle else 0
        else:
            best = float(cand.max())
            if not math.isfinite(best):
                return None
            ties = (cand == best).nonzero()[0]
            pick = int(ties[0]) if len(ties) == 1 else int(ties[int(ssn.rng.integers(len(ties)))])
        if f >= want:
            cache.last_processed_node_index = (int(self.fidx2[k + want - 1]) + 1) % n
        else:
            cache.last_processed_node_index = start
        p = k + pick
        if p >= f:
            p -= f
        chosen = int(self.fidx[p])
        self.dirty[chosen] = p
        return chosen

    def _dirty_in(self, k: int, m: int, f: int) -> bool:
        """Whether a dirty row lies in the window of ``m ≤ f`` positions from ``k`` (cyclic)."""
        return any((p - k) % f < m for p in self.dirty.values())
