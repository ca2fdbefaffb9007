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
moves the round-robin index as :meth:`Session.predicate_nodes` does.

After a placement only the chosen row changed. Projection: when every enabled predicate and
node-order plugin is ``projectable`` for the task (its verdict and score read only the
node's static attributes and its node-table columns), the batch also keeps, per feasible
row, the verdict, Idle fit and score *after one more replica* on it, computed for many rows
in one vectorised call on a trial state (:meth:`NodeTable.trial_add` accounts the
placement allocate would make, the callbacks run, the rows are put back exactly). The chosen
row then takes its projected values at once. Otherwise, or when its projection is used up
(chosen twice between syncs), the chosen row becomes *dirty*: its values are stale, but
nothing reads them until a later window reaches it (the window moves on by numNodesToFind
feasible nodes per replica, so that is once per turn around the cluster). A sync
re-evaluates, in one vectorised call of the same callbacks as the per-pod path, the dirty
rows and every row in the node table's change log that the batch did not account for (a
projected row must have changed exactly once), and projects them again.

Everything else stays per pod in allocate: the task queue, the queue-quota check, PrePredicate,
the statement's allocate or pipeline and the plugins' allocate events, JobReady.

Invariants: the batch is valid only for tasks whose (predicate key, node-order key) equal
its own; no selection reads a dirty row or a row changed since the batch's change-log
position other than by its own accounted placements, so placements made by the per-pod
path in between are seen; projected values equal the values the callbacks give on the real
row after the placement, because the trial performs the same float operations on the same
columns; it writes the feasibility verdicts back to the cache's store, so the per-pod path
and later sessions see the same masks. It records no fit
errors: when no node is feasible, :meth:`select` returns None and the per-pod path runs,
records the errors and leaves the round-robin index where it would.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from pyvolcano.api.resource import MIN_RESOURCE
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.session import Session

__all__ = ["BatchKey", "BatchState", "ReplicaBatch", "batch_key"]

BatchKey = tuple[Hashable, Hashable]
# Below this many rows, per-row scalar updates cost less than fancy-indexed ones.
_FEW = 4


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


@dataclass(slots=True)
class BatchState:
    """A copy of a :class:`ReplicaBatch`'s mutable state (:meth:`ReplicaBatch.save`); the
    arrays rebound rather than written in place (fidx, fidx2) are shared."""

    store_mask: np.ndarray  # the store's feasibility mask (the object), and a copy of it
    mask: np.ndarray
    member: np.ndarray
    fidx: np.ndarray
    fidx2: np.ndarray
    idle2: np.ndarray
    scores2: np.ndarray
    masked2: np.ndarray
    idle_all: np.ndarray
    scores_all: np.ndarray
    has_next: np.ndarray
    ok_next: np.ndarray
    idle_next: np.ndarray
    scores_next: np.ndarray
    dirty: dict[int, int]
    advanced: set[int]
    need_next: set[int]
    recheck: set[int]
    position: int


class ReplicaBatch:
    """Feasible nodes and their scores for the replicas of one template (see module doc)."""

    __slots__ = (
        "advanced", "dirty", "fidx", "fidx2", "has_next", "idle2", "idle_all", "idle_next", "key", "mask",
        "masked2", "member", "n", "need_next", "nonzero", "ok_next", "position", "project", "recheck", "scores2",
        "scores_all", "scores_next", "ssn", "syncs", "vec", "want",
    )

    def __init__(self, ssn: Session, task: TaskInfo, key: BatchKey):
        self.ssn = ssn
        self.key = key
        table = ssn.node_table
        self.n = table.n
        self.want = ssn.num_feasible_nodes_to_find(self.n)
        self.vec = table.task_vector(task)
        self.project = ssn.replicas_projectable(task)
        # Projections account this task's request and non-zero request; a replica with another
        # non-zero request or with inter-pod terms (equal keys need not mean equal ones) is
        # placed without them.
        self.nonzero = task.nonzero_request()
        # Rows this batch chose since its values were last brought up to date, with their
        # position in ``fidx``: their values are stale until the next _sync.
        self.dirty: dict[int, int] = {}
        # Rows chosen whose projected values became their values (one change-log entry each
        # is expected for them), and rows whose projection is used up.
        self.advanced: set[int] = set()
        self.need_next: set[int] = set()
        # Rows to re-evaluate at the next sync although the change log may not name them.
        self.recheck: set[int] = set()
        # Times the values were re-evaluated from the node table (a dry walk must see none).
        self.syncs = 0
        self._start(task)

    def _start(self, task: TaskInfo) -> None:
        self.syncs += 1
        self.mask = self.ssn.feasibility_mask(task, self.key[0])
        # The verdicts fidx was built from (the store's mask may be brought up to date by the
        # per-pod path in between, so it cannot tell which verdicts flipped).
        self.member = self.mask.copy()
        self.position = self.ssn.node_table.change_position
        self.dirty.clear()
        self.advanced.clear()
        self.need_next.clear()
        self.recheck.clear()
        n = self.n
        self.has_next = np.zeros(n, dtype=bool)
        self.ok_next = np.zeros(n, dtype=bool)
        self.idle_next = np.zeros(n, dtype=bool)
        self.scores_next = np.zeros(n, dtype=np.float64)
        self._rebuild(task, np.flatnonzero(self.member).astype(np.int64))
        self._project(task, self.fidx)

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

    def _project(self, task: TaskInfo, rows: np.ndarray) -> None:
        """Verdict, Idle fit and score of ``rows`` (feasible ones) after one more replica each.

        The placement allocate would make (allocate where the request fits Idle, else
        pipeline where it fits FutureIdle, else none) is accounted on the rows with
        :meth:`NodeTable.trial_add`, the same callbacks run, and the rows are put back.
        """
        if not self.project or not len(rows):
            return
        table = self.ssn.node_table
        vec = self.vec
        alloc = table.fits_rows(vec, rows, future=False)
        place = alloc | table.fits_rows(vec, rows, future=True)
        moved = rows[place]
        stay = rows[~place]
        if len(stay):
            # No placement: the row stays as it is.
            self.ok_next[stay] = True
            self.idle_next[stay] = self.idle_all[stay]
            self.scores_next[stay] = self.scores_all[stay]
        if len(moved):
            undo = table.trial_add(moved, vec, self.nonzero, alloc[place])
            try:
                ok = self._verdicts(task, moved)
                idle = self._fits_idle(moved)
                scores = self.ssn.node_local_scores(task, moved)
            finally:
                undo()
            self.ok_next[moved] = ok
            self.idle_next[moved] = idle
            self.scores_next[moved] = scores
        self.has_next[rows] = True

    def _sync(self, task: TaskInfo) -> None:
        """Re-evaluate the rows changed since the batch was last up to date, and the dirty ones."""
        ssn = self.ssn
        table = ssn.node_table
        self.syncs += 1
        tail = table.rows_changed_since(self.position)
        if tail is None:
            # The change log no longer reaches back: start again from the store.
            self._start(task)
            return
        # The rows to re-evaluate, sorted and unique: marked on a mask over the rows.
        marks = np.zeros(self.n, dtype=bool)
        if tail:
            marks[tail] = True
        extra = self.recheck
        if self.dirty:
            extra.update(self.dirty)
            self.dirty.clear()
        if extra:
            marks[list(extra)] = True
            extra.clear()
        changed = np.flatnonzero(marks).astype(np.int64, copy=False)
        self.position = table.change_position
        self.advanced.clear()
        if len(changed):
            self.has_next[changed] = False
            self._evaluate(task, changed)
        if self.need_next:
            marks[list(self.need_next)] = True
            self.need_next.clear()
            changed = np.flatnonzero(marks).astype(np.int64, copy=False)
        if self.project and len(changed):
            self._project(task, changed[self.member[changed]])

    def _evaluate(self, task: TaskInfo, changed: np.ndarray) -> None:
        ssn = self.ssn
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

    def _advance(self, row: int, p: int) -> None:
        """Make the projected values of ``row`` (at position ``p`` of ``fidx``) its values."""
        self.has_next[row] = False
        self.need_next.add(row)
        self.advanced.add(row)
        if not self.ok_next[row]:
            self.member[row] = False
            self.mask[row] = False
            self.fidx = np.flatnonzero(self.member).astype(np.int64)
            self._window_arrays()
            fidx = self.fidx
            for r in self.dirty:
                self.dirty[r] = int(fidx.searchsorted(r))
            return
        idle = bool(self.idle_next[row])
        score = float(self.scores_next[row])
        self.idle_all[row] = idle
        self.scores_all[row] = score
        masked = score if idle else -np.inf
        for q in (p, p + len(self.fidx)):
            self.idle2[q] = idle
            self.scores2[q] = score
            self.masked2[q] = masked

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
        not a finite number. The chosen row takes its projected values (the state the
        placement leaves) when it has them, else it becomes dirty: re-evaluated only when a
        later window reaches it or something else changed the node table.
        """
        self._catch_up(task)
        return self._choose(task)

    def select_many(self, task: TaskInfo, m: int) -> list[int]:
        """The nodes the per-pod path would choose for the next ``m`` replicas of ``task``'s
        template, each chosen as if the ones before it were already placed, none placed.

        The caller places them, in order, before anything else changes the node table. Stops
        early (fewer rows) where a selection would need rows this batch cannot know without
        the placements (a dirty row in the window), where it would choose a row chosen before
        in this call (the placement check of the second replica reads the first one's
        placement), or where :meth:`select` would return None; an empty list means
        :meth:`select` returns None for the first replica (nothing moved, nothing consumed).
        """
        self._catch_up(task)
        row = self._choose(task)
        if row is None:
            return []
        if m == 1 or not self.member[row]:
            return [row]
        return [row, *self._choose_ahead(task, m - 1)]

    def save(self, task: TaskInfo) -> BatchState:
        """Bring the batch up to date, then a copy of its state for :meth:`restore`.

        For a dry walk of selections (``TaskPlacement._quota_cut``): selections made after
        this, with no placement and no sync in between, are undone by :meth:`restore`, which
        leaves the batch as the placements and their undo followed by a sync would (its
        values are those of the node table, which the walk did not change)."""
        self._catch_up(task)
        return BatchState(
            self.mask, self.mask.copy(), self.member.copy(), self.fidx, self.fidx2, self.idle2.copy(),
            self.scores2.copy(), self.masked2.copy(), self.idle_all.copy(), self.scores_all.copy(),
            self.has_next.copy(), self.ok_next.copy(), self.idle_next.copy(), self.scores_next.copy(), dict(self.dirty),
            set(self.advanced), set(self.need_next), set(self.recheck), self.position,
        )

    def restore(self, state: BatchState) -> None:
        """Put back the state :meth:`save` copied (the store's feasibility mask in place)."""
        self.mask = state.store_mask
        self.mask[:] = state.mask
        self.member = state.member
        self.fidx = state.fidx
        self.fidx2 = state.fidx2
        self.idle2 = state.idle2
        self.scores2 = state.scores2
        self.masked2 = state.masked2
        self.idle_all = state.idle_all
        self.scores_all = state.scores_all
        self.has_next = state.has_next
        self.ok_next = state.ok_next
        self.idle_next = state.idle_next
        self.scores_next = state.scores_next
        self.dirty = state.dirty
        self.advanced = state.advanced
        self.need_next = state.need_next
        self.recheck = state.recheck
        self.position = state.position

    def _catch_up(self, task: TaskInfo) -> None:
        """Bring the batch up to date with the node table's change log."""
        table = self.ssn.node_table
        if table.change_position != self.position:
            if self._own_changes(table.rows_changed_since(self.position)):
                # Only the rows this batch chose changed, once each where it projected them.
                self.position = table.change_position
                self.advanced.clear()
            else:
                self._sync(task)

    def _choose(self, task: TaskInfo) -> int | None:
        ssn = self.ssn
        n = self.n
        memo = ssn.memo
        start = memo.last_processed_node_index % n
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
            memo.last_processed_node_index = (int(self.fidx2[k + want - 1]) + 1) % n
        else:
            memo.last_processed_node_index = start
        return self._take(task, k + pick, f)

    def _take(self, task: TaskInfo, p: int, f: int) -> int:
        """The row at position ``p`` of the doubled arrays is chosen: it takes its projected
        values, or becomes dirty."""
        if p >= f:
            p -= f
        chosen = int(self.fidx[p])
        if self.has_next[chosen] and task.nonzero_request() == self.nonzero and not task.pod.has_pod_affinity:
            self._advance(chosen, p)
        else:
            self.dirty[chosen] = p
        return chosen

    def _choose_ahead(self, task: TaskInfo, r: int) -> list[int]:
        """Up to ``r`` further selections whose windows follow the last one's without
        overlapping it or each other, computed together (the window maxima and ties of all
        of them in one vectorised step; a choice changes only its own row, which no later
        window of the step contains). Each selection's tie-break, round-robin move and
        chosen row's update are then taken in order, exactly as :meth:`_choose` takes them.
        Stops before a window with a dirty row, at a window without a finite best score
        (:meth:`_choose` returns None there) and after a choice that leaves the feasible set
        (the positions after it shift)."""
        want = self.want
        f = len(self.fidx)
        if f < 2 * want:
            return []
        start = self.ssn.memo.last_processed_node_index % self.n
        k = int(self.fidx.searchsorted(start))
        r = min(r, f // want - 1, (2 * f - k) // want)
        for p in self.dirty.values():
            off = (p - k) % f
            if off < r * want:
                r = off // want
        if r <= 0:
            return []
        if r == 1:
            # One more window: the scalar selection is cheaper than the vectorised step.
            row = self._choose(task)
            return [] if row is None else [row]
        span = slice(k, k + r * want)
        idle = self.idle2[span].reshape(r, want)
        n_idle = np.count_nonzero(idle, axis=1)
        masked = self.masked2[span].reshape(r, want)
        if n_idle.all():
            cand = masked  # the usual case: every window has a node where the request fits Idle
        else:
            cand = np.where((n_idle > 0)[:, None], masked, self.scores2[span].reshape(r, want))
        best = cand.max(axis=1)
        ties = cand == best[:, None]
        n_ties = np.count_nonzero(ties, axis=1)
        first = ties.argmax(axis=1)
        rng = self.ssn.rng
        n_idle_l, n_ties_l, first_l = n_idle.tolist(), n_ties.tolist(), first.tolist()
        finite = np.isfinite(best).tolist()
        fidx = self.fidx
        fidx2_before = self.fidx2
        has_next, ok_next = self.has_next, self.ok_next
        project = task.nonzero_request() == self.nonzero and not task.pod.has_pod_affinity
        rows: list[int] = []
        # Rows taking their projected values, with their positions in fidx: written together
        # after the loop (no later window of the step reads them).
        adv_rows: list[int] = []
        adv_pos: list[int] = []
        taken = 0
        for i in range(r):
            ni = n_idle_l[i]
            if ni == 1:
                pick = int(idle[i].argmax())
            elif want == 1:
                pick = 0
            else:
                if not finite[i]:
                    break
                nt = n_ties_l[i]
                pick = first_l[i] if nt == 1 else int(ties[i].nonzero()[0][int(rng.integers(nt))])
            taken = i + 1
            p = k + i * want + pick
            if p >= f:
                p -= f
            row = int(fidx[p])
            rows.append(row)
            if not (project and has_next[row]):
                self.dirty[row] = p
            elif ok_next[row]:
                adv_rows.append(row)
                adv_pos.append(p)
            else:
                # It leaves the feasible set: the positions after it shift, the step ends
                # (the rows before it first, at the positions they had).
                self._advance_rows(adv_rows, adv_pos, f)
                adv_rows, adv_pos = [], []
                self._advance(row, p)
                break
        if taken:
            last = k + (taken - 1) * want + want - 1
            self.ssn.memo.last_processed_node_index = (int(fidx2_before[last]) + 1) % self.n
        self._advance_rows(adv_rows, adv_pos, f)
        return rows

    def _advance_rows(self, listed: list[int], positions: list[int], f: int) -> None:
        """:meth:`_advance` of ``listed`` rows (distinct, staying feasible) at ``positions``
        of ``fidx`` (of length ``f``)."""
        if len(listed) < _FEW:
            for row, p in zip(listed, positions, strict=True):
                self._advance(row, p)
            return
        rows = np.array(listed, dtype=np.int64)
        pos = np.array(positions, dtype=np.int64)
        self.has_next[rows] = False
        self.need_next.update(listed)
        self.advanced.update(listed)
        idle = self.idle_next[rows]
        scores = self.scores_next[rows]
        self.idle_all[rows] = idle
        self.scores_all[rows] = scores
        masked = np.where(idle, scores, -np.inf)
        for q in (pos, pos + f):
            self.idle2[q] = idle
            self.scores2[q] = scores
            self.masked2[q] = masked

    def _own_changes(self, tail: list[int] | None) -> bool:
        """Whether the change-log entries ``tail`` are all this batch's placements.

        A dirty row may change any number of times (it is re-evaluated anyway); a row whose
        projection was used must have changed exactly once, as the projected placement does.
        Otherwise the advanced rows are marked for re-evaluation by the sync that follows.
        """
        advanced = self.advanced
        dirty = self.dirty
        if tail is not None and len(tail) == 1 and len(advanced) == 1 and not dirty and tail[0] in advanced:
            return True  # the usual case: the one placement since the last selection
        ok = tail is not None
        if ok and tail is not None:
            seen: set[int] = set()
            for r in tail:
                if r in dirty:
                    continue
                if r in advanced and r not in seen:
                    seen.add(r)
                    continue
                ok = False
                break
            ok = ok and all(r in seen or r in dirty for r in advanced)
        if not ok:
            self.recheck.update(advanced)
            advanced.clear()
        return ok

    def _dirty_in(self, k: int, m: int, f: int) -> bool:
        """Whether a dirty row lies in the window of ``m ≤ f`` positions from ``k`` (cyclic)."""
        return any((p - k) % f < m for p in self.dirty.values())
