"""SessionMemo: the one owner of what sessions keep from one to the next and of what changed.

A session is rebuilt from the cache every cycle; some derived data is worth keeping across
sessions because the cache's change logs say exactly when it goes stale. Every such shortcut
is listed here, with what it is keyed on and what invalidates it; nothing outside this module
keeps scheduling state between sessions, and nothing outside a session sets a session's view
of what changed (it asks :meth:`SessionMemo.session_opened` as it opens).

The change logs the shortcuts key on:

* the **job change feed** (:class:`~pyvolcano.api.job.JobChanges`): every job of the cache
  reports its uid when its ``version`` (tasks, task statuses, PodGroup, phase) or
  ``fit_version`` (fit errors, last transactions) moves, and the cache reports the jobs that
  join or leave the sessions' view (PodGroup deleted, queue created or deleted); each consumer
  below has its own subscription, drained when it catches up, and walks every job once after
  an overflow;
* the **node table's change log** (``NodeTable.changes_since``): the rows whose state moved;
* ``SchedulerCache.node_generation`` (node labels, taints, schedulability) and
  ``capacity_epoch`` (resources released, node or queue changes).

The shortcuts — what each is keyed on or invalidated by, and its from-scratch form
(:attr:`SessionMemo.incremental` False):

* ``feasibility`` (:class:`RowMemo`): the allocate predicate's verdicts per predicate
  equivalence key; rows in the node table's change log are evaluated again. From scratch:
  cleared at every session open.
* ``score_cache`` (:class:`RowMemo`): node-order scores per node-order key, within one session
  (cleared at every session open: scores may read session-local plugin state).
* session changes (:meth:`session_opened`): the jobs the feed reported since the last session
  opened, then the ones the session changes; only they can hold pipelined or tentative tasks
  (``Session.changed_jobs_in_order``). From scratch: every job.
* settled jobs (:meth:`unsettled`): :func:`close_key` (version, fit version, PodGroup identity,
  phase, minMember) against the last close's, for the jobs the feed reported since the last
  close; session close, gang's condition pass and the diagnosis leave the others alone. From
  scratch: every job with a PodGroup is unsettled.
* fit-error reset (:meth:`fit_reset_visit`): the jobs the feed reported since the reset last
  ran, and the ones it left alone then. From scratch: every job.
* pending diagnosis (:meth:`diagnosis_visit`, :meth:`diagnosis`): a settled job keeps its
  diagnosis; the unsettled jobs and those with one are visited. From scratch: every job is
  diagnosed afresh.
* job filters (:meth:`select`): per filter, ``wanted(job)`` re-evaluated for the jobs the feed
  reported (:class:`~pyvolcano.cache.job_filter.JobFilter`); enqueue's, allocate's and
  backfill's job queues, the session's topology jobs, the writer's jobs with waiting tasks,
  the collector's jobs with pending pods. From scratch: every job of the view.
* job sums (:meth:`job_sums`, :data:`JOB_SUMS`): per job its contribution and version, the
  sums moved by deltas for the jobs the feed reported
  (:class:`~pyvolcano.cache.job_sums.JobSums`). From scratch: summed over every job.
* kept values (:meth:`kept`, :data:`KEPT_VALUES`): a value and the key it was computed for,
  each key stated with its :class:`Kept`. From scratch: recomputed at every use.
* scheduler metrics' per-job gauges (``metrics/scheduler.py``): :func:`close_key`. From
  scratch: every job's gauges recomputed.

Not a shortcut, kept here because it lives between sessions: the PodGroup status last handed
back to the writer (:meth:`podgroup_status_changed`; a new PodGroup object resets it, primed
at session open for the jobs the feed reported, or for every job), upstream's round-robin
start of the node search (``last_processed_node_index``), the plugins' own state that decisions
depend on (``plugin_state``: tdm's last victim round, rescheduling's last run; the decision
recorder records it with a session and restores it for the replay), the ``reservation`` plugin's
reservations (:attr:`SessionMemo.reservations`, an :class:`~pyvolcano.api.reservation.ReservationBook`:
the plugin replans them when its inputs move; the same either way), and the failure signature of
``SchedulerOptions.skip_unchanged_unschedulable`` (``JobMemo.unschedulable_at``; the option
changes decisions on purpose).

Per job the memo keeps a :class:`JobMemo` (close key, status handed back, diagnosis, failure
signature), by uid; the cache drops it with the job, and a new JobInfo under an old uid gets a
new one. JobInfo itself keeps only its versions and the feed it reports to.

Invariant: with :attr:`SessionMemo.incremental` False every shortcut takes its from-scratch
form and every decision, status and write is the same (``tests/simulator/test_incremental.py``
and ``tests/framework/test_fed_passes.py`` compare whole simulations and sessions both ways).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from pyvolcano.api.job import ChangedJobs, JobChanges, JobInfo
from pyvolcano.api.node import NodeTable
from pyvolcano.api.objects import PodGroup
from pyvolcano.api.reservation import ReservationBook
from pyvolcano.cache.job_filter import JobFilter
from pyvolcano.cache.job_sums import Contribution, JobSums

if TYPE_CHECKING:
    from pyvolcano.api.node import NodeInfo
    from pyvolcano.api.resource import Resource
    from pyvolcano.api.unschedule import Status
    from pyvolcano.diagnosis.model import Diagnosis

__all__ = ["KEPT_VALUES", "JobMemo", "Kept", "RowMemo", "SessionMemo", "close_key", "podgroup_status_key"]

T = TypeVar("T")


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


class Kept(Generic[T]):
    """A declared kept value: one slot of :meth:`SessionMemo.kept`, with what it holds."""

    __slots__ = ("about", "name")

    def __init__(self, name: str, about: str):
        self.name = name
        self.about = about

    def __repr__(self) -> str:
        return f"Kept({self.name!r})"


NODE_SIGNATURES: Kept[tuple[np.ndarray, list[NodeInfo]]] = Kept(
    "predicates/node-signatures",
    "each node's signature id (labels, taints, schedulability) and one node per signature; keyed on "
    "(node_generation, number of nodes)")
STABLE_FAILURES: Kept[dict[str, list[tuple[Status, np.ndarray]]]] = Kept(
    "predicates/stable-failures",
    "per task key, the nodes the node-static predicates reject, filled during sessions; keyed on "
    "(node_generation, number of nodes, the node-affinity and taint-toleration switches)")
WATER_FILLING: Kept[list[Resource]] = Kept(
    "proportion/water-filling",
    "each queue's deserved resources; keyed on the cluster total and every queue's weight, real capability, "
    "request and guarantee")
ASKED_WATER_FILLING: Kept[dict[tuple[str, tuple[Any, ...]], Resource]] = Kept(
    "proportion/asked-water-filling",
    "per (queue, extra request), the queue's deserved resources were its request that much larger (read by "
    "the reservation plugin for Pending gangs), filled during sessions; keyed as proportion/water-filling")

VOLUME_AFFINITY_NODES: Kept[tuple[dict[str, list[str]], dict[str, frozenset[str]]]] = Kept(
    "predicates/volume-affinity-nodes",
    "the nodes by hostname label, and per PersistentVolume node affinity the nodes it reaches, filled during "
    "sessions; keyed on (node_generation, number of nodes)")

NODE_GROUPS: Kept[tuple[np.ndarray, list[str]]] = Kept(
    "nodegroup/node-groups",
    "each node's node group (label volcano.sh/nodegroup-name) as an index into the group names, -1 for none; "
    "keyed on (node_generation, number of nodes)")

KEPT_VALUES: tuple[Kept[Any], ...] = (NODE_SIGNATURES, STABLE_FAILURES, WATER_FILLING, ASKED_WATER_FILLING,
                                      VOLUME_AFFINITY_NODES, NODE_GROUPS)
"""Every value :meth:`SessionMemo.kept` keeps."""

JOB_SUMS: Mapping[str, str] = {
    "proportion/queue-sums": "per queue: allocated, request, inqueue, elastic",
    "overcommit/reservations": "what admitted PodGroups reserve beyond their allocated tasks",
    "collector/allocated": "the simulator collector's per-queue allocated resources",
}
"""Every :meth:`SessionMemo.job_sums` kept, by name."""


def close_key(job: JobInfo) -> tuple[object, ...]:
    """What session close derives a job's PodGroup status, pod conditions and diagnosis from:
    its tasks and PodGroup (version), fit errors and last transactions (fit version), PodGroup
    identity, phase and minMember. Every part moves the job's version or fit version, or
    replaces its PodGroup (which moves the version too)."""
    pg = job.podgroup
    assert pg is not None
    return (job.version, job.fit_version, id(pg), pg.phase, pg.min_member)


def podgroup_status_key(pg: PodGroup) -> tuple[object, ...]:
    """The PodGroup status the writer writes: phase, counts and conditions."""
    return (pg.phase, pg.running, pg.succeeded, pg.failed,
            tuple((c.type, c.status, c.reason, c.message) for c in pg.conditions))


class JobMemo:
    """What sessions keep about one job of the cache."""

    __slots__ = ("close_key", "diagnosis", "job", "status_key", "unschedulable_at")

    def __init__(self, job: JobInfo):
        self.job = job
        # What session close last derived the PodGroup status from (close_key).
        self.close_key: tuple[object, ...] | None = None
        # The PodGroup status as of the last close (None: not known yet, a new PodGroup).
        self.status_key: tuple[object, ...] | None = None
        # Why the job is short of what it needs, as of the last close that looked at it
        # (None when nothing is unplaced or diagnosis is off).
        self.diagnosis: Diagnosis | None = None
        # (capacity epoch, pending tasks, PodGroup) when allocate last failed to place it.
        self.unschedulable_at: tuple[int, int, object] | None = None


class SessionMemo:
    """The cache's memo, handed to every session it opens (see the module docstring)."""

    incremental: ClassVar[bool] = True
    """The one switch: False turns every shortcut of the module docstring's table to its
    from-scratch form (for the equivalence tests and benchmarks; decisions are the same)."""

    def __init__(self, job_changes: JobChanges, jobs: Mapping[str, JobInfo] | None = None):
        self.feasibility = RowMemo(bool)
        self.score_cache = RowMemo(np.float64)
        # Upstream's round-robin start of the feasible-node search (state, not a shortcut).
        self.last_processed_node_index = 0
        # Plugins' state that decisions depend on (keyed by plugin): tdm's last victim round,
        # rescheduling's last run (state, not a shortcut: recorded with a session and restored
        # for its replay).
        self.plugin_state: dict[str, dict[str, Any]] = {}
        self._job_changes = job_changes
        # The cache's jobs (with or without a PodGroup): the job filters evaluate them.
        self.jobs: Mapping[str, JobInfo] = jobs if jobs is not None else {}
        self._session_changes = job_changes.subscribe()
        self._close_changes = job_changes.subscribe()
        self._fit_reset_changes = job_changes.subscribe()
        self._fit_reset_kept: set[str] = set()
        self._fit_reset_primed = False
        self._records: dict[str, JobMemo] = {}
        # The jobs with a diagnosis after the last close, and (incremental, enqueue configured)
        # as of the walk that last rebuilt the set.
        self._diagnosed: set[str] = set()
        self._diagnosed_primed: tuple[bool, bool] | None = None
        self._filters: dict[str, JobFilter] = {}
        self._sums: dict[str, JobSums] = {}
        self._kept: dict[str, tuple[Hashable, Any]] = {}
        # The reservation plugin's reservations (state, not a shortcut: api/reservation.py).
        self.reservations = ReservationBook()

    # ------------------------------------------------------------------ per job
    def job(self, job: JobInfo) -> JobMemo:
        """The record kept for ``job`` (a new one for a job not seen, or a new JobInfo under a
        uid seen before)."""
        rec = self._records.get(job.uid)
        if rec is None or rec.job is not job:
            rec = self._records[job.uid] = JobMemo(job)
        return rec

    def diagnosis(self, job: JobInfo) -> Diagnosis | None:
        """``job``'s diagnosis as of the last close that looked at it."""
        rec = self._records.get(job.uid)
        return rec.diagnosis if rec is not None and rec.job is job else None

    def forget(self, uid: str) -> None:
        """The cache dropped the job ``uid``: so does the memo."""
        self._records.pop(uid, None)
        self._diagnosed.discard(uid)

    def podgroup_replaced(self, uid: str) -> None:
        """The job ``uid`` got a new PodGroup object: its status as the store holds it is the
        one handed back (primed at the next session open)."""
        rec = self._records.get(uid)
        if rec is not None:
            rec.status_key = None

    # ------------------------------------------------------------------ session open
    def session_opened(self, jobs: Mapping[str, JobInfo]) -> ChangedJobs | None:
        """Called by a session as it opens, on its jobs: primes the PodGroup status of the jobs
        that got a PodGroup since, and returns the feed of the jobs changed since the last
        session opened, which then keeps receiving the jobs this session changes (None: not
        tracked, every job is walked)."""
        changed = self._session_changes
        reported = changed.take()
        incremental = self.incremental
        if not incremental:
            self.feasibility.clear()
        visit: Iterable[JobInfo]
        if reported is None or not incremental:
            visit = jobs.values()
        else:
            visit = (jobs[uid] for uid in reported if uid in jobs)
        # Only a job the change feed reported can lack its status key (a new PodGroup moves
        # the job's version).
        for job in visit:
            pg = job.podgroup
            if pg is not None:
                rec = self.job(job)
                if rec.status_key is None:
                    rec.status_key = podgroup_status_key(pg)
        return changed if incremental else None

    def fit_reset_visit(self, jobs: Mapping[str, JobInfo]) -> Iterable[JobInfo]:
        """The jobs the session-open fit-error reset must look at: those reported since it
        last ran and those it left alone then (:meth:`fit_reset_done`); every job the first
        time, after an overflow or from scratch."""
        reported = self._fit_reset_changes.take()
        incremental = self.incremental
        if not incremental or reported is None or not self._fit_reset_primed:
            self._fit_reset_primed = incremental
            return jobs.values()
        return [jobs[uid] for uid in sorted(self._fit_reset_kept.union(reported)) if uid in jobs]

    def fit_reset_done(self, kept: set[str]) -> None:
        """The jobs the reset left alone (skipped as unchanged since their failure)."""
        self._fit_reset_kept = kept

    # ------------------------------------------------------------------ session close
    def unsettled(self, jobs: Mapping[str, JobInfo]) -> list[str]:
        """The jobs with a PodGroup whose :func:`close_key` moved since the last close, in uid
        order, their key updated; only the jobs the feed reported since can have moved. From
        scratch: every job with a PodGroup."""
        visit = self._close_changes.take()  # None after an overflow: every job
        if not self.incremental:
            return [uid for uid, job in jobs.items() if job.podgroup is not None]
        out = []
        for uid in list(jobs) if visit is None else visit:
            job = jobs.get(uid)
            if job is None or job.podgroup is None:
                continue
            key = close_key(job)
            rec = self.job(job)
            if rec.close_key != key:
                rec.close_key = key
                out.append(uid)
        return out

    def podgroup_status_changed(self, job: JobInfo) -> bool:
        """Whether ``job``'s PodGroup status differs from the one last handed back (then it is
        the one handed back from now on)."""
        assert job.podgroup is not None
        key = podgroup_status_key(job.podgroup)
        rec = self.job(job)
        if key == rec.status_key:
            return False
        rec.status_key = key
        return True

    def diagnosis_visit(self, jobs: Mapping[str, JobInfo], unsettled: Iterable[str],
                        enqueue: bool) -> Iterable[tuple[str, JobInfo]]:
        """The jobs the pending diagnosis must look at: the unsettled ones and those left with a
        diagnosis (a settled job without one is not short); every job the first time, when
        whether enqueue is configured changed, and from scratch."""
        incremental = self.incremental
        if incremental and self._diagnosed_primed == (True, enqueue):
            return [(uid, jobs[uid]) for uid in sorted(self._diagnosed.union(unsettled)) if uid in jobs]
        self._diagnosed = {uid for uid, rec in self._records.items() if rec.diagnosis is not None}
        self._diagnosed_primed = (incremental, enqueue)
        return jobs.items()

    def set_diagnosis(self, job: JobInfo, diagnosis: Diagnosis | None) -> None:
        self.job(job).diagnosis = diagnosis
        if diagnosis is None:
            self._diagnosed.discard(job.uid)
        else:
            self._diagnosed.add(job.uid)

    # ------------------------------------------------------------------ jobs kept by the feed
    def feed(self) -> ChangedJobs:
        """A new subscription to the job change feed (drained by its one consumer)."""
        return self._job_changes.subscribe()

    def job_filter(self, name: str, wanted: Callable[[JobInfo], bool]) -> JobFilter:
        """The :class:`JobFilter` registered as ``name`` (created with ``wanted`` on first use;
        one name, one predicate)."""
        got = self._filters.get(name)
        if got is None:
            got = self._filters[name] = JobFilter(wanted, self.jobs, self._job_changes)
        return got

    def select(self, name: str, wanted: Callable[[JobInfo], bool], jobs: Mapping[str, JobInfo]) -> list[JobInfo]:
        """The jobs of ``jobs`` for which ``wanted`` holds, in uid order, kept by the filter
        ``name`` (:class:`JobFilter`'s invariants); from scratch, every job of ``jobs``."""
        return self.job_filter(name, wanted).select(jobs, enabled=self.incremental)

    def job_sums(self, name: str, width: int, contribution: Callable[[JobInfo], Contribution],
                 group: Callable[[JobInfo], str] = lambda job: job.queue) -> JobSums:
        """The :class:`JobSums` kept as ``name`` (one of :data:`JOB_SUMS`), fed by the change
        feed; from scratch, a new one that sums every job."""
        assert name in JOB_SUMS, name
        if not self.incremental:
            return JobSums(width, contribution, group=group)
        got = self._sums.get(name)
        if got is None:
            got = self._sums[name] = JobSums(width, contribution, group=group, changes=self._job_changes)
        return got

    # ------------------------------------------------------------------ kept values
    def kept(self, slot: Kept[T], key: Hashable) -> T | None:
        """The value kept in ``slot`` if it was kept for ``key``, else None (always None from
        scratch)."""
        got = self._kept.get(slot.name)
        if got is None or not self.incremental or got[0] != key:
            return None
        value: T = got[1]
        return value

    def keep(self, slot: Kept[T], key: Hashable, value: T) -> T:
        """Keep ``value`` in ``slot`` for ``key``; returns it."""
        assert slot in KEPT_VALUES, slot
        self._kept[slot.name] = (key, value)
        return value
