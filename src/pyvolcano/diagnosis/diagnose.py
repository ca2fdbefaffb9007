"""Pending diagnosis: at session close, say why each job left short is blocked.

Design. :func:`diagnose_session` runs at the start of session close, while the plugins'
session state (queue quotas, predicates, job validity) is still alive and the node
accounting is the one the actions last saw, so the figures agree with the fit errors the
actions recorded. It looks only at jobs with a PodGroup and an unplaced pod (Pending, or
Allocated/Pipelined in a statement close will discard), or a PodGroup enqueue left Pending
(perhaps without pods yet); every other job costs one counter read. A job that session
close leaves alone (``Session.settled``: its tasks, PodGroup and fit errors are unchanged)
keeps the diagnosis of the session that last looked at it.

So only the unsettled jobs and the jobs that had a diagnosis after the last close are
visited (``SessionMemo.diagnosis_visit``): a settled job was unchanged since a close that
looked at it, so if it is short now it was short then and has a diagnosis; without one it is
not short and the walk would leave it alone. From scratch (``SessionMemo.incremental =
False``), the first session and a change of whether enqueue is configured walk every job.

The stage is decided in pipeline order, first match wins:

1. PodGroup still Pending with enqueue configured: queue closed, a plugin that explains its
   own rejection (``Session.enqueue_explainers``: resourcequota, extender), queue capability
   short of minResources, or another plugin's JobEnqueueable vote (``Enqueue.Rejected``);
2. the queue is not Open; JobValid fails (``Gang.MinAvailableNotMet``);
3. every unplaced pod is scheduling-gated;
4. pods pipelined onto resources still being released;
4b. network topology: the HyperNodes are not ready, or the pods the gang (or a hard sub-group)
   still needs fit in the cluster but in no HyperNode its ``highestTierAllowed`` allows (per
   tier, the HyperNode with the most room is reported);
5. recorded node fit errors: resources short on every node that passes the predicates
   (possibly curable by preemption or reclaim, which is then the stage, unless a victim
   filter the diagnosis replays keeps the victims: pdb, cdp, ``Session.victim_explainers``),
   or predicates (explained by the first plugin in tier order that recognises its own
   refusals: nodegroup, numa-aware, tdm, usage, extender, ``Session.predicate_explainers``);
6. queue quota: the pods still needed exceed what the queue's allocate limit leaves;
7. gated pods the gang needs; otherwise the session did not try the job.

Invariants: pure (reads the session, writes only the diagnoses the memo keeps), deterministic
(nodes and tasks visited in index / name order, ties broken by node index).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.objects import PodGroupCondition
from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.reservation import HELD_REASON, LoanTerm
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import DRA_CANNOT_ALLOCATE, DRA_NOT_AVAILABLE, DRA_PRE_PREDICATE, Code, FitErrors
from pyvolcano.diagnosis.devices import device_diagnosis
from pyvolcano.diagnosis.model import (
    UNLIMITED,
    Diagnosis,
    HyperNodeFigure,
    LimitFigure,
    PreemptionInfo,
    QueueQuota,
    Reason,
    ResourceFigure,
    Stage,
    TaskCounts,
)
from pyvolcano.diagnosis.volumes import volume_diagnosis, volume_reason

if TYPE_CHECKING:
    from pyvolcano.framework.interfaces import VictimExplainer
    from pyvolcano.framework.session import Session

__all__ = ["amend_condition", "diagnose_session", "format_amount", "user_amount"]

_UNPLACED = TaskStatus.Pending | TaskStatus.Allocated | TaskStatus.Pipelined
_PLACED = TaskStatus.Binding | TaskStatus.Bound | TaskStatus.Running | TaskStatus.Succeeded
_OCCUPYING = (TaskStatus.Running, TaskStatus.Bound)
_EPS = 1e-6


def diagnose_session(ssn: Session) -> dict[str, Diagnosis]:
    """The diagnosis of every job with a PodGroup that still has unplaced pods, or that enqueue
    has not admitted (by job key)."""
    out: dict[str, Diagnosis] = {}
    ctx: _Context | None = None
    enqueue = "enqueue" in ssn.enabled_actions
    memo = ssn.memo
    settled = ssn.settled
    for uid, job in memo.diagnosis_visit(ssn.jobs, ssn.unsettled, enqueue):
        pg = job.podgroup
        if pg is None:
            continue
        # A PodGroup enqueue has not admitted may have no pods yet (the job controller creates
        # them once it is Inqueue); it is short all the same.
        if not job.count(_UNPLACED) and not (pg.phase == "Pending" and enqueue):
            memo.set_diagnosis(job, None)
            continue
        if uid in settled:
            kept = memo.diagnosis(job)
            if kept is not None:
                out[uid] = kept
                continue
        if ctx is None:
            ctx = _Context(ssn)
        diag = ctx.diagnose(job)
        memo.set_diagnosis(job, diag)
        out[uid] = diag
    return out


def amend_condition(job: JobInfo, diag: Diagnosis, session_uid: str) -> bool:
    """Put the reason code and hint on the ``Unschedulable`` condition gang wrote this session.

    The condition type and upstream's message stay; the reason becomes the code and the hint
    is appended. Returns whether the condition changed.
    """
    pg = job.podgroup
    if pg is None:
        return False
    for i, c in enumerate(pg.conditions):
        if c.type != "Unschedulable" or c.status != "True" or c.transition_id != session_uid:
            continue
        message = f"{c.message} Hint: {diag.hint}" if diag.hint else c.message
        if c.reason == str(diag.reason) and c.message == message:
            return False
        pg.conditions[i] = PodGroupCondition(
            type=c.type, status=c.status, reason=str(diag.reason), message=message,
            transition_id=c.transition_id, last_transition_time=c.last_transition_time,
        )
        return True
    return False


def format_amount(name: str, amount: float) -> str:
    """An amount in the internal unit (milli-units; memory and pods whole) as people write it."""
    if name == "memory":
        return format_quantity(amount, binary=True)
    if name == "pods":
        return f"{amount:g}"
    if name == "ephemeral-storage" or name.startswith("hugepages-"):
        return format_quantity(amount / 1000.0, binary=True)  # bytes, counted in milli-units
    return format_quantity(amount, milli=True)


def user_amount(name: str, amount: float) -> float:
    """An amount in the internal unit as the figures show it: memory in bytes, pods whole, cpu
    in cores and every other resource in its own unit (internally milli-units)."""
    return _user_unit(name, amount)


def _user_unit(name: str, amount: float) -> float:
    """Internal unit to the user's: memory in bytes, pods whole, everything else from milli-units."""
    return round(amount, 6) if name in ("memory", "pods") else round(amount / 1000.0, 6)


class _Context:
    """Per-session data shared by the jobs diagnosed in it (computed once, lazily)."""

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.table = ssn.node_table
        self.actions = list(ssn.config.actions)
        self.quotas: dict[str, QueueQuota] = ssn.queue_quotas()
        self._cluster_free: dict[int, float] = {}
        self._running_priorities: dict[str, int] | None = None  # queue -> lowest running job priority
        self._node_occupants: dict[int, list[tuple[TaskInfo, JobInfo]]] = {}
        self._over: dict[str, bool] = {}
        self._tier_labels: dict[int, tuple[np.ndarray, dict[str, int]]] = {}

        def compare(a: TaskInfo, b: TaskInfo) -> int:
            return -1 if ssn.task_order_fn(a, b) else (1 if ssn.task_order_fn(b, a) else 0)

        self.task_key = functools.cmp_to_key(compare)

    def cluster_free(self, d: int) -> float:
        v = self._cluster_free.get(d)
        if v is None:
            v = self._cluster_free[d] = float(self.table.idle[d][: self.table.n].sum())
        return v

    # ------------------------------------------------------------------ the stage walk
    def diagnose(self, job: JobInfo) -> Diagnosis:
        diag = self._walk(job)
        held = self.ssn.memo.reservations.held
        if held and (diag.stage in _RESERVABLE_STAGES
                     or (job.uid in held and diag.stage in (Stage.QUEUE_DESERVED, Stage.ENQUEUE))):
            return self._reservation(job, diag)
        return diag

    def _reservation(self, job: JobInfo, diag: Diagnosis) -> Diagnosis:
        """A node-level verdict restated when a reservation explains it (plugins/reservation.py):
        the job holds one (``Reservation.Held``), or reserved nodes refused its pod
        (``Reservation.Backfill``)."""
        held = self.ssn.memo.reservations.held
        now = self.ssn.now
        mine = held.get(job.uid)
        if mine is not None:
            hint = (f"reservation {mine.rank + 1} of {len(held)}: {', '.join(mine.nodes)} are held for it from "
                    f"{_in(mine.start - now)}; other pods use them only if they end by then or fit beside it")
            return dataclasses.replace(diag, reason=Reason.RESERVATION_HELD, hint=f"{hint}; now: {diag.hint}")
        if not any(reason == HELD_REASON for reason, _count in diag.node_failures):
            return diag
        first = min(held.values(), key=lambda r: r.rank)
        hint = (f"{sum(len(r.nodes) for r in held.values())} node(s) are reserved for gang {first.job} "
                f"({', '.join(first.nodes)}) from {_in(first.start - now)}; its pod would run past that and does "
                f"not fit beside the reservation: it starts when a node outside the reservation has room or the "
                f"gang has started; {diag.hint}")
        return dataclasses.replace(diag, reason=Reason.RESERVATION_BACKFILL, hint=hint)

    def _walk(self, job: JobInfo) -> Diagnosis:
        ssn = self.ssn
        pg = job.podgroup
        assert pg is not None
        unplaced = [t for s in (TaskStatus.Pending, TaskStatus.Allocated, TaskStatus.Pipelined)
                    for t in job.tasks_in(s).values()]
        order = ssn.task_sort_key(unplaced)
        if order is not None:
            unplaced.sort(key=order)  # TaskOrder's own total order, as allocate's worksheets sort
        else:
            unplaced.sort(key=lambda t: t.uid)
            unplaced.sort(key=self.task_key)
        gated = [t for t in unplaced if t.sch_gated]
        ungated = [t for t in unplaced if not t.sch_gated]
        placed = job.count(_PLACED)
        counts = TaskCounts(len(job.tasks), job.min_available, placed, len(unplaced), len(gated))
        mk = functools.partial(Diagnosis, job.uid, job.queue, ssn.uid, tasks=counts)
        queue = ssn.queues.get(job.queue)
        quota = self.quotas.get(job.queue)

        if pg.phase == "Pending" and "enqueue" in self.actions:
            return self._enqueue(job, mk, quota, queue is not None and queue.is_open)
        if queue is not None and not queue.is_open:
            return mk(Reason.QUEUE_CLOSED, f"queue {job.queue} is {queue.state}",
                      f"open queue {job.queue} (it is {queue.state})", scope="gang")
        vr = ssn.job_valid(job)
        if vr is not None and not vr.passed:
            valid = job.valid_task_num()
            return mk(Reason.GANG_MIN_AVAILABLE_NOT_MET, vr.message,
                      f"the gang has {valid} valid pod(s) for minAvailable {job.min_available}: create the "
                      f"missing pods or lower minAvailable", scope="gang")
        if not ungated:
            return self._gated(job, mk, gated)
        pipelined = job.tasks_in(TaskStatus.Pipelined)
        if pipelined:
            nodes = sorted({t.node_name for t in pipelined.values()})
            return mk(Reason.PREEMPTION_WAITING_FOR_RELEASE,
                      f"{len(pipelined)} pod(s) pipelined onto resources still being released",
                      f"waits for pods on {', '.join(nodes)} to release their resources (evictions or "
                      f"terminations in progress)", scope="gang")
        need = max(job.min_available - placed, 1)
        topo = self._topology(job, mk, ungated, need)
        if topo is not None:
            return topo
        for t in sorted(ungated, key=lambda t: (t.index if t.index is not None else -1, t.name)):
            fe = job.nodes_fit_errors.get(t.uid)
            if fe is not None and fe.groups:
                return self._node_fit(job, t, fe, mk, quota, ungated[:need])
        short = self._quota(job, ungated[:need], quota)
        if short is not None:
            reason, msg, hint, figures = short
            pre = self._preemption_within_queue(job, ungated[0]) if reason == Reason.QUEUE_OVER_DESERVED else None
            if pre is not None and pre.could_help:
                # preempt works inside the queue whatever its share: the queue's own
                # lower-priority pods hold the room.
                verdict, why, limits = _preemption_verdict(pre)
                return mk(verdict, msg, f"{why}; {hint}", scope="gang", resources=figures, preemption=pre,
                          task=ungated[0].key, limits=limits)
            return mk(reason, msg, hint, scope="gang", resources=figures, preemption=pre or _NO_PREEMPTION)
        if gated and placed + len(ungated) < job.min_available:
            return self._gated(job, mk, gated)
        devices = self._device_quota(job, mk, ungated)
        if devices is not None:
            return devices
        return self._not_attempted(job, mk, ungated)

    def _device_quota(self, job: JobInfo, mk: functools.partial[Diagnosis],
                      ungated: list[TaskInfo]) -> Diagnosis | None:
        """A queue's ``deviceclass/<class>`` limit that refuses the job's pods (capacity's DRA quota)."""
        for t in ungated:
            if not t.pod.resource_claims:
                continue
            got = self.ssn.device_quota_shortfall(t)
            if got is not None:
                name, need, held, cap = got
                msg = f"queue {job.queue} would exceed its capability on {name}"
                hint = (f"{t.name} claims {need} device(s) of class {name.split('/', 1)[1]} but queue "
                        f"{job.queue} holds {held} of its {name} capability of {cap}; raise the capability "
                        f"or wait for its pods to release their claims")
                return mk(Reason.QUEUE_OVER_CAPABILITY, msg, hint, scope="task", task=t.key)
        return None

    # ------------------------------------------------------------------ stages
    def _enqueue(self, job: JobInfo, mk: functools.partial[Diagnosis], quota: QueueQuota | None,
                 queue_open: bool) -> Diagnosis:
        if not queue_open:
            q = self.ssn.queues.get(job.queue)
            state = q.state if q is not None else "missing"
            return mk(Reason.QUEUE_CLOSED, f"queue {job.queue} is {state}; enqueue admits no job into it",
                      f"open queue {job.queue} (it is {state})", scope="minResources")
        req = job.min_resources()
        figures: list[ResourceFigure] = []
        short_dims: list[str] = []
        for name, amount in _requested(req):
            free_q = None
            if quota is not None:
                cap = quota.capability.get(name)
                if cap < UNLIMITED:
                    free_q = cap - quota.allocated.get(name) - quota.inqueue.get(name) + quota.elastic.get(name)
            d = self.table.dim_index.get(name)
            free_c = self.cluster_free(d) if d is not None else 0.0
            shortfall = max(amount - free_q, 0.0) if free_q is not None else 0.0
            if shortfall > _EPS:
                short_dims.append(name)
            figures.append(ResourceFigure(
                name, _user_unit(name, amount), _user_unit(name, free_c),
                None if free_q is None else _user_unit(name, free_q), shortfall=_user_unit(name, shortfall)))
        events = "; ".join(self.ssn.podgroup_events.get(job.uid, []))
        for explainer in self.ssn.enqueue_explainers():
            explained = explainer.explain_enqueue(self.ssn, job)
            if explained is not None:
                return mk(explained.reason, explained.message, explained.hint, scope="minResources",
                          resources=tuple(figures), limits=explained.limits, plugin=explained.plugin or None,
                          figures=explained.figures)
        if short_dims and quota is not None:
            name = short_dims[0]
            fig = next(f for f in figures if f.name == name)
            left = _fmt_user(name, max(fig.free_in_queue or 0.0, 0.0))
            q = self.ssn.queues.get(job.queue)
            explicit = q is not None and (qcap := q.capability()) is not None and qcap.get(name) > 0
            if explicit:
                hint = (f"minResources ask {format_amount(name, req.get(name))} {name} but queue {job.queue} has "
                        f"{left} left within its capability; raise the queue's capability on {name} or wait "
                        f"for its admitted jobs to finish")
            else:
                hint = (f"minResources ask {format_amount(name, req.get(name))} {name} but queue {job.queue} has "
                        f"{left} left of the cluster's {format_amount(name, quota.capability.get(name))} (less "
                        f"other queues' guarantees); add nodes, lower minResources or wait for its admitted "
                        f"jobs to finish")
            msg = f"queue {job.queue} capability exceeded on {', '.join(short_dims)}"
            return mk(Reason.QUEUE_OVER_CAPABILITY, msg, hint, scope="minResources", resources=tuple(figures))
        voters = sorted(set(self.ssn.enabled_plugins("job_enqueueable")))
        msg = events or "a JobEnqueueable plugin rejected the PodGroup"
        hint = (f"a JobEnqueueable vote ({', '.join(voters) or 'none'}) keeps it Pending: its minResources "
                f"exceed what the plugin admits now (overcommit: idle × overcommit-factor; sla; ...)")
        return mk(Reason.ENQUEUE_REJECTED, msg, hint, scope="minResources", resources=tuple(figures))

    def _topology(self, job: JobInfo, mk: functools.partial[Diagnosis], ungated: list[TaskInfo],
                  need: int) -> Diagnosis | None:
        """The topology stage: a hard constraint no allowed HyperNode can meet now."""
        topo = job.topology
        if topo is None:
            return None
        view = self.ssn.topology
        if not view.ready and topo.contains_network_topology():
            return mk(Reason.TOPOLOGY_NOT_READY,
                      "the HyperNode topology is not ready: a HyperNode is claimed by two parents or the "
                      "members form a cycle, and jobs with a network topology wait until it is fixed",
                      "fix the HyperNodes so that each has one parent and none contains itself "
                      "(pyvolcano validate names the offending members)", scope="gang")
        tier: int | None = None
        allocated = ""
        subject = "the job"
        tasks: list[TaskInfo] = []
        if topo.hard_tier is not None and topo.hard_tier < view.top_tier:
            tier, allocated, tasks = topo.hard_tier, topo.allocated_hypernode, ungated[:need]
        else:
            for sj in sorted(topo.sub_jobs.values(), key=lambda s: s.uid):
                if sj.hard_tier is None or sj.hard_tier >= view.top_tier or sj.is_ready():
                    continue
                mine = [t for t in ungated if t.uid in sj.tasks]
                if mine:
                    tier, allocated, subject = sj.hard_tier, sj.allocated_hypernode, f"sub-group {sj.uid}"
                    tasks = mine[:max(sj.min_available - sj.ready_task_num(), 1)]
                    break
        if tier is None or not tasks:
            return None
        copies, whole = self._copies(tasks[0])
        n = len(tasks)
        if int(np.minimum(copies, n).sum()) < n:
            return None  # the cluster as a whole has no room either: node fit explains it
        tree = view.tree
        root = CLUSTER_TOP_HYPERNODE
        if allocated:
            root = view.highest_allowed(allocated, tier)
            if not root:
                return mk(Reason.TOPOLOGY_ALLOCATED_HYPERNODE_FULL,
                          f"{subject} already runs in {allocated} (tier {view.tier(allocated)}), above "
                          f"highestTierAllowed {tier}, so its remaining pods have no allowed HyperNode",
                          f"lower the placement of the running pods or raise highestTierAllowed to "
                          f"{view.tier(allocated)}", scope="gang", task=tasks[0].key)
        figures: list[HyperNodeFigure] = []
        for t in view.tiers:
            names = sorted(h for h in (tree.hypernodes_at(t) if t != view.top_tier else {CLUSTER_TOP_HYPERNODE})
                           if root == CLUSTER_TOP_HYPERNODE or root in tree.ancestors(h))
            if not names:
                continue
            rooms = self._rooms(t, names, copies)
            best = min(names, key=lambda h: (-rooms[h], h))
            figures.append(HyperNodeFigure(t, best, rooms[best], t <= tier, len(names)))
        if any(f.allowed and f.room >= n for f in figures):
            return None  # some allowed HyperNode has room: another stage explains the wait
        unit, free = ("whole node(s)", "free") if whole else ("pod(s)", "room for")
        allowed = [f for f in figures if f.allowed]
        top = max(allowed, key=lambda f: f.room) if allowed else None
        wider = next((f for f in figures if not f.allowed and f.room >= n), None)
        where = f"one HyperNode of tier {tier}" if allowed and all(f.tier == tier for f in allowed) \
            else f"one HyperNode of tier <= {tier}"
        if allocated:
            where = f"{root}, where {subject} already runs"
        msg = f"{subject} needs {n} {unit} inside {where}"
        parts = [msg]
        if top is not None:
            parts.append(f"the best, {top.best} (tier {top.tier}), has {top.room} {free}" if whole
                         else f"the best, {top.best} (tier {top.tier}), has {free} {top.room}")
        if wider is not None:
            have = f"{wider.room} {free}" if whole else f"{free} {wider.room}"
            parts.append(f"{wider.best} at tier {wider.tier} has {have} but highestTierAllowed is {tier}")
            fix = f"raise highestTierAllowed to {wider.tier}, use mode soft, or free room inside one HyperNode"
        else:
            fix = "free room inside one HyperNode (no wider HyperNode has room either)"
        hint = "; ".join(parts) + f": {fix}"
        return mk(Reason.TOPOLOGY_NO_HYPERNODE_FITS, msg, hint, scope="gang", task=tasks[0].key,
                  topology=tuple(figures), resources=self._figures_of(tasks))

    def _rooms(self, tier: int, names: list[str], copies: np.ndarray) -> dict[str, int]:
        """Σ of ``copies`` over the nodes of each HyperNode of ``tier`` (one bincount per tier)."""
        tree = self.ssn.topology.tree
        if tier == self.ssn.topology.top_tier:
            return {h: int(copies.sum()) for h in names}
        labels = self._tier_labels.get(tier)
        if labels is None:
            members = sorted(tree.hypernodes_at(tier))
            lab = np.full(self.table.n, -1, dtype=np.int64)
            for i, h in enumerate(members):
                lab[tree.rows(h)] = i
            labels = self._tier_labels[tier] = (lab, {h: i for i, h in enumerate(members)})
        lab, idx = labels
        ok = lab >= 0
        sums = np.bincount(lab[ok], weights=copies[ok], minlength=len(idx))
        return {h: int(sums[idx[h]]) for h in names}

    def _copies(self, task: TaskInfo) -> tuple[np.ndarray, bool]:
        """How many pods like ``task`` each node could take now (0 where its predicates fail),
        and whether each such pod takes a whole node."""
        table, n = self.table, self.table.n
        idx = np.arange(n, dtype=np.int64)
        ok, _groups = self.ssn.predicate_failures(task, idx)
        copies = np.full(n, np.iinfo(np.int64).max // 4, dtype=np.int64)
        most = np.full(n, np.iinfo(np.int64).max // 4, dtype=np.int64)
        for d, v in table.task_vector(task):
            if v < _EPS:
                continue
            copies = np.minimum(copies, np.floor((table.future[d][:n] + _EPS) / v).astype(np.int64))
            most = np.minimum(most, np.floor((table.allocatable[d][:n] + _EPS) / v).astype(np.int64))
        copies = np.where(ok, np.maximum(copies, 0), 0)
        return copies, bool(n) and bool((most <= 1).all())

    def _figures_of(self, tasks: list[TaskInfo]) -> tuple[ResourceFigure, ...]:
        req = Resource()
        for t in tasks:
            req.add(t.resreq)
        out = []
        for name, amount in _requested(req):
            d = self.table.dim_index.get(name)
            free_c = self.cluster_free(d) if d is not None else 0.0
            out.append(ResourceFigure(name, _user_unit(name, amount), _user_unit(name, free_c)))
        return tuple(out)

    def _gated(self, job: JobInfo, mk: functools.partial[Diagnosis], gated: list[TaskInfo]) -> Diagnosis:
        gates = sorted({g for t in gated for g in t.pod.scheduling_gates})
        return mk(Reason.SCHEDULING_GATED,
                  f"{len(gated)} pod(s) have scheduling gates ({', '.join(gates)})",
                  f"remove the scheduling gates {', '.join(gates)} from {len(gated)} pod(s)",
                  task=gated[0].key, scope="gang")

    def _not_attempted(self, job: JobInfo, mk: functools.partial[Diagnosis], ungated: list[TaskInfo]) -> Diagnosis:
        if "allocate" not in self.actions and "backfill" not in self.actions:
            hint = "add allocate to the scheduler's actions"
        elif all(t.best_effort for t in ungated):
            hint = "its pods request no resources; backfill places them when a node passes their predicates"
        elif self.ssn.skip_unchanged and self.ssn.unchanged_since_failure(job):
            hint = "nothing that could let it fit has changed since it last failed"
        else:
            hint = "the session did not reach it; it is retried in the next session"
        return mk(Reason.NOT_ATTEMPTED, "the session did not try to place the job's pods", hint, scope="gang")

    def _quota(self, job: JobInfo, needed: list[TaskInfo], quota: QueueQuota | None
               ) -> tuple[Reason, str, str, tuple[ResourceFigure, ...]] | None:
        if quota is None or not needed:
            return None
        req = Resource()
        for t in needed:
            req.add(t.resreq)
        future = quota.allocated.clone().add(req)
        ok, dims = future.less_equal_with_dimension(quota.allocate_limit, req)
        if ok:
            return None
        figures = []
        for name, amount in _requested(req):
            limit = quota.allocate_limit.get(name)
            free_q = None if limit >= UNLIMITED else limit - quota.allocated.get(name)
            d = self.table.dim_index.get(name)
            free_c = self.cluster_free(d) if d is not None else 0.0
            shortfall = max(amount - free_q, 0.0) if free_q is not None else 0.0
            figures.append(ResourceFigure(
                name, _user_unit(name, amount), _user_unit(name, free_c),
                None if free_q is None else _user_unit(name, free_q), shortfall=_user_unit(name, shortfall)))
        name = dims[0]
        fig = next(f for f in figures if f.name == name)
        left = _fmt_user(name, max(fig.free_in_queue or 0.0, 0.0))
        q = self.ssn.queues.get(job.queue)
        qcap = q.capability() if q is not None else None
        capped = (quota.limit_kind == "deserved" and qcap is not None and qcap.get(name) > 0
                  and quota.deserved.get(name) >= qcap.get(name) - _EPS)
        if capped:
            # proportion caps a queue's deserved share at its capability: once the share reaches
            # it, a larger weight or deserved cannot raise it, so the capability is the limit.
            assert qcap is not None
            reason = Reason.QUEUE_OVER_CAPABILITY
            msg = f"queue {job.queue} would exceed its capability on {', '.join(dims)}"
            hint = (f"{len(needed)} pod(s) need {format_amount(name, req.get(name))} {name} but queue "
                    f"{job.queue} has {left} left within its capability of {format_amount(name, qcap.get(name))} "
                    f"{name}, which caps its deserved share; raise its capability on {name}, or wait for its "
                    f"running jobs to finish")
        elif quota.limit_kind == "deserved":
            reason = Reason.QUEUE_OVER_DESERVED
            msg = f"queue {job.queue} would exceed its deserved share on {', '.join(dims)}"
            hint = (f"{len(needed)} pod(s) need {format_amount(name, req.get(name))} {name} but queue "
                    f"{job.queue} has {left} left of its deserved share; raise its weight (or deserved), "
                    f"or enable reclaim to take back what other queues borrowed")
            total = self.ssn.total_resource.get(name)
            if req.get(name) > total + _EPS:
                hint = (f"{len(needed)} pod(s) need {format_amount(name, req.get(name))} {name} but the whole "
                        f"cluster has {format_amount(name, total)} {name}, so no share of it can hold them; add nodes")
            else:
                lent = self._loan_refused(job, needed)
                if lent is not None:
                    hint = f"{hint}; {lent}"
        else:
            reason = Reason.QUEUE_OVER_CAPABILITY
            msg = f"queue {job.queue} would exceed its capability on {', '.join(dims)}"
            hint = (f"{len(needed)} pod(s) need {format_amount(name, req.get(name))} {name} but queue "
                    f"{job.queue} has {left} left within its capability; raise its capability on {name}")
        return reason, msg, hint, tuple(figures)

    def _loan_refused(self, job: JobInfo, needed: list[TaskInfo]) -> str | None:
        """Why the idle share that reserved gangs' queues lend (``reservation.lendShares``) did not
        take these pods above their queue's deserved share; None when nothing is lent to them."""
        lender = self.ssn.share_lender()
        if lender is None:
            return None
        lenders = lender.lenders()
        if not lenders or job.queue in lenders:
            return None
        names = ", ".join(sorted(lenders))
        terms = {lender.loan_term(t) for t in needed}
        if LoanTerm.NONE in terms:
            return (f"queue(s) {names} lend their idle deserved share only to pods that declare a runtime, and "
                    f"these pods declare none (reservation.lendShares)")
        if LoanTerm.PAST in terms:
            return (f"these pods would run past the start of the gang reserved in queue(s) {names}, and the idle "
                    f"deserved share left for such pods once that gang has its share is already lent "
                    f"(reservation.lendShares)")
        return f"the idle deserved share that queue(s) {names} lend is already lent (reservation.lendShares)"

    def _dra_reason(self, task: TaskInfo, top_reason: str, top_count: int, fe: FitErrors) -> tuple[Reason, str] | None:
        """The DRA code when the most common failure is dynamic resource allocation's."""
        if top_reason.startswith(DRA_PRE_PREDICATE):
            why = top_reason[len(DRA_PRE_PREDICATE):].strip()
            return Reason.NODE_FIT_CLAIM_NOT_READY, (
                f"the ResourceClaims of {task.name} cannot be used yet: {why}; the pod waits until they exist, are "
                f"free to reserve and their DeviceClasses exist")
        if any(g.code == Code.Error and g.reason == top_reason for g in fe.groups):
            return Reason.NODE_FIT_CLAIM_INVALID, (
                f"the ResourceClaims of {task.name} cannot be allocated as written: {top_reason}; fix the claim or "
                f"its DeviceClass")
        if top_reason in (DRA_CANNOT_ALLOCATE, DRA_NOT_AVAILABLE):
            dra = self.ssn.cache.dra
            devices = sum(len(s.devices) for s in dra.slices.values())
            nodes = len(dra.node_slices)
            where = (f"the cluster has {devices} device(s) in {len(dra.slices)} ResourceSlice(s) on {nodes} node(s), "
                     f"{dra.allocated_count()} of them allocated")
            if top_reason == DRA_NOT_AVAILABLE:
                return Reason.NODE_FIT_NO_DEVICES, (
                    f"{top_count} node(s) cannot reach the devices already allocated to a claim of {task.name}; "
                    f"it can only run where those devices are")
            return Reason.NODE_FIT_NO_DEVICES, (
                f"no node has free devices matching the ResourceClaims of {task.name} ({top_count} node(s) tried); "
                f"{where}: wait for claims to be released, or add nodes whose drivers publish such devices")
        return None

    def _node_fit(self, job: JobInfo, task: TaskInfo, fe: FitErrors, mk: functools.partial[Diagnosis],
                  quota: QueueQuota | None, needed: list[TaskInfo]) -> Diagnosis:
        ssn, table = self.ssn, self.table
        hist: dict[str, int] = {}
        for g in fe.groups:
            hist[g.reason] = hist.get(g.reason, 0) + len(g.nodes)
        histogram = tuple(sorted(hist.items()))
        failed = fe.failed_nodes()
        insufficient = _nodes_of(g.nodes for g in fe.groups if g.reason.startswith("Insufficient "))
        common = dict(task=task.key, scope="task", node_failures=histogram,
                      nodes_total=table.n, nodes_failed=len(failed))
        candidates = np.zeros(0, dtype=np.int64)
        if len(insufficient):
            ok, _groups = ssn.predicate_failures(task, insufficient)
            candidates = insufficient[ok]
        if not len(candidates) or not any(v > 0 for _d, v in table.task_vector(task)):
            for explainer in ssn.predicate_explainers():
                explained = explainer.explain_predicates(ssn, job, task, hist)
                if explained is not None:
                    return mk(explained.reason, fe.error(), explained.hint, limits=explained.limits,
                              plugin=explained.plugin or None, figures=explained.figures, **common)
            top_reason, top_count = max(hist.items(), key=lambda kv: (kv[1], kv[0]))
            code = volume_reason(top_reason) if task.pod.claims else None
            if code is not None:
                hint, volumes = volume_diagnosis(ssn, task, code, f"{top_count} {top_reason}", needed)
                return mk(code, fe.error(), hint, volumes=volumes, **common)
            if task.pod.resource_claims:
                dra = self._dra_reason(task, top_reason, top_count, fe)
                if dra is not None:
                    return mk(dra[0], fe.error(), dra[1], devices=device_diagnosis(ssn.cache.dra, task), **common)
            extra = (f"; the {len(insufficient)} node(s) short of resources fail them too"
                     if len(insufficient) else "")
            hint = (f"no node passes the predicates of {task.name} (most common: {top_count} {top_reason}){extra}: "
                    f"change its node selector, affinity or tolerations, or the nodes")
            return mk(Reason.NODE_FIT_PREDICATE_FAILED, fe.error(), hint, **common)
        vec = [(d, v) for d, v in table.task_vector(task) if v > 0]
        per = np.array([v for _d, v in vec])[:, None]
        free = np.stack([table.idle[d][candidates] for d, _v in vec])
        # Pods of this shape each candidate could take now, and how many of them the gang needs.
        fits = np.floor((free + _EPS) / per).min(axis=0).clip(min=0)
        shape = table.task_vector(task)
        need_n = max(sum(1 for t in needed if table.task_vector(t) == shape), 1)
        capacity = int(fits.sum())
        if capacity >= need_n:
            # It fits now: the gang's other pods held the room when this one was tried.
            hint = (f"the gang's pods do not fit together: {task.name} failed while its other pods held "
                    f"the room; the nodes have room for {len(needed)} pods of these shapes only one at a time")
            return mk(Reason.GANG_MIN_AVAILABLE_NOT_MET, fe.error(), hint, **common)
        others = capacity - fits
        on_node = np.maximum(need_n - others, 1.0)  # pods that would have to go on that node
        short = np.maximum(on_node * per - free, 0.0)
        n_short = (short > _EPS).sum(axis=0)
        rel = (short / per).sum(axis=0)
        best_pos = int(np.lexsort((candidates, rel, n_short))[0])
        best_name = ssn.node_list[int(candidates[best_pos])].name
        scale = float(on_node[best_pos])
        if need_n > 1:
            common["scope"] = "gang"
        figures = []
        main: tuple[float, str, float] | None = None  # (relative shortfall, dim, per-pod request)
        for k, (d, v) in enumerate(vec):
            name = table.dims[d]
            free_q = None
            if quota is not None:
                limit = quota.allocate_limit.get(name)
                if limit < UNLIMITED:
                    free_q = _user_unit(name, limit - quota.allocated.get(name))
            sh = float(short[k, best_pos])
            figures.append(ResourceFigure(
                name, _user_unit(name, v * (need_n if need_n > 1 else 1)), _user_unit(name, self.cluster_free(d)),
                free_q, _user_unit(name, float(free[k, best_pos])), best_name, _user_unit(name, sh)))
            if sh > _EPS and (main is None or sh / v > main[0]):
                main = (sh / v, name, v)
        assert main is not None  # capacity < need_n: the best node lacks something
        _rel, name, v = main
        k = next(i for i, (d, _v) in enumerate(vec) if table.dims[d] == name)
        block_pos = int(np.argmax(free[k]))
        block = f"{format_amount(name, float(free[k, block_pos]))} on {ssn.node_list[int(candidates[block_pos])].name}"
        if capacity == 0:
            hint = f"needs {format_amount(name, v)} {name} on one node; the largest free block is {block}"
            if need_n > 1:
                hint += f" ({need_n} such pods needed)"
        else:
            hint = (f"needs {need_n} pods of {format_amount(name, v)} {name}; the nodes that pass its predicates "
                    f"hold {capacity} at once (the largest free block is {block}); {best_name} would need "
                    f"{format_amount(name, v * scale)} {name} free for {int(scale)} of them")
        if int(n_short[best_pos]) > 1:
            parts = ", ".join(f"{f.name} {_fmt_user(f.name, f.shortfall)}" for f in figures if f.shortfall > 0)
            hint += f" (the closest node, {best_name}, is short of {parts})"
        d = table.dim_index[name]
        cluster = self.cluster_free(d)
        if cluster + _EPS >= v * need_n:
            hint += f"; the cluster has {format_amount(name, cluster)} {name} free in all, but not on one node"
        else:
            hint += f"; the cluster has only {format_amount(name, cluster)} {name} free"
        pre = self._preemption(job, task, candidates, vec)
        if pre.could_help:
            reason, why, limits = _preemption_verdict(pre)
            return mk(reason, fe.error(), f"{why}; {hint}", resources=tuple(figures), preemption=pre, limits=limits,
                      **common)
        return mk(Reason.NODE_FIT_INSUFFICIENT_RESOURCE, fe.error(), hint, resources=tuple(figures),
                  preemption=pre, **common)

    # ------------------------------------------------------------------ preemption and reclaim
    def _preemption_within_queue(self, job: JobInfo, task: TaskInfo) -> PreemptionInfo | None:
        """For a queue at its share: could preempting its lower-priority pods make room for ``task``?"""
        if not self._lower_priority_running(job):
            return None
        vec = [(d, v) for d, v in self.table.task_vector(task) if v > 0]
        if not vec:
            return None
        idx = self.ssn.all_node_indices()
        ok, _groups = self.ssn.predicate_failures(task, idx)
        return self._preemption(job, task, idx[ok], vec, reclaim=False)

    def _lower_priority_running(self, job: JobInfo) -> bool:
        if self._running_priorities is None:
            self._running_priorities = {}
            for other in self.ssn.jobs.values():
                if other.count(TaskStatus.Running | TaskStatus.Bound):
                    low = self._running_priorities.get(other.queue)
                    if low is None or other.priority < low:
                        self._running_priorities[other.queue] = other.priority
        low = self._running_priorities.get(job.queue)
        return low is not None and low < job.priority

    def _preemption(self, job: JobInfo, task: TaskInfo, candidates: np.ndarray,
                    vec: list[tuple[int, float]], *, reclaim: bool = True) -> PreemptionInfo:
        """Could evicting lower-priority pods of the queue (preempt) or pods of queues over their
        deserved share (reclaim) make room for ``task`` on one node, and why did that not happen?"""
        if not self._lower_priority_running(job) and not (
                reclaim and any(self._over_deserved(q) for q in self.quotas if q != job.queue)):
            return _NO_PREEMPTION
        preempt_on: list[tuple[int, list[tuple[TaskInfo, JobInfo]]]] = []
        reclaim_on: list[tuple[int, list[tuple[TaskInfo, JobInfo]]]] = []
        for i in candidates:
            p_node: list[tuple[TaskInfo, JobInfo]] = []
            r_node: list[tuple[TaskInfo, JobInfo]] = []
            for t, vjob in self._occupants(int(i)):
                if vjob is job:
                    continue
                if vjob.queue == job.queue:
                    if vjob.priority < job.priority:
                        p_node.append((t, vjob))
                elif reclaim and self._over_deserved(vjob.queue):
                    r_node.append((t, vjob))
            preempt_on.append((int(i), p_node))
            reclaim_on.append((int(i), r_node))
        for action, per_node in (("preempt", preempt_on), ("reclaim", reclaim_on)):
            if self._helps(per_node, vec) is None:
                continue
            # gangpreempt / gangreclaim evict for the same starving jobs, whole gangs per domain.
            configured = [a for a in (action, f"gang{action}") if a in self.actions]
            enabled = bool(configured)
            filters = [
                ("the candidate victims are not preemptable (volcano.sh/preemptable: false)",
                 lambda t, _j: t.preemptable),
            ]
            if action == "reclaim":
                filters.insert(0, ("the queues holding the space are not reclaimable",
                                   lambda _t, j: self._reclaimable(j.queue)))
            kept = per_node
            for why, keep in filters:
                kept = [(i, [(t, j) for t, j in ts if keep(t, j)]) for i, ts in kept]
                if self._helps(kept, vec) is None:
                    return PreemptionInfo(True, action, enabled, why)
            kind = "preemptable" if action == "preempt" else "reclaimable"
            if not enabled or "gang" in self.ssn.enabled_plugins(kind):
                # gang's victim filter (its own flag; with the action absent, as the defaults have it)
                kept = _gang_surplus(kept)
            node_i = self._helps(kept, vec)
            if node_i is None:
                return PreemptionInfo(True, action, enabled,
                                      "evicting the candidate victims would break their gangs' minAvailable")
            if enabled:
                for plugin in self.ssn.victim_explainers(kind):
                    filtered = [(i, self._kept_by(plugin, ts)) for i, ts in kept]
                    if self._helps(filtered, vec) is None:
                        on_node = next(ts for i, ts in kept if i == node_i)
                        left = {id(t) for t, _j in next(ts for i, ts in filtered if i == node_i)}
                        block = plugin.explain_victims(self.ssn, action, [t for t, _j in on_node if id(t) not in left])
                        return PreemptionInfo(True, action, enabled, block.message, blocked_by=block)
                    kept = filtered
                node_i = self._helps(kept, vec)
                assert node_i is not None
            victims = tuple(sorted(t.key for i, ts in kept if i == node_i for t, _j in ts))
            if not enabled:
                why = (f"neither the {action} nor the gang{action} action is configured "
                       f"(actions: {', '.join(self.actions)})")
            else:
                why = f"{' and '.join(configured)} ran but its plugins' votes did not select the victims"
            return PreemptionInfo(True, action, enabled, why, victims)
        return _NO_PREEMPTION

    def _kept_by(self, plugin: VictimExplainer, victims: list[tuple[TaskInfo, JobInfo]]
                 ) -> list[tuple[TaskInfo, JobInfo]]:
        """``victims`` that ``plugin``'s victim filter keeps, as one node's call would."""
        if not victims:
            return victims
        keep = {id(t) for t in plugin.keep_victims(self.ssn, [t for t, _j in victims])}
        return [(t, j) for t, j in victims if id(t) in keep]

    def _occupants(self, i: int) -> list[tuple[TaskInfo, JobInfo]]:
        """The running or bound pods of jobs with a PodGroup on node ``i``, in UID order (cached)."""
        out = self._node_occupants.get(i)
        if out is None:
            ssn = self.ssn
            out = []
            for t in sorted(ssn.node_list[i].tasks.values(), key=lambda t: t.uid):
                if t.status in _OCCUPYING and (vjob := ssn.jobs.get(t.job)) is not None:
                    out.append((t, vjob))
            self._node_occupants[i] = out
        return out

    def _over_deserved(self, queue: str) -> bool:
        over = self._over.get(queue)
        if over is None:
            quota = self.quotas.get(queue)
            over = quota is not None and not quota.deserved.is_empty() and \
                not quota.allocated.less_equal(quota.deserved)
            self._over[queue] = over
        return over

    def _reclaimable(self, queue: str) -> bool:
        q = self.ssn.queues.get(queue)
        return q is not None and q.reclaimable

    def _helps(self, per_node: list[tuple[int, list[tuple[TaskInfo, JobInfo]]]],
               vec: list[tuple[int, float]]) -> int | None:
        """The first node where idle plus the victims' requests fit ``vec``, or None."""
        table = self.table
        for i, victims in per_node:
            if not victims:
                continue
            freed = Resource()
            for t, _j in victims:
                freed.add(t.resreq)
            if all(float(table.idle[d][i]) + freed.get(table.dims[d]) + _EPS >= v for d, v in vec):
                return i
        return None


def _preemption_verdict(pre: PreemptionInfo) -> tuple[Reason, str, tuple[LimitFigure, ...]]:
    """The reason code, the why-not text and the figures of a preemption that could have helped."""
    block = pre.blocked_by
    if block is None:
        return Reason.PREEMPTION_NOT_ALLOWED, pre.why_not, ()
    return block.reason, block.hint, block.limits


_NO_PREEMPTION = PreemptionInfo(False, None, False,
                                "no lower-priority pods of the queue and no pods of queues over their deserved "
                                "share hold enough on one node")


def _gang_surplus(per_node: list[tuple[int, list[tuple[TaskInfo, JobInfo]]]]
                  ) -> list[tuple[int, list[tuple[TaskInfo, JobInfo]]]]:
    """Victims each job can lose while keeping minAvailable ready pods (gang's Preemptable rule)."""
    left: dict[str, int] = {}
    out = []
    for i, victims in per_node:
        keep = []
        for t, j in victims:
            if j.uid not in left:
                left[j.uid] = j.ready_task_num() - j.min_available
            if left[j.uid] > 0:
                left[j.uid] -= 1
                keep.append((t, j))
        out.append((i, keep))
    return out


_RESERVABLE_STAGES = frozenset({Stage.NODE_FIT, Stage.GANG, Stage.PREEMPTION, Stage.SESSION})


def _in(seconds: float) -> str:
    """``now`` or ``in 3h05m`` (whole minutes)."""
    minutes = int(max(seconds, 0.0) // 60)
    if minutes == 0:
        return "now"
    h, m = divmod(minutes, 60)
    return f"in {h}h{m:02d}m" if h else f"in {m}m"


def _nodes_of(arrays: Iterable[np.ndarray]) -> np.ndarray:
    parts = list(arrays)
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(parts))


def _requested(req: Resource) -> list[tuple[str, float]]:
    return [(name, amount) for name, amount in req.items() if amount > 0 and name != "pods"]


def _fmt_user(name: str, amount: float) -> str:
    return format_amount(name, amount if name in ("memory", "pods") else amount * 1000.0)
