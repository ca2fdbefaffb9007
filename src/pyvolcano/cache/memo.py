"""SessionMemo: what sessions keep from one session to the next, owned by the cache.

A session is rebuilt from the cache every cycle, but some derived data is worth keeping
across sessions because the cache's change logs say exactly when it goes stale:

* ``feasibility``: the allocate predicate's verdict on every node per task-equivalence key,
  kept with the node table's change-log position it is current as of
  (``Session.feasibility_mask``);
* ``score_cache``: node-local node-order scores per (plugin, task key), cleared at every
  session open because they may reflect session-local plugin state;
* ``plugin_memo``: plugins' own derived data (keyed by plugin), e.g. proportion's per-queue
  sums and water-filling, the predicates' stable filters;
* ``last_processed_node_index``: upstream's round-robin start of the feasible-node search;
* ``session_changes`` / ``close_changes``: the cache's job change feed as seen by the session
  passes (jobs changed since the last session started) and by session close (jobs changed
  since the last close, ``framework/job_updater.unsettled_jobs``).

The cache creates one memo and hands it to every session it opens (``Session(memo=...)``);
nothing in a session reaches for these through cache attributes. Invariant: every shortcut
the memo enables can be switched back to its from-scratch form (``track_session_changes``
False, the plugin memos dropped) without changing a decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pyvolcano.api.job import JobChanges

__all__ = ["SessionMemo"]


class SessionMemo:
    # The per-session passes visit only the jobs the change feed reported (False: every job,
    # the from-scratch form the equivalence tests compare with).
    track_session_changes = True

    def __init__(self, job_changes: JobChanges):
        self.feasibility: dict[object, tuple[np.ndarray, int]] = {}
        self.score_cache: dict[object, tuple[np.ndarray, np.ndarray, int]] = {}
        self.plugin_memo: dict[str, Any] = {}
        self.last_processed_node_index = 0
        self.session_changes = job_changes.subscribe()
        self.close_changes = job_changes.subscribe()
