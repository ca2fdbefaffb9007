"""proportion plugin: weighted fair share between queues (upstream plugins/proportion/proportion.go).

At open, each queue with jobs gets ``deserved`` by weighted water-filling over the cluster
total, capped by ``realCapability`` (capability, or total minus others' guarantees) and by
the queue's request, and never below its guarantee. ``share`` = max over deserved
dimensions of allocated/deserved, kept current by allocate/deallocate events.

Registers QueueOrder (queue priority, then lower share), Reclaimable (victims only while
their queue is above deserved), Overused (deserved ≤ allocated), Allocatable and Preemptive
(queue Open and allocated + request ≤ deserved on requested dimensions), JobEnqueueable /
JobEnqueued (min resources against realCapability, with inqueue and elastic accounting).

Loans (not upstream; only with a :class:`~pyvolcano.framework.interfaces.ShareLender` registered,
the reservation plugin's ``reservation.lendShares``): a pod refused by Allocatable may still be
allocated above its queue's deserved share when, on every dimension it takes above that share, the
lenders' idle share (their deserved less allocated) still covers what all borrowing queues hold
above theirs, the pod included. That holds for a pod that gives the share back in time (the
lender's ``loan_term`` is ``IN_TIME``); for one that would keep it past then (``PAST``) the idle
share less what the lenders keep back for that time (``kept_back``) must cover it, and a pod with
no expected end (``NONE``) never borrows. Its queue stays within its real capability, and a
lending queue never borrows. Overused then
answers False for a queue that could still borrow, so allocate walks its jobs; Preemptive (reclaim)
keeps the plain share check, so a borrowing queue never reclaims. Without a lender nothing of this
runs.

``quota_if_asked`` (not upstream; read by the reservation plugin) water-fills the shares again
on copies with one queue's request made larger, as it will be once a ``Pending`` gang, whose pods
proportion does not count yet, is admitted; the session's own shares are left as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.reservation import LoanTerm
from pyvolcano.api.resource import PODS, DimensionDefault, Resource, share
from pyvolcano.api.task import TaskInfo
from pyvolcano.cache.job_sums import JobSums
from pyvolcano.cache.memo import ASKED_WATER_FILLING, WATER_FILLING
from pyvolcano.diagnosis.model import QueueQuota
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler, ShareLender, Vote
from pyvolcano.plugins._util import (
    capability_resource,
    max_resource,
    queue_reservation,
    replicas_within,
)

if TYPE_CHECKING:
    from pyvolcano.cache.memo import SessionMemo
    from pyvolcano.framework.session import Session

NAME = "proportion"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}")
"""Upstream reads no argument of this plugin."""
ZERO = DimensionDefault.ZERO
_EMPTY = Resource()  # never mutated
INF = DimensionDefault.INFINITY
_LOAN_EPS = 1e-6  # float sums of the lenders' idle share; far below any resource unit


class QueueAttr:
    """A queue's proportion state. ``share`` is computed on first read after
    :meth:`update_share` (a pure function of ``allocated`` and ``deserved``, so reading it
    later gives the value an eager update would have stored)."""

    __slots__ = (
        "_share", "allocated", "capability", "deserved", "elastic", "guarantee", "inqueue", "name", "queue_id",
        "real_capability", "request", "weight",
    )

    def __init__(self, queue: QueueInfo):
        self.queue_id = queue.uid
        self.name = queue.name
        self.weight = queue.weight
        self._share: float | None = 0.0
        self.deserved = Resource()
        self.guarantee = _EMPTY
        self.capability: Resource | None = None
        # set by Proportion._build
        self.allocated: Resource
        self.request: Resource
        self.elastic: Resource
        self.inqueue: Resource
        self.real_capability: Resource

    def update_share(self) -> None:
        self._share = None

    @property
    def share(self) -> float:
        res = self._share
        if res is None:
            res = 0.0
            for rn in self.deserved.resource_names():
                s = share(self.allocated.get(rn), self.deserved.get(rn))
                if s > res:
                    res = s
            self._share = res
        return res


def _job_contribution(job: JobInfo) -> tuple[Resource, Resource, Resource, Resource]:
    """A job's part of its queue's (allocated, request, inqueue, elastic)."""
    # job.allocated / job.pending_request are the sums upstream recomputes per task.
    allocated = job.allocated.clone()
    request = job.allocated.clone().add(job.pending_request)
    inqueue = Resource()
    pg = job.podgroup
    assert pg is not None
    reserved = queue_reservation(job)
    if reserved is not None:
        inqueue.add(reserved)
    return allocated, request, inqueue, job.elastic_resources()


def _queue_sums(ssn: Session) -> JobSums:
    return ssn.memo.job_sums("proportion/queue-sums", 4, _job_contribution)


class _Loans:
    """One session's loans of idle share (module doc). ``version`` moves with every allocate
    and deallocate event, so what a queue may borrow is summed again only after one."""

    __slots__ = ("_bases", "_lender", "_looked_up", "_opts", "_ssn", "version")

    def __init__(self, ssn: Session, opts: Mapping[str, QueueAttr]):
        self._ssn = ssn
        self._opts = opts
        self._lender: ShareLender | None = None
        self._looked_up = False
        self._bases: dict[str, tuple[int, frozenset[str], dict[str, float]]] = {}
        self.version = 0

    def _terms(self, queue: QueueInfo) -> tuple[ShareLender, frozenset[str]] | None:
        """The lender and the lending queues, when ``queue`` may borrow from them at all (it is
        Open and not itself a lender); None otherwise."""
        if not self._looked_up:
            # Looked up at the first question: every plugin has registered by then.
            self._looked_up = True
            self._lender = self._ssn.share_lender()
        lender = self._lender
        if lender is None or queue.state != "Open":
            return None
        lenders = lender.lenders()
        return (lender, lenders) if lenders and queue.uid not in lenders else None

    def _base(self, queue: str, lenders: frozenset[str]) -> dict[str, float]:
        """Per dimension, what ``queue`` may hold above its deserved share: the lenders' idle
        share less what the other borrowing queues hold above theirs (summed in name order)."""
        kept = self._bases.get(queue)
        if kept is not None and kept[0] == self.version and kept[1] == lenders:
            return kept[2]
        base: dict[str, float] = {}
        for name in sorted(self._opts):
            if name == queue:
                continue
            a = self._opts[name]
            if name in lenders:
                for d, v in a.deserved.exceeded_part(a.allocated).items():
                    base[d] = base.get(d, 0.0) + v
            else:
                for d, v in a.allocated.exceeded_part(a.deserved).items():
                    base[d] = base.get(d, 0.0) - v
        self._bases[queue] = (self.version, lenders, base)
        return base

    def could_borrow(self, queue: QueueInfo) -> bool:
        """Whether ``queue`` may still borrow on some dimension (Overused's exception)."""
        terms = self._terms(queue)
        if terms is None:
            return False
        attr = self._opts[queue.uid]
        base = self._base(queue.uid, terms[1])
        return any(v - max(attr.allocated.get(d) - attr.deserved.get(d), 0.0) > 0.0
                   for d, v in base.items() if d != PODS)

    def admits(self, queue: QueueInfo, task: TaskInfo, k: int, placed: int) -> int:
        """How many of ``k`` replicas of ``task``'s template, after ``placed`` replicas admitted
        within the share (not yet in ``allocated`` when ``placed`` > 0), go on a loan, one after
        another; the sums are formed one addition at a time, as the allocate events form them."""
        terms = self._terms(queue)
        if terms is None:
            return 0
        lender, lenders = terms
        term = lender.loan_term(task)
        if term is LoanTerm.NONE:
            return 0
        attr = self._opts[queue.uid]
        base = self._base(queue.uid, lenders)
        if term is LoanTerm.PAST:
            kept = lender.kept_back()
            base = {d: v - kept.get(d, 0.0) for d, v in base.items()}
        dims = [(d, v) for d, v in task.resreq.items() if v > 0 and d != PODS]
        held = {d: attr.allocated.get(d) for d, _v in dims}
        for _ in range(placed):
            for d, v in dims:
                held[d] += v
        cap = attr.real_capability
        n = 0
        while n < k:
            for d, v in dims:
                after = held[d] + v
                if cap.has(d) and after > cap.get(d):
                    return n
                over = after - attr.deserved.get(d)
                if over > 0.0 and over > base.get(d, 0.0) + _LOAN_EPS:
                    return n
            for d, v in dims:
                held[d] += v
            n += 1
        return n


class Proportion:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw
        self.queue_opts: dict[str, QueueAttr] = {}
        self._total = Resource()
        self._memo: SessionMemo | None = None
        self._key: tuple[Any, ...] = ()

    def _build(self, ssn: Session) -> None:
        total = ssn.total_resource.clone()
        self._total = total
        total_guarantee = Resource()
        guarantees: dict[str, Resource] = {}
        for q in ssn.queues.values():
            if q.queue.guarantee:
                g = guarantees[q.name] = Resource.from_list(q.queue.guarantee)
                total_guarantee.add(g)
        sums = _queue_sums(ssn).refresh(ssn.jobs)
        unguaranteed = total.exceeded_part(total_guarantee)
        for name, (allocated, request, inqueue, elastic) in sums.items():
            queue = ssn.queues[name]
            attr = QueueAttr(queue)
            attr.capability = capability_resource(queue.queue.capability)
            if name in guarantees:
                attr.guarantee = guarantees[name]
            if name in guarantees or attr.capability is not None:
                real = unguaranteed.clone().add(attr.guarantee)
                if attr.capability is not None:
                    real.min_dimension(attr.capability, INF)
                attr.real_capability = real
            else:
                attr.real_capability = unguaranteed  # read-only, shared by such queues
            # allocated and inqueue follow the session's events; request and elastic are only
            # read, so the queue sums themselves serve (they change at the next refresh only).
            attr.allocated = allocated.clone()
            attr.request = request
            attr.inqueue = inqueue.clone()
            attr.elastic = elastic
            self.queue_opts[name] = attr

        attrs = [self.queue_opts[k] for k in sorted(self.queue_opts)]
        # deserved depends only on the total and each queue's weight, real capability, request
        # and guarantee; between sessions these rarely change (a bind moves pending request to
        # allocated), so the last water-filling is reused when they are equal.
        key = (_rkey(total), tuple((a.name, a.weight, _rkey(a.real_capability), _rkey(a.request),
                                    _rkey(a.guarantee)) for a in attrs))
        self._memo, self._key = ssn.memo, key
        kept = ssn.memo.kept(WATER_FILLING, key)
        if kept is not None:
            for a, deserved in zip(attrs, kept, strict=True):
                a.deserved = deserved.clone()
                a.update_share()
            return
        self._water_fill(total, attrs)
        ssn.memo.keep(WATER_FILLING, key, [a.deserved.clone() for a in attrs])

    @staticmethod
    def _water_fill(total: Resource, attrs: list[QueueAttr]) -> None:
        remaining = total.clone()
        meet: set[str] = set()
        while True:
            total_weight = sum(a.weight for a in attrs if a.queue_id not in meet)
            if total_weight == 0:
                break
            old_remaining = remaining.clone()
            increased_sum, decreased_sum = Resource(), Resource()
            for a in attrs:
                if a.queue_id in meet:
                    continue
                old = a.deserved.clone()
                a.deserved.add(remaining.clone().multi(a.weight / total_weight))
                a.deserved.min_dimension(a.real_capability, INF)
                a.deserved.min_dimension(a.request, ZERO)
                a.deserved = max_resource(a.deserved, a.guarantee)
                a.update_share()
                if a.request.less_equal(a.deserved, ZERO) or _same(a.deserved, old):
                    meet.add(a.queue_id)
                inc, dec = a.deserved.diff(old)
                increased_sum.add(inc)
                decreased_sum.add(dec)
            remaining = remaining.clone().add(decreased_sum).exceeded_part(increased_sum)
            if remaining.is_empty() or _same(remaining, old_remaining):
                break

    def on_session_open(self, ssn: Session) -> None:
        self._build(ssn)
        opts = self.queue_opts

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:
            if l.priority != r.priority:
                return r.priority - l.priority
            ls, rs = opts[l.uid].share, opts[r.uid].share
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            allocations: dict[str, Resource] = {}
            for r in reclaimees:
                job = ssn.jobs.get(r.job)
                if job is None:
                    continue
                attr = opts.get(job.queue)
                if attr is None:
                    continue
                if job.queue not in allocations:
                    allocations[job.queue] = attr.allocated.clone()
                allocated = allocations[job.queue]
                if not allocated.less_equal(attr.deserved, ZERO):
                    allocated.sub(r.resreq)
                    victims.append(r)
            return victims, Vote.PERMIT

        loans = _Loans(ssn, opts)

        def overused(queue: QueueInfo) -> bool:
            attr = opts[queue.uid]
            return attr.deserved.less_equal(attr.allocated, ZERO) and not loans.could_borrow(queue)

        def queue_allocatable(queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
            if queue.state != "Open":
                return False
            attr = opts[queue.uid]
            total_req = Resource()
            for t in candidates:
                total_req.add(t.resreq)
            future = attr.allocated.clone().add(total_req)
            ok, _ = future.less_equal_with_dimension(attr.deserved, total_req)
            return ok

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            return queue_allocatable(queue, [task]) or loans.admits(queue, task, 1, 0) == 1

        def allocatable_count(queue: QueueInfo, task: TaskInfo, k: int) -> int:
            if queue.state != "Open":
                return 0
            attr = opts[queue.uid]
            n = replicas_within(attr.allocated, attr.deserved, task.resreq, k)
            if n < k:
                n += loans.admits(queue, task, k - n, n)
            return n

        def job_enqueueable(job: JobInfo) -> int:
            attr = opts.get(job.queue)
            queue = ssn.queues[job.queue]
            if queue.state != "Open":
                return Vote.REJECT
            if attr is None or not job.has_min_resources():
                return Vote.PERMIT
            min_req = job.min_resources()
            r = min_req.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
            ok, names = r.less_equal_with_dimension(attr.real_capability, min_req)
            if ok:
                return Vote.PERMIT
            ssn.podgroup_events.setdefault(job.uid, []).append(
                f"Normal Unschedulable queue resource quota insufficient: insufficient {', '.join(names)}"
            )
            return Vote.REJECT

        def job_enqueued(job: JobInfo) -> None:
            if not job.has_min_resources():
                return
            attr = opts.get(job.queue)
            if attr is None:
                return
            attr.inqueue.add(job.deduct_sch_gated_resources(job.min_resources()))

        def on_allocate(ev: Event) -> None:
            loans.version += 1
            job = ssn.jobs.get(ev.task.job)
            attr = opts.get(job.queue) if job is not None else None
            if attr is not None:
                attr.allocated.add(ev.task.resreq)
                attr.update_share()

        def on_allocate_many(tasks: list[TaskInfo]) -> None:
            loans.version += 1
            job = ssn.jobs.get(tasks[0].job)
            attr = opts.get(job.queue) if job is not None else None
            if attr is not None:
                attr.allocated.add_times(tasks[0].resreq, len(tasks))
                attr.update_share()

        def on_deallocate(ev: Event) -> None:
            loans.version += 1
            job = ssn.jobs.get(ev.task.job)
            attr = opts.get(job.queue) if job is not None else None
            if attr is not None:
                attr.allocated.sub(ev.task.resreq)
                attr.update_share()

        ssn.add_queue_order_fn(NAME, queue_order)
        ssn.add_reclaimable_fn(NAME, reclaimable)
        ssn.add_overused_fn(NAME, overused)
        ssn.add_allocatable_fn(NAME, allocatable, count=allocatable_count)
        ssn.add_preemptive_fn(NAME, queue_allocatable)
        ssn.add_job_enqueueable_fn(NAME, job_enqueueable)
        ssn.add_job_enqueued_fn(NAME, job_enqueued)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           allocate_many=on_allocate_many))

    def deserved_snapshot(self) -> dict[str, Resource]:
        """Each queue's current deserved resources (read by the simulator's metrics)."""
        return {name: attr.deserved.clone() for name, attr in self.queue_opts.items()}

    def quota_snapshot(self) -> dict[str, QueueQuota]:
        """Each queue's quota as allocate and enqueue check it (read by the pending diagnosis)."""
        return {
            name: QueueQuota("proportion", attr.allocated.clone(), attr.inqueue.clone(), attr.elastic.clone(),
                             attr.deserved.clone(), attr.real_capability.clone(), attr.deserved.clone(),
                             "deserved")
            for name, attr in self.queue_opts.items()
        }

    def quota_if_asked(self, queue: str, extra: Resource) -> QueueQuota | None:
        """The queue's quota were its request ``extra`` larger: every queue's deserved share
        water-filled again from nothing with that request (the session's own shares are left as
        they are). None for a queue without a proportion state."""
        attr = self.queue_opts.get(queue)
        if attr is None:
            return None
        memo = self._memo
        assert memo is not None
        known = memo.kept(ASKED_WATER_FILLING, self._key)
        if known is None:
            known = memo.keep(ASKED_WATER_FILLING, self._key, {})
        asked_key = (queue, _rkey(extra))
        deserved = known.get(asked_key)
        if deserved is None:
            attrs = []
            for name in sorted(self.queue_opts):
                a = copy.copy(self.queue_opts[name])
                a.deserved = Resource()
                if name == queue:
                    a.request = a.request.clone().add(extra)
                attrs.append(a)
            self._water_fill(self._total, attrs)
            deserved = known[asked_key] = next(a.deserved for a in attrs if a.name == queue)
        return QueueQuota("proportion", attr.allocated.clone(), attr.inqueue.clone(), attr.elastic.clone(),
                          deserved.clone(), attr.real_capability.clone(), deserved.clone(), "deserved")

    def on_session_close(self, ssn: Session) -> None:
        self.queue_opts = {}


def _rkey(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    return (r.milli_cpu, r.memory, tuple(r.scalars.items()))


def _same(a: Resource, b: Resource) -> bool:
    return a == b


def new(arguments: Mapping[str, Any]) -> Proportion:
    return Proportion(arguments)
