"""SessionMemo: what sessions keep from one session to the next, owned by the cache.

A session is rebuilt from the cache every cycle, but some derived data is worth keeping
across sessions because the cache's change logs say exactly when it goes stale:

* ``feasibility``: the allocate predicate's verdict on every node per task-equivalence key
  (``Session.feasibility_mask``);
* ``score_cache``: node-local node-order scores per (plugin, task key), cleared at every
  session open because they may reflect session-local plugin state;

  both are :class:`RowMemo` objects: arrays over the node table's rows brought up to date from
  the table's change log, so only rows changed since are evaluated again;
* ``plugin_memo``: plugins' own derived data (keyed by plugin), e.g. proportion's per-queue
  sums and water-filling, the predicates' stable filters;
* ``plugin_state``: plugins' own state that decisions depend on (tdm's last victim round,
  rescheduling's last run), recorded with a session by the decision recorder;
* ``last_processed_node_index``: upstream's round-robin start of the feasible-node search;
* ``session_changes`` / ``close_changes``: the cache's job change feed as seen by the session
  passes (jobs changed since the last session started) and by session close (jobs changed
  since the last close, ``framework/job_updater.unsettled_jobs``);
* ``fit_reset_changes`` / ``fit_reset_kept``: the jobs the session-open fit-error reset must
  look at (reported since it last ran, or left alone by it as unchanged since their failure);
* ``diagnosed``: the jobs that had a diagnosis after the last close (``diagnosis/diagnose.py``);
* ``job_filter(name, wanted)``: the jobs an action can act on, kept by the change feed
  (:class:`~pyvolcano.cache.job_filter.JobFilter`; enqueue's and allocate's job queues).

The cache creates one memo and hands it to every session it opens (``Session(memo=...)``);
nothing in a session reaches for these through cache attributes. Invariant: every shortcut
the memo enables can be switched back to its from-scratch form (``track_session_changes``,
``feed_fit_reset``, ``feed_action_queues``, ``feed_close_passes`` False, the plugin memos
dropped) without changing a decision.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from pyvolcano.api.job import JobChanges, JobInfo
from pyvolcano.api.node import NodeTable
from pyvolcano.cache.job_filter import JobFilter

__all__ = ["RowMemo", "SessionMemo"]


class RowMemo:
    """Per-key arrays over the node table's rows, kept across sessions.

    An entry holds the values, a mask of the rows whose value is known, and the change-log
    position it is current as of. :meth:`refresh` brings an entry up to date: the rows changed
    since are marked unknown (every row when the log no longer reaches back); an entry of
    another table size is started afresh. At most ``limit`` keys are kept, the oldest dropped
    first.
    """

    def __init__(self, dtype: type, limit: int = 512):
        self._dtype = dtype
        self._limit = limit
        self._entries: dict[Hashable, tuple[np.ndarray, np.ndarray, int]] = {}

    def refresh(self, key: Hashable, table: NodeTable) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(values, known, stale)`` for ``key``, as of now: ``stale`` are the rows just marked
        unknown, None when no row is known (a new entry, or the log no longer reaches back).
        The arrays are the stored ones: callers fill in the rows they evaluate."""
        n = table.n
        entries = self._entries
        entry = entries.get(key)
        if entry is None or len(entry[0]) != n:
            values: np.ndarray = np.zeros(n, dtype=self._dtype)
            known: np.ndarray = np.zeros(n, dtype=bool)
            entries[key] = (values, known, table.change_position)
            if len(entries) > self._limit:
                entries.pop(next(iter(entries)))
            return values, known, None
        values, known, position = entry
        stale = table.changes_since(position)
        if stale is None:
            known[:] = False
        elif len(stale):
            known[stale] = False
        entries[key] = (values, known, table.change_position)
        return values, known, stale

    def put(self, key: Hashable, values: np.ndarray, position: int) -> None:
        """Record ``values`` (every row known) for ``key`` as of change-log ``position``."""
        self._entries[key] = (values, np.ones(len(values), dtype=bool), position)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class SessionMemo:
    # The per-session passes visit only the jobs the change feed reported (False: every job,
    # the from-scratch form the equivalence tests compare with).
    track_session_changes = True
    # The fit-error reset at session open visits only the jobs reported since it last ran and
    # those it left alone then (False: every job of the session).
    feed_fit_reset = True
    # enqueue and allocate build their job queues from the jobs they can act on, kept by the
    # change feed (False: they walk every job of the session).
    feed_action_queues = True
    # gang's condition pass and the diagnosis at session close visit only the unsettled jobs
    # and the jobs left with a diagnosis (False: every job of the session).
    feed_close_passes = True

    def __init__(self, job_changes: JobChanges, jobs: Mapping[str, JobInfo] | None = None):
        self.feasibility = RowMemo(bool)
        self.score_cache = RowMemo(np.float64)
        self.plugin_memo: dict[str, Any] = {}
        # Plugins' state that decisions depend on (keyed by plugin): tdm's last victim round,
        # rescheduling's last run. Unlike plugin_memo it is not derived data: it is recorded
        # with a session and restored for its replay.
        self.plugin_state: dict[str, dict[str, Any]] = {}
        self.last_processed_node_index = 0
        self.session_changes = job_changes.subscribe()
        self.close_changes = job_changes.subscribe()
        self.fit_reset_changes = job_changes.subscribe()
        self.fit_reset_kept: set[str] = set()
        self.fit_reset_primed = False
        self.diagnosed: dict[str, JobInfo] = {}
        # (fed, enqueue configured) as of the walk ``diagnosed`` was last rebuilt by.
        self.diagnosed_primed: tuple[bool, bool] | None = None
        self._job_changes = job_changes
        # The cache's jobs (with or without a PodGroup), read by the fed passes.
        self.jobs: Mapping[str, JobInfo] = jobs if jobs is not None else {}
        self._filters: dict[str, JobFilter] = {}

    def job_filter(self, name: str, wanted: Callable[[JobInfo], bool]) -> JobFilter:
        """The :class:`JobFilter` registered as ``name`` (created with ``wanted`` on first use;
        one name, one predicate)."""
        got = self._filters.get(name)
        if got is None:
            got = self._filters[name] = JobFilter(wanted, self.jobs, self._job_changes)
        return got
