"""reservation plugin: reservations for blocked gangs, and backfill that cannot delay them.

Not an upstream plugin (upstream's ``backfill`` action places only BestEffort pods); off unless
configured, and with only ``reservation.maxReservations`` (and the runtime arguments) it changes
no job order. Slurm's EASY backfill carried over to Volcano's session model (docs/recommended.md).

Design. Once per session, at its first ``JobValid``, ``JobEnqueueable`` or predicate call (by
then every plugin of every tier has registered, so the plan sees their predicates), the plugin
takes the *blocked gangs*: jobs whose PodGroup is ``Pending`` or ``Inqueue``, with
``minAvailable`` of at least ``reservation.minMembers`` (default 2) and fewer ready pods than
that, whose queue is within its quota (proportion's deserved share, capacity's capability:
``Session.queue_quotas``) and whose pods still needed fit in that quota alone; for a gang whose
pods do not exist yet, which proportion does not count in its queue's request, the quota is the
one its queue will have once the gang is admitted (``Session.queue_quota_if_asked``). They are ordered
by the session's job order (``job_order_compare``: priority, gang, drf share, creation time),
then creation time and key, so a gang that was preempted or reclaimed keeps its place. The
first ``reservation.maxReservations`` (default 1, EASY) of them that can be planned get a
:class:`~pyvolcano.api.reservation.Reservation`:

* the plan releases the resources of every pod on the nodes at its *expected end* — its start
  (``status.startTime``; now if it has none yet) plus its runtime: the ``pyvolcano.io/duration``
  annotation, else ``spec.activeDeadlineSeconds``, else ``reservation.defaultRuntime`` (a pod
  with none never ends in the plan; a Releasing pod ends now) — and walks those ends in time
  order from now; the first moment the gang's needed pods fit (first fit in node order, on the
  nodes that pass its unresolvable predicates and are large enough) and its queue has room for
  them within that quota as the queue's own pods end (allocate refuses them before), is the
  reservation's ``start`` and the nodes it used are its
  ``claims``; a ``Pending`` PodGroup without pods is
  planned as ``minAvailable`` pods sharing its ``minResources`` equally, whose runtime is the
  PodGroup's own ``pyvolcano.io/duration`` (a Volcano Job's annotations are its PodGroup's), else
  ``reservation.defaultRuntime``;
* a gang with a network topology, on a cluster with HyperNodes, is planned inside one HyperNode
  when one holds it: at that same first moment, the HyperNodes of each tier from the lowest (up
  to its effective highest tier), the tightest first, before any nodes; a hard gang is never
  planned across the HyperNodes its tier allows (it starts later instead), a soft one is never
  planned later to stay in one (pyvolcano's own rule: first fit in node order spread gangs over
  racks, which then ran spread or, hard, could not use their claims);
* a later reservation is planned with the earlier ones' claims taken from now until their end,
  so it can never delay them (conservative, like Slurm's conservative backfill for all but the
  first).

While reservations are held, a predicate keeps every other pod off a claimed node unless it
cannot delay the reservation: it ends (now + its runtime) by the reservation's start, or it fits
in the node's *slack* at that start (what is left there once the pods still running then and
the claims are counted); an allocate event handler takes what a placed pod uses past the start
from the slack, deallocate gives it back. Refused nodes carry :data:`~pyvolcano.api.reservation.HELD_REASON`,
which the diagnosis turns into ``Reservation.Backfill``; the reserved gang's own diagnosis is
``Reservation.Held`` (docs/reasons.md). A ``JobEnqueueable`` vote permits a reserved gang once
its start has come, so that a ``Pending`` gang is admitted onto the nodes held for it; listed in
the first tier, the permit ends the vote before ``overcommit``'s idle-resource check.

Lending (``reservation.lendShares``, default false). A reserved gang's queue deserves its share
but often cannot use it before the reservation starts (it waits for whole nodes), while other
queues' pods wait for theirs. With the argument on, the plugin registers itself as a
:class:`~pyvolcano.framework.interfaces.ShareLender`: the queues of the held reservations lend
their idle share (deserved less allocated, proportion's loans) to pods of other queues. A pod
expected to end (now + runtime, as above) by the earliest held start may borrow all of it
(``LoanTerm.IN_TIME``); one expected to end later only what stays idle once the held gangs have
what they claim (``LoanTerm.PAST``, ``kept_back``); one with no known runtime never borrows. So
what the borrowers hold above their shares stays within the lenders' idle share after the held
gangs start too; a loan never takes from the reserved gang's own room in its queue's share, and the
predicate keeps loans off claimed nodes as any other pod, so no reservation is delayed by a loan.
A borrowing queue is above its deserved share, so proportion's Reclaimable lets an under-share
queue take the loan back where reclaim runs.

Gang order (``reservation.gangOrder``, default ``jobOrder``). With ``shortestFirst`` the plugin
adds a JobOrder between two *waiting gangs* (the blocked gangs' test without the quota): the one with
the shorter expected runtime (its needed pods' longest, or its PodGroup's, as above) goes first,
so the reservation, enqueue and allocate take it first, and a queue's gangs wait less on average
(shortest job first). A gang that has waited (now − creation) as long as its expected runtime,
or declares none, is *due* and goes before every gang that is not: a long gang is passed by
shorter ones only until it has waited its own runtime, then waits in the next order (priority
comes before, in the plugin's tier; FIFO after) with the other due gangs. Pairs with a job that is not a
waiting gang are left to the next order.

State. The reservations live in the cache memo's :class:`~pyvolcano.api.reservation.ReservationBook`
(``SessionMemo.reservations``), the only state kept between sessions. They are replanned in a
session when their inputs move — the node table's change position, the cache's capacity
epoch and node generation, the blocked gangs and their versions — so a pod that ends early (its
job completes, its node frees) gives a new plan at the next session. At session close a
reservation whose gang is ready or gone is dropped; one whose start has come and whose gang,
its pods created, still did not start (an eviction not done yet, a quota the plan does not see) is *stalled*: its
gang gets none until the capacity epoch moves, so held nodes never stay idle on a plan that
does not work.

Invariants: no wall clock (``ssn.now``); plans are deterministic (node order, sorted ends,
job order with key tie-breaks); with the plugin not configured nothing of this runs and no
decision changes; the predicate's cache key carries the book's generation, so kept feasibility
verdicts never outlive the plan they were made under.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import POD_DURATION_KEY
from pyvolcano.api.reservation import HELD_REASON, LoanTerm, Reservation
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.interfaces import Event, EventHandler, Vote

if TYPE_CHECKING:
    from pyvolcano.diagnosis.model import QueueQuota
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "ReservationPlugin", "expected_runtime", "new"]

NAME = "reservation"
MAX_RESERVATIONS = "reservation.maxReservations"
DEFAULT_RUNTIME = "reservation.defaultRuntime"
MIN_MEMBERS = "reservation.minMembers"
LEND_SHARES = "reservation.lendShares"
GANG_ORDER = "reservation.gangOrder"
JOB_ORDER = "jobOrder"
SHORTEST_FIRST = "shortestFirst"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (
    honoured(MAX_RESERVATIONS, note="how many blocked gangs get a reservation (default 1, Slurm's EASY)"),
    honoured(DEFAULT_RUNTIME, note="runtime of pods that declare none (default: unknown, never ends in the plan)"),
    honoured(MIN_MEMBERS, note="the smallest minAvailable that counts as a gang (default 2)"),
    honoured(LEND_SHARES, note="lend the reserved gangs' queues' idle share to other queues' pods (default false)"),
    honoured(GANG_ORDER, note="jobOrder (default: the session's job order) or shortestFirst (waiting gangs with "
                              "the shortest expected runtime first)"),
))

_EPS = 1e-6
_HELD = Status(Code.UnschedulableAndUnresolvable, HELD_REASON)


def expected_runtime(task: TaskInfo, default: float | None) -> float | None:
    """A pod's expected runtime: its ``pyvolcano.io/duration``, else ``activeDeadlineSeconds``,
    else ``default`` (None: unknown)."""
    pod = task.pod
    seconds = _annotated_runtime(pod.annotations)
    if seconds is not None:
        return seconds
    if pod.active_deadline_seconds is not None:
        return pod.active_deadline_seconds
    return default


def _annotated_runtime(annotations: Mapping[str, str]) -> float | None:
    """The ``pyvolcano.io/duration`` of a pod or a PodGroup, in seconds (None: absent or not a
    duration)."""
    text = annotations.get(POD_DURATION_KEY)
    return parse_duration(text) if text is not None else None


@dataclass(slots=True)
class _Held:
    """A reservation as one session enforces it: its claimed rows and their slack at its start."""

    reservation: Reservation
    rows: np.ndarray          # node rows, in claim order
    col: np.ndarray           # node row -> position in rows, -1 elsewhere
    slack: np.ndarray         # dims × len(rows)


class ReservationPlugin:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.max_reservations = args.get_int(MAX_RESERVATIONS, 1)
        if self.max_reservations < 0:
            raise ArgumentError.bad(f"plugin {NAME}", MAX_RESERVATIONS, f"got {self.max_reservations}",
                                    "a number of reservations ≥ 0")
        self.min_members = args.get_int(MIN_MEMBERS, 2)
        if self.min_members < 1:
            raise ArgumentError.bad(f"plugin {NAME}", MIN_MEMBERS, f"got {self.min_members}", "a pod count ≥ 1")
        self.default_runtime = args.get_duration_seconds(DEFAULT_RUNTIME, None)
        if self.default_runtime is not None and self.default_runtime <= 0:
            raise ArgumentError.bad(f"plugin {NAME}", DEFAULT_RUNTIME, f"got {self.default_runtime}s",
                                    "a positive duration such as 4h")
        self.lend_shares = args.get_bool(LEND_SHARES, False)
        self.gang_order = args.get_str(GANG_ORDER, JOB_ORDER)
        if self.gang_order not in (JOB_ORDER, SHORTEST_FIRST):
            raise ArgumentError.bad(f"plugin {NAME}", GANG_ORDER, f"got {self.gang_order!r}",
                                    f"{JOB_ORDER} or {SHORTEST_FIRST}")
        self._held: list[_Held] = []
        self._reserved_jobs: set[str] = set()
        self._lenders: frozenset[str] = frozenset()
        self._lend_until = -math.inf
        self._kept_back: dict[str, float] = {}
        self._ssn: Session | None = None
        self._ready = False

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        book = ssn.memo.reservations
        if self.max_reservations == 0:
            book.clear()
            return
        self._ssn = ssn
        self._ready = False

        def predicate(task: TaskInfo, idx: np.ndarray) -> list[tuple[Status, np.ndarray]]:
            self._ensure()
            refused = self._refused(ssn, task, idx)
            return [(_HELD, refused)] if refused is not None else []

        def cache_key(task: TaskInfo) -> tuple[Any, ...]:
            self._ensure()
            generation = book.generation
            if task.job in self._reserved_jobs:
                return ("reserved", generation, task.job)
            end = self._end(ssn, task)
            return ("other", generation, tuple(end > h.reservation.start + _EPS for h in self._held))

        def enqueueable(job: JobInfo) -> int:
            # The gang's nodes are free by the plan: admit it whatever the idle-resource votes say,
            # so that the pods the job controller creates now take them.
            self._ensure()
            r = book.held.get(job.uid)
            return Vote.PERMIT if r is not None and r.start <= ssn.now + _EPS else Vote.ABSTAIN

        def allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                self._take(ssn, Event(t), -1.0)

        def valid(_job: JobInfo) -> None:
            # No verdict: asked by allocate and backfill for every job they consider, it plans the
            # session's reservations before any of them is placed.
            self._ensure()

        if self.gang_order == SHORTEST_FIRST:
            ssn.add_job_order_fn(NAME, self._shortest_first(ssn))
        ssn.add_predicate_fn(NAME, predicate, cache_key=cache_key)
        if self.lend_shares:
            ssn.add_share_lender(NAME, self)
        ssn.add_job_valid_fn(NAME, valid)
        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_event_handler(EventHandler(
            allocate=lambda ev: self._take(ssn, ev, -1.0), deallocate=lambda ev: self._take(ssn, ev, 1.0),
            allocate_many=allocate_many))

    def _ensure(self) -> None:
        """Plan (when the inputs moved) and prepare the session's enforcement, once per session,
        at the first callback: by then every plugin of every tier has registered its predicates."""
        if self._ready:
            return
        self._ready = True
        ssn = self._ssn
        assert ssn is not None
        book = ssn.memo.reservations
        gangs = self._blocked_gangs(ssn)
        cache = ssn.cache
        inputs = (ssn.node_table.change_position, cache.capacity_epoch, cache.node_generation,
                  tuple((j.uid, j.version) for j in gangs))
        if inputs != book.inputs:
            book.replace(self._plan(ssn, gangs), inputs)
        self._held = [self._enforced(ssn, r, book.held.values())
                      for r in sorted(book.held.values(), key=lambda r: r.rank)]
        self._reserved_jobs = set(book.held)
        self._lenders = frozenset(r.queue for r in book.held.values())
        self._lend_until = min((r.start for r in book.held.values()), default=-math.inf)
        kept: dict[str, float] = {}
        for r in book.held.values():
            for _node, amounts in r.claims:
                for name, v in amounts:
                    kept[name] = kept.get(name, 0.0) + v
        self._kept_back = kept

    # ------------------------------------------------------------------ lending (ShareLender)
    def lenders(self) -> frozenset[str]:
        """``reservation.lendShares``: the queues of the held reservations lend their idle share."""
        self._ensure()
        return self._lenders

    def loan_term(self, task: TaskInfo) -> LoanTerm:
        """``IN_TIME`` when ``task`` is expected to end by the earliest held reservation's start,
        ``PAST`` when later, ``NONE`` without a known runtime."""
        self._ensure()
        assert self._ssn is not None
        end = self._end(self._ssn, task)
        if end == math.inf:
            return LoanTerm.NONE
        return LoanTerm.IN_TIME if end <= self._lend_until + _EPS else LoanTerm.PAST

    def kept_back(self) -> Mapping[str, float]:
        """What the held reservations' gangs take from their queues' share when they start."""
        self._ensure()
        return self._kept_back

    def on_session_close(self, ssn: Session) -> None:
        book = ssn.memo.reservations
        if not book.held:
            return
        kept: dict[str, Reservation] = {}
        for key, r in book.held.items():
            job = ssn.jobs.get(key)
            if job is None or job.ready_task_num() >= job.min_available:
                continue
            if (r.start <= ssn.now + _EPS and self._needed(job) is not None
                    and not job.tasks_in(TaskStatus.Pipelined)):
                # Due, its pods exist, and still not started: the plan does not work.
                book.stalled[key] = ssn.cache.capacity_epoch
                continue
            kept[key] = r
        if len(kept) != len(book.held):
            book.replace(kept, book.inputs)

    # ------------------------------------------------------------------ gang order
    def _waiting_gang(self, job: JobInfo) -> bool:
        pg = job.podgroup
        return (pg is not None and pg.phase in ("Pending", "Inqueue") and job.min_available >= self.min_members
                and job.ready_task_num() < job.min_available)

    def _shortest_first(self, ssn: Session) -> Callable[[JobInfo, JobInfo], int]:
        """``reservation.gangOrder: shortestFirst``: a JobOrder between two waiting gangs. A gang
        that has waited as long as its expected runtime, or declares none, is *due* and goes
        before one that is not; two due gangs are left to the next order (FIFO by default); of
        two that are not, the shorter goes first. Any other pair is left to the next order."""
        keys: dict[str, float | None] = {}   # job -> expected runtime while not due; None: due

        def key(job: JobInfo) -> float | None:
            if job.uid not in keys:
                runtime = self._gang_runtime(job)
                due = runtime is None or ssn.now - job.creation_timestamp >= runtime
                keys[job.uid] = None if due else runtime
            return keys[job.uid]

        def order(l: JobInfo, r: JobInfo) -> int:
            if not (self._waiting_gang(l) and self._waiting_gang(r)):
                return 0
            lk, rk = key(l), key(r)
            if lk is None or rk is None:
                return (lk is not None) - (rk is not None)
            return (lk > rk) - (lk < rk)

        return order

    def _gang_runtime(self, job: JobInfo) -> float | None:
        """A waiting gang's expected runtime: the longest of its pods still needed (None when one
        declares none), or, for a PodGroup whose pods do not exist yet, its own
        ``pyvolcano.io/duration`` (a Volcano Job's annotations are its PodGroup's), else
        ``reservation.defaultRuntime``."""
        needed = self._needed(job)
        if needed is None:
            return self._podgroup_runtime(job)
        runtimes = [expected_runtime(t, self.default_runtime) for t in needed]
        return None if any(r is None for r in runtimes) else max(r for r in runtimes if r is not None)

    def _podgroup_runtime(self, job: JobInfo) -> float | None:
        seconds = _annotated_runtime(job.podgroup.annotations) if job.podgroup is not None else None
        return seconds if seconds is not None else self.default_runtime

    # ------------------------------------------------------------------ which gangs
    def _blocked_gangs(self, ssn: Session) -> list[JobInfo]:
        wanted = self._waiting_gang

        book = ssn.memo.reservations
        epoch = ssn.cache.capacity_epoch
        for key in [k for k, e in book.stalled.items() if e != epoch or k not in ssn.jobs]:
            del book.stalled[key]
        quotas = ssn.queue_quotas()
        out = []
        for job in ssn.memo.select("reservation/gangs", wanted, ssn.jobs):
            if not wanted(job) or job.uid in book.stalled:
                continue
            asked = self._asked(job)
            if asked is None:
                continue
            # The queue must be within its share, and the gang must fit in it alone (it starts
            # when the queue's running pods have ended or not at all). The share once a gang
            # without pods is admitted is never smaller than the current one: asked only when
            # the current one does not hold the gang.
            if not _holds(quotas.get(job.queue), asked) and \
                    (self._needed(job) is not None or not _holds(self._admitted_quota(ssn, job, asked), asked)):
                continue
            out.append(job)

        def compare(a: JobInfo, b: JobInfo) -> int:
            c = ssn.job_order_compare(a, b)
            if c:
                return c
            return (a.creation_timestamp > b.creation_timestamp) - (a.creation_timestamp < b.creation_timestamp) \
                or (a.uid > b.uid) - (a.uid < b.uid)

        out.sort(key=functools.cmp_to_key(compare))
        return out

    @staticmethod
    def _admitted_quota(ssn: Session, job: JobInfo, asked: Mapping[str, float]) -> QueueQuota | None:
        """The quota of a gang whose pods do not exist yet. Such a gang is not in its queue's
        request, so proportion's deserved share leaves it out (a queue with nothing else to run
        deserves nothing): its quota is the one its queue will have once it is admitted and its
        pods count."""
        counted = job.allocated.clone().add(job.pending_request)
        extra = Resource()
        for name, v in asked.items():
            more = v - counted.get(name)
            if more > _EPS:
                extra.set(name, more)
        return ssn.queue_quota_if_asked(job.queue, extra)

    def _asked(self, job: JobInfo) -> dict[str, float] | None:
        """What the gang still needs in all (None: it cannot be planned)."""
        needed = self._needed(job)
        if needed is not None:
            asked: dict[str, float] = {}
            for t in needed:
                for name, v in t.resreq.items():
                    asked[name] = asked.get(name, 0.0) + v
            return asked
        if job.podgroup is None or job.podgroup.phase != "Pending" or not job.has_min_resources() \
                or job.ready_task_num():
            return None
        return {name: v for name, v in job.min_resources().items() if v > 0} or None

    def _shapes(self, ssn: Session, job: JobInfo, dims: int) -> tuple[list[np.ndarray], TaskInfo | None,
                                                                      float | None] | None:
        """The gang's pods still needed as dense vectors, a pod to run its predicates (None for a
        PodGroup whose pods do not exist yet: an equal share of minResources each, as a Volcano
        Job's controller creates them) and its runtime."""
        table = ssn.node_table
        needed = self._needed(job)
        if needed is not None:
            return [self._dense(table, t, dims) for t in needed], needed[0], self._gang_runtime(job)
        asked = self._asked(job)
        if asked is None or job.min_available < 1:
            return None
        pod = np.zeros(dims)
        for name, v in asked.items():
            d = table.dim_index.get(name)
            if d is not None and d < dims:
                pod[d] = v / job.min_available
        return [pod] * job.min_available, None, self._podgroup_runtime(job)

    @staticmethod
    def _needed(job: JobInfo) -> list[TaskInfo] | None:
        """The pending pods the gang still needs to reach minAvailable (None: it has too few)."""
        need = job.min_available - job.ready_task_num()
        pending = sorted((t for t in job.tasks_in(TaskStatus.Pending).values() if not t.sch_gated),
                         key=lambda t: t.uid)
        return pending[:need] if need > 0 and len(pending) >= need else None

    # ------------------------------------------------------------------ planning
    def _task_end(self, task: TaskInfo, status: TaskStatus, now: float) -> float:
        if status == TaskStatus.Releasing:
            return now
        runtime = expected_runtime(task, self.default_runtime)
        if runtime is None:
            return math.inf
        start = task.pod.start_time if task.pod.start_time is not None else now
        return max(start + runtime, now)

    def _end(self, ssn: Session, task: TaskInfo) -> float:
        runtime = expected_runtime(task, self.default_runtime)
        return math.inf if runtime is None else ssn.now + runtime

    def _plan(self, ssn: Session, gangs: list[JobInfo]) -> dict[str, Reservation]:
        table = ssn.node_table
        n, dims = table.n, len(table.dims)
        now = ssn.now
        out: dict[str, Reservation] = {}
        if not gangs or n == 0:
            return out
        free = np.stack([table.idle[d][:n].copy() for d in range(dims)])
        events: list[tuple[float, int, int]] = []     # (end, row, event id)
        deltas: list[np.ndarray] = []
        for node in ssn.node_list:
            for uid, task in node.tasks.items():
                status = node.task_status[uid]
                if status == TaskStatus.Pipelined:
                    continue
                end = self._task_end(task, status, now)
                if end == math.inf:
                    continue
                events.append((end, node.index, len(deltas)))
                deltas.append(self._dense(table, task, dims))
        events.sort()
        usable_base = np.array([not node.unschedulable for node in ssn.node_list], dtype=bool)
        quotas = ssn.queue_quotas()
        queue_ends: dict[str, list[tuple[float, dict[str, float]]]] = {}
        tier_masks: dict[int, np.ndarray] = {}  # filled by _domains for the gangs with a topology
        for job in gangs:
            if len(out) >= self.max_reservations:
                break
            shapes = self._shapes(ssn, job, dims)
            if shapes is None:
                continue
            pods, probe, runtime = shapes
            asked = self._asked(job) or {}
            # probe is None exactly for a gang whose pods do not exist yet (_shapes)
            quota = quotas.get(job.queue) if probe is not None else self._admitted_quota(ssn, job, asked)
            quota_at = self._quota_time(ssn, job.queue, asked, quota, queue_ends, now)
            if quota_at is None:
                continue
            usable = usable_base & self._static_fit(ssn, probe, pods[0], n)
            domains = _domains(ssn, job, usable, tier_masks)
            found = self._earliest(free, events, deltas, pods, usable, now, quota_at, domains)
            if found is None:
                continue
            start, rows = found
            per_row: dict[int, np.ndarray] = {}
            for row, pod in zip(rows, pods, strict=True):
                per_row[row] = per_row.get(row, 0.0) + pod
            claims = []
            for row in sorted(per_row):
                amounts = per_row[row]
                claims.append((ssn.node_list[row].name,
                               tuple((table.dims[d], float(amounts[d])) for d in range(dims) if amounts[d] > 0)))
                free[:, row] -= amounts
                if runtime is not None:
                    end = start + runtime
                    bisect.insort(events, (end, row, len(deltas)))
                    deltas.append(amounts)
            # A later reservation of the same queue counts this gang in the queue's allocation
            # from now until its end, as the claims above.
            ends = queue_ends.get(job.queue)
            if ends is not None:
                ends.append((-math.inf, {k: -v for k, v in asked.items()}))
                if runtime is not None:
                    ends.append((start + runtime, dict(asked)))
                ends.sort(key=lambda e: e[0])
            out[job.uid] = Reservation(job=job.uid, queue=job.queue, rank=len(out), start=start, runtime=runtime,
                                       claims=tuple(claims), planned_at=now)
        return out

    def _quota_time(self, ssn: Session, queue: str, asked: Mapping[str, float], quota: QueueQuota | None,
                    queue_ends: dict[str, list[tuple[float, dict[str, float]]]], now: float) -> float | None:
        """The first time from ``now`` at which the queue's allocation leaves room for ``asked``
        within its allocate limit (proportion's deserved share, capacity's capability), as its
        running pods end (None: never in the plan). Allocate refuses the gang's pods before then
        whatever nodes are free, so a start planned earlier would hold nodes for a gang that
        cannot take them, and the reservation would stall."""
        if quota is None:
            return now
        limit = quota.allocate_limit
        names = [k for k, v in asked.items() if v > 0 and limit.has(k)]
        if not names:
            return now
        ends = queue_ends.get(queue)
        if ends is None:
            ends = []
            for node in ssn.node_list:
                for uid, task in node.tasks.items():
                    status = node.task_status[uid]
                    if status == TaskStatus.Pipelined:
                        continue
                    job = ssn.jobs.get(task.job)
                    if job is None or job.queue != queue:
                        continue
                    ends.append((self._task_end(task, status, now), dict(task.resreq.items())))
            ends.sort(key=lambda e: e[0])
            queue_ends[queue] = ends
        room = {k: limit.get(k) - quota.allocated.get(k) - asked[k] for k in names}
        t = now
        for end, released in ends:
            if end > t + _EPS and all(v + _EPS >= 0 for v in room.values()):
                return t
            if end == math.inf:
                return None
            t = max(t, end)
            for k in names:
                room[k] += released.get(k, 0.0)
        return t if all(v + _EPS >= 0 for v in room.values()) else None

    @staticmethod
    def _dense(table: Any, task: TaskInfo, dims: int) -> np.ndarray:
        vec = np.zeros(dims)
        for d, v in table.task_vector(task):
            if d < dims:
                vec[d] = v
        return vec

    @staticmethod
    def _static_fit(ssn: Session, task: TaskInfo | None, pod: np.ndarray, n: int) -> np.ndarray:
        """Nodes large enough for the pod that pass its predicates whatever runs on them."""
        table = ssn.node_table
        big = np.ones(n, dtype=bool)
        for d in np.flatnonzero(pod):
            big &= table.allocatable[d][:n] + _EPS >= pod[d]
        idx = np.flatnonzero(big)
        if len(idx) and task is not None:
            ok, _ = ssn.preempt_predicate(task, idx)
            big[idx[~ok]] = False
        return big

    @staticmethod
    def _earliest(free: np.ndarray, events: list[tuple[float, int, int]], deltas: list[np.ndarray],
                  pods: list[np.ndarray], usable: np.ndarray, now: float,
                  not_before: float, domains: list[np.ndarray] | None = None) -> tuple[float, list[int]] | None:
        """The first time from ``not_before`` at which ``pods`` fit as the ends release resources,
        with the row of each pod (first fit in node order, on rows already used first; for a gang
        with a network topology, inside one HyperNode of the lowest tier that holds it, see
        :func:`_domains`)."""
        cur = free.copy()
        total = np.sum(pods, axis=0)
        t, k = now, 0
        while True:
            while k < len(events) and events[k][0] <= t + _EPS:
                _, row, eid = events[k]
                cur[:, row] += deltas[eid]
                k += 1
            if t + _EPS >= not_before and (cur[:, usable].clip(min=0).sum(axis=1) + _EPS >= total).all():
                rows = _first_fit(cur, pods, usable) if domains is None else _fit_in_domains(cur, pods, total, domains)
                if rows is not None:
                    return t, rows
            nxt = events[k][0] if k < len(events) else math.inf
            if t + _EPS < not_before:
                nxt = min(nxt, not_before)
            if nxt == math.inf:
                return None
            t = max(nxt, now)

    # ------------------------------------------------------------------ enforcing
    def _enforced(self, ssn: Session, r: Reservation, held: Any) -> _Held:
        table = ssn.node_table
        n, dims = table.n, len(table.dims)
        rows = np.array([ssn.nodes[name].index for name, _ in r.claims if name in ssn.nodes], dtype=np.int64)
        col = np.full(n, -1, dtype=np.int64)
        col[rows] = np.arange(len(rows))
        slack = np.zeros((dims, len(rows)))
        overlapping = [o for o in held if o.job != r.job and o.start <= r.start + _EPS
                       and (o.end is None or o.end > r.start + _EPS)]
        for j, row in enumerate(rows):
            node = ssn.node_list[int(row)]
            slack[:, j] = [table.allocatable[d][row] for d in range(dims)]
            for uid, task in node.tasks.items():
                status = node.task_status[uid]
                if status == TaskStatus.Pipelined or task.job == r.job:
                    continue
                if self._task_end(task, status, ssn.now) > r.start + _EPS:
                    slack[:, j] -= self._dense(table, task, dims)
            for o in (r, *overlapping):
                for name, amounts in o.claims:
                    if name == node.name:
                        for res, v in amounts:
                            d = table.dim_index.get(res)
                            if d is not None and d < dims:
                                slack[d, j] -= v
        return _Held(r, rows, col, slack)

    def _refused(self, ssn: Session, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        if task.job in self._reserved_jobs:
            return None
        end = self._end(ssn, task)
        vec = ssn.node_table.task_vector(task)
        refused: np.ndarray | None = None
        for h in self._held:
            if end <= h.reservation.start + _EPS:
                continue
            cols = h.col[idx]
            on = cols >= 0
            if not on.any():
                continue
            fits = np.ones(int(on.sum()), dtype=bool)
            for d, v in vec:
                if v > 0 and d < h.slack.shape[0]:
                    fits &= h.slack[d, cols[on]] + _EPS >= v
            if not fits.all():
                if refused is None:
                    refused = np.zeros(len(idx), dtype=bool)
                refused[np.flatnonzero(on)[~fits]] = True
        return refused

    def _take(self, ssn: Session, ev: Event, sign: float) -> None:
        task = ev.task
        if not self._held or task.job in self._reserved_jobs:
            return
        node = ssn.nodes.get(task.node_name)
        if node is None:
            return
        end = self._end(ssn, task)
        for h in self._held:
            j = h.col[node.index] if node.index < len(h.col) else -1
            if j < 0 or end <= h.reservation.start + _EPS:
                continue
            for d, v in ssn.node_table.task_vector(task):
                if d < h.slack.shape[0]:
                    h.slack[d, j] += sign * v


def _holds(quota: QueueQuota | None, asked: Mapping[str, float]) -> bool:
    """Whether the queue is within ``quota`` and ``asked`` fits in it alone (no quota: yes)."""
    if quota is None:
        return True
    limit = quota.allocate_limit
    return not any(limit.has(n) and (quota.allocated.get(n) > limit.get(n) + _EPS or v > limit.get(n) + _EPS)
                   for n, v in asked.items())


def _domains(ssn: Session, job: JobInfo, usable: np.ndarray,
             tier_masks: dict[int, np.ndarray]) -> list[np.ndarray] | None:
    """Where a gang with a network topology may be reserved, tried in this order: the HyperNodes
    of each tier from the lowest, up to its effective highest tier (``JobTopology.hard_tier``; a
    soft job's is the virtual root's), then every usable node when that tier is the root's. Each
    entry is a (HyperNodes, rows) mask of the usable rows of one tier's HyperNodes (in name order,
    those without a usable row left out). None: the gang has no topology or the cluster no
    HyperNodes; first fit over every node.

    ``tier_masks`` keeps each tier's HyperNode rows for the rest of the plan (the same for every
    gang; only ``usable`` differs).

    A plan made with first fit in node order spreads a gang over racks whatever its topology,
    and since the claimed nodes are kept for it, the gang then runs spread (soft) or cannot use
    them (hard). Preferring one lower-tier HyperNode at the same moment never delays a soft
    gang's start."""
    topo = job.topology
    st = ssn.topology
    if topo is None or not st.ready or len(st.tiers) < 2:
        return None
    limit = topo.hard_tier if topo.hard_tier is not None else st.top_tier
    out: list[np.ndarray] = []
    n = len(usable)
    for tier in st.tiers:
        if tier >= st.top_tier or tier > limit:
            continue
        members = tier_masks.get(tier)
        if members is None:
            members = np.zeros((len(st.tree.hypernodes_at(tier)), n), dtype=bool)
            for i, name in enumerate(sorted(st.tree.hypernodes_at(tier))):
                rows = st.tree.rows(name)
                members[i, rows[rows < n]] = True
            tier_masks[tier] = members
        masks = members & usable
        masks = masks[masks.any(axis=1)]
        if len(masks):
            out.append(masks)
    if limit >= st.top_tier:
        out.append(usable[None, :])
    return out


def _fit_in_domains(free: np.ndarray, pods: list[np.ndarray], total: np.ndarray,
                    domains: list[np.ndarray]) -> list[int] | None:
    """The pods' rows inside one domain: per tier from the lowest, the HyperNodes whose free
    resources can hold the gang, the tightest first (least left over on the dimensions the gang
    asks for; then name order), each tried with first fit."""
    asked = total > 0
    have_all = free.clip(min=0)
    for masks in domains:
        have = have_all @ masks.T  # (dims, HyperNodes)
        fits = np.flatnonzero((have + _EPS >= total[:, None]).all(axis=0))
        if not len(fits):
            continue
        spare = (have[:, fits] - total[:, None])[asked].sum(axis=0)
        for i in fits[np.argsort(spare, kind="stable")]:
            rows = _first_fit(free, pods, masks[int(i)])
            if rows is not None:
                return rows
    return None


def _first_fit(free: np.ndarray, pods: list[np.ndarray], usable: np.ndarray) -> list[int] | None:
    cur = free.copy()
    rows: list[int] = []
    for pod in pods:
        ok = usable & (cur + _EPS >= pod[:, None]).all(axis=0)
        cand = np.flatnonzero(ok)
        if not len(cand):
            return None
        used = [r for r in rows if ok[r]]
        row = used[0] if used else int(cand[0])
        cur[:, row] -= pod
        rows.append(row)
    return rows


def new(arguments: Mapping[str, Any]) -> ReservationPlugin:
    return ReservationPlugin(arguments)
