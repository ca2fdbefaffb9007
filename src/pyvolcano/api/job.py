"""JobInfo: a PodGroup and its tasks (upstream pkg/scheduler/api/job_info.go).

Tasks are indexed by status (``task_status_index``) so the gang counters are O(#statuses).
``allocated`` (Σ resreq of tasks in an allocated status) is maintained incrementally, as
upstream does, so plugins read it without scanning tasks.

A job whose PodGroup has a ``networkTopology`` or a ``subGroupPolicy`` also carries its
sub-jobs (:class:`~pyvolcano.api.sub_job.JobTopology`, kept in step by ``add_task``,
``delete_task`` and ``update_task_status``); other jobs have the single default sub-job
implicitly, which makes SubJobReady/Pipelined equal to JobReady/Pipelined.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyvolcano.api.names import PREEMPTABLE_KEY
from pyvolcano.api.objects import PodGroup
from pyvolcano.api.resource import Resource
from pyvolcano.api.sub_job import JobTopology, needs_topology
from pyvolcano.api.task import (
    ALLOCATED_STATUS,
    COMPLETED_STATUS,
    SCHEDULED_STATUS,
    TaskInfo,
    TaskStatus,
    _parse_bool,
)
from pyvolcano.api.task_template import TaskTemplate, same_content, template_signature
from pyvolcano.api.unschedule import FitErrors

__all__ = ["ChangedJobs", "JobChanges", "JobInfo", "ValidateResult", "podgroup_phase"]

_ALLOCATED = ALLOCATED_STATUS._value_
_N_STATUS = len(TaskStatus)
_EMPTY = Resource()


@functools.lru_cache(maxsize=256)
def _bits(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(_N_STATUS) if mask >> i & 1)


_VALID = ALLOCATED_STATUS | TaskStatus.Succeeded | TaskStatus.Pipelined | TaskStatus.Pending
_OCCUPIED_PIPELINED = ALLOCATED_STATUS | TaskStatus.Succeeded | TaskStatus.Pipelined
_OCCUPIED = ALLOCATED_STATUS | TaskStatus.Succeeded
_READY = TaskStatus.Bound | TaskStatus.Binding | TaskStatus.Running | TaskStatus.Allocated | TaskStatus.Succeeded
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


class ChangedJobs(set[str]):
    """One subscriber's uids, reported by a :class:`JobChanges` feed since it last drained them.

    ``overflowed``: more uids than the feed's limit piled up undrained (a consumer that stopped
    running, such as a plugin taken out of the configuration), so they were dropped and the
    consumer must walk every job once instead.
    """

    __slots__ = ("overflowed",)

    def __init__(self) -> None:
        super().__init__()
        self.overflowed = False

    def take(self) -> list[str] | None:
        """The reported uids in uid order, drained; None after an overflow (walk every job)."""
        out = None if self.overflowed else sorted(self)
        self.overflowed = False
        self.clear()
        return out


class JobChanges:
    """The change feed of a scheduler cache's jobs.

    A job attached to the feed (``JobInfo.changes``) reports its uid whenever its ``version``
    or ``fit_version`` moves; the cache reports the jobs that join or leave the session's view
    without such a move (PodGroup deleted, queue created or deleted). Each subscriber gets
    its own :class:`ChangedJobs`, which it drains when it has caught up; so a per-session pass
    can visit the jobs that changed since it last ran instead of every live job. A subscriber
    holds at most ``limit`` uids (then it overflows), so one that stops draining costs bounded
    memory.
    """

    __slots__ = ("_subscribers", "limit")

    def __init__(self, limit: int = 100_000) -> None:
        self._subscribers: list[ChangedJobs] = []
        self.limit = limit

    def subscribe(self) -> ChangedJobs:
        """A new set that receives every uid reported from now on (the caller drains it)."""
        got = ChangedJobs()
        self._subscribers.append(got)
        return got

    def touch(self, uid: str) -> None:
        limit = self.limit
        for got in self._subscribers:
            got.add(uid)
            if len(got) > limit:
                got.clear()
                got.overflowed = True


class JobInfo:
    """A gang: the PodGroup's parameters and its tasks."""

    __slots__ = (
        "_min_resources",
        "allocated",
        "changes",
        "creation_timestamp",
        "fit_version",
        "job_fit_errors",
        "min_available",
        "name",
        "namespace",
        "nodes_fit_errors",
        "nominated_hypernode",
        "pending_best_effort",
        "pending_request",
        "podgroup",
        "preemptable",
        "priority",
        "queue",
        "role_status",
        "sch_gated_count",
        "schedule_start",
        "status_counts",
        "task_min_available",
        "task_min_available_total",
        "task_status_index",
        "tasks",
        "templates",
        "topology",
        "total_request",
        "uid",
        "version",
        "waiting_time",
    )

    def __init__(self, uid: str):
        self.uid = uid
        ns, _, name = uid.partition("/")
        self.namespace = ns
        self.name = name
        self.podgroup: PodGroup | None = None
        self._min_resources: Resource | None = None
        self.queue = ""
        self.priority = 0
        self.min_available = 0
        self.task_min_available: dict[str, int] = {}
        self.task_min_available_total = 0
        self.creation_timestamp = 0.0
        self.preemptable = False
        self.waiting_time: float | None = None
        self.tasks: dict[str, TaskInfo] = {}
        self.task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        self.total_request = Resource()
        self.pending_best_effort = 0
        # Incremental aggregates, so per-session plugin work is O(jobs), not O(tasks).
        self.pending_request = Resource()
        self.role_status: dict[tuple[str, int], int] = {}
        self.sch_gated_count = 0
        self.status_counts = [0] * _N_STATUS
        self.nodes_fit_errors: dict[str, FitErrors] = {}
        self.job_fit_errors = ""
        self.schedule_start: float | None = None
        # Bumped by every change to the tasks or the PodGroup (a new PodGroup object, or its
        # phase through set_phase), so derived per-job data (cache/job_sums.py) is
        # recomputed only for jobs that changed.
        self.version = 0
        # Bumped when the scheduling reasons change: fit errors recorded or reset, or the
        # tasks' last transactions cleared (session close re-derives messages only then).
        self.fit_version = 0
        # The cache's change feed, which this job reports its version moves to (None for a job
        # outside a cache). What sessions keep about the job lives in the cache's memo
        # (cache/memo.py), keyed by these versions.
        self.changes: JobChanges | None = None
        # Sub-jobs and HyperNode placement (api/sub_job.py); None unless the PodGroup has a
        # networkTopology or a subGroupPolicy.
        self.topology: JobTopology | None = None
        # The HyperNode gangpreempt / gangreclaim nominated for the default sub-job of a job
        # without a JobTopology (a job with one keeps it on its sub-jobs); allocate redeems it.
        self.nominated_hypernode = ""
        # The templates of the tasks (api/task_template.py), interned by signature.
        self.templates: dict[tuple[object, ...], TaskTemplate] = {}

    # ------------------------------------------------------------------ podgroup
    def _moved(self) -> None:
        self.version += 1
        if self.changes is not None:
            self.changes.touch(self.uid)

    def bump_fit_version(self) -> None:
        """The scheduling reasons changed (fit errors, the tasks' last transactions)."""
        self.fit_version += 1
        if self.changes is not None:
            self.changes.touch(self.uid)

    def set_podgroup(self, pg: PodGroup, default_queue: str = "default") -> None:
        self._moved()
        self.name = pg.name
        self.namespace = pg.namespace
        self.min_available = pg.min_member
        self.queue = pg.queue or default_queue
        self.creation_timestamp = pg.creation_timestamp
        self.podgroup = pg
        self._min_resources = None
        self.task_min_available = dict(pg.min_task_member)
        self.task_min_available_total = sum(pg.min_task_member.values())
        self.preemptable = False
        for src in (pg.annotations, pg.labels):
            if PREEMPTABLE_KEY in src:
                self.preemptable = bool(_parse_bool(src[PREEMPTABLE_KEY]))
                break
        old = self.topology
        if needs_topology(pg):
            topo = JobTopology(self.uid, pg)
            topo.rebuild(sorted(self.tasks.values(), key=lambda t: t.uid), old)
            self.topology = topo
        else:
            self.topology = None
        self.waiting_time = None
        for key in ("volcano.sh/sla-waiting-time", "sla-waiting-time"):
            if key in pg.annotations:
                from pyvolcano.api.duration import parse_duration

                wt = parse_duration(pg.annotations[key])
                if wt is not None and wt > 0:
                    self.waiting_time = wt
                    break

    def set_phase(self, phase: str) -> None:
        """Set the PodGroup's phase (in the session); counts as a change of the job."""
        assert self.podgroup is not None
        if self.podgroup.phase != phase:
            self.podgroup.phase = phase
            self._moved()

    def min_resources(self) -> Resource:
        """The PodGroup's minResources (parsed once per PodGroup version; a fresh copy)."""
        if self.podgroup is None or self.podgroup.min_resources is None:
            return Resource()
        if self._min_resources is None:
            self._min_resources = Resource.from_list(self.podgroup.min_resources)
        return self._min_resources.clone()

    def has_min_resources(self) -> bool:
        return self.podgroup is not None and self.podgroup.min_resources is not None

    def sch_gated_resources(self) -> Resource:
        res = Resource()
        if not self.sch_gated_count:
            return res
        for t in self.tasks.values():
            if t.sch_gated:
                res.add(t.resreq)
        return res

    def deduct_sch_gated_resources(self, res: Resource) -> Resource:
        if not self.sch_gated_count:
            return res
        gated = self.sch_gated_resources()
        if gated.is_empty():
            return res
        out = res.clone()
        out.milli_cpu = max(out.milli_cpu - gated.milli_cpu, 0.0)
        out.memory = max(out.memory - gated.memory, 0.0)
        for n, v in res.scalars.items():
            if n in gated.scalars:
                out.scalars[n] = max(v - gated.scalars[n], 0.0)
        return out

    def elastic_resources(self) -> Resource:
        if self.podgroup is None or self.podgroup.min_resources is None:
            return self.allocated.exceeded_part(_EMPTY)
        if self._min_resources is None:
            self._min_resources = Resource.from_list(self.podgroup.min_resources)
        return self.allocated.exceeded_part(self._min_resources)

    # ------------------------------------------------------------------ tasks
    def add_task(self, task: TaskInfo) -> None:
        self._moved()
        self.tasks[task.uid] = task
        self.task_status_index.setdefault(task.status, {})[task.uid] = task
        self.total_request.add(task.resreq)
        if task.status & ALLOCATED_STATUS:
            self.allocated.add(task.resreq)
        if task.status == TaskStatus.Pending:
            self.pending_request.add(task.resreq)
            if task.best_effort:
                self.pending_best_effort += 1
        key = (task.role, task.status._value_)
        self.role_status[key] = self.role_status.get(key, 0) + 1
        self.status_counts[task.status._value_.bit_length() - 1] += 1
        if task.sch_gated:
            self.sch_gated_count += 1
        if self.topology is not None:
            self.topology.add_task(task)

    def delete_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        self._moved()
        bucket = self.task_status_index.get(t.status)
        if bucket is not None:
            bucket.pop(t.uid, None)
        self.total_request.sub(t.resreq)
        if t.status & ALLOCATED_STATUS:
            self.allocated.sub(t.resreq)
        if t.status == TaskStatus.Pending:
            self.pending_request.sub(t.resreq)
            if t.best_effort:
                self.pending_best_effort -= 1
        key = (t.role, t.status._value_)
        self.role_status[key] -= 1
        self.status_counts[t.status._value_.bit_length() - 1] -= 1
        if t.sch_gated:
            self.sch_gated_count -= 1
        if self.topology is not None:
            self.topology.remove_task(t)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move ``task`` to ``status``, keeping the index and ``allocated`` in step."""
        old = task.status
        if old == status:
            return
        self._moved()
        bucket = self.task_status_index.get(old)
        if bucket is not None:
            bucket.pop(task.uid, None)
        was = bool(old._value_ & _ALLOCATED)
        now = bool(status._value_ & _ALLOCATED)
        if was and not now:
            self.allocated.sub(task.resreq)
        elif now and not was:
            self.allocated.add(task.resreq)
        if old == TaskStatus.Pending:
            self.pending_request.sub(task.resreq)
            if task.best_effort:
                self.pending_best_effort -= 1
        elif status == TaskStatus.Pending:
            self.pending_request.add(task.resreq)
            if task.best_effort:
                self.pending_best_effort += 1
        sc = self.status_counts
        sc[old._value_.bit_length() - 1] -= 1
        sc[status._value_.bit_length() - 1] += 1
        rs = self.role_status
        okey = (task.role, old._value_)
        rs[okey] -= 1
        nkey = (task.role, status._value_)
        rs[nkey] = rs.get(nkey, 0) + 1
        if self.topology is not None:
            self.topology.moved(task, old, status)
        task.status = status
        self.task_status_index.setdefault(status, {})[task.uid] = task

    def update_tasks_status(self, tasks: list[TaskInfo], status: TaskStatus) -> None:
        """:meth:`update_task_status` for each of ``tasks`` in order, with the aggregates
        moved once: the tasks share one template (so one status, role and request)."""
        k = len(tasks)
        first = tasks[0]
        old = first.status
        if k == 1 or self.topology is not None or old == status or any(t.status is not old for t in tasks):
            for task in tasks:
                self.update_task_status(task, status)
            return
        self.version += k - 1
        self._moved()
        bucket = self.task_status_index.get(old)
        if bucket is not None:
            for task in tasks:
                bucket.pop(task.uid, None)
        req = first.resreq
        was = bool(old._value_ & _ALLOCATED)
        now = bool(status._value_ & _ALLOCATED)
        if was and not now:
            self.allocated.sub_times(req, k)
        elif now and not was:
            self.allocated.add_times(req, k)
        if old == TaskStatus.Pending:
            self.pending_request.sub_times(req, k)
            if first.best_effort:
                self.pending_best_effort -= k
        elif status == TaskStatus.Pending:
            self.pending_request.add_times(req, k)
            if first.best_effort:
                self.pending_best_effort += k
        sc = self.status_counts
        sc[old._value_.bit_length() - 1] -= k
        sc[status._value_.bit_length() - 1] += k
        rs = self.role_status
        rs[(first.role, old._value_)] -= k
        nkey = (first.role, status._value_)
        rs[nkey] = rs.get(nkey, 0) + k
        target = self.task_status_index.setdefault(status, {})
        for task in tasks:
            task.status = status
            target[task.uid] = task

    def template_of(self, task: TaskInfo, like: TaskInfo | None = None) -> TaskTemplate:
        """The template ``task`` shares with its replicas (api/task_template.py); ``like``, a
        task whose template is known, is tried first (a field-by-field comparison)."""
        tpl = task.template
        if tpl is None and like is not None and like.template is not None and same_content(like, task):
            tpl = task.template = like.template
        if tpl is None:
            sig = template_signature(task)
            tpl = self.templates.get(sig)
            if tpl is None:
                tpl = self.templates[sig] = TaskTemplate(sig)
            task.template = tpl
        return tpl

    def tasks_in(self, status: TaskStatus) -> dict[str, TaskInfo]:
        return self.task_status_index.get(status, {})

    def count(self, statuses: TaskStatus) -> int:
        counts = self.status_counts
        total = 0
        for i in _bits(statuses._value_):
            total += counts[i]
        return total

    # ------------------------------------------------------------------ gang counters
    def ready_task_num(self) -> int:
        return self.count(_READY)

    def waiting_task_num(self) -> int:
        return len(self.tasks_in(TaskStatus.Pipelined))

    def pending_best_effort_task_num(self) -> int:
        return self.pending_best_effort

    def valid_task_num(self) -> int:
        return self.count(_VALID)

    def scheduled_task_num(self) -> int:
        return self.count(SCHEDULED_STATUS)

    def releasing_scheduled_task_num(self) -> int:
        return sum(1 for t in self.tasks_in(TaskStatus.Releasing).values() if t.node_name)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.podgroup is None or self.podgroup.phase in ("Pending", "")

    def has_pending_tasks(self) -> bool:
        return bool(self.tasks_in(TaskStatus.Pending))

    def _role_counts(self, statuses: TaskStatus, *, pending_empty: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        mask = statuses._value_
        for (role, status), n in self.role_status.items():
            if n and status & mask:
                out[role] = out.get(role, 0) + n
        if pending_empty:
            for t in self.tasks_in(TaskStatus.Pending).values():
                if t.init_resreq.is_empty():
                    out[t.role] = out.get(t.role, 0) + 1
        return out

    def _roles_bypassed(self) -> bool:
        return self.min_available < self.task_min_available_total

    def check_task_valid(self) -> bool:
        if self._roles_bypassed() or not self.task_min_available:
            return True
        actual = self._role_counts(
            _VALID, pending_empty=False
        )
        return all(m == 0 or actual.get(role, 0) >= m for role, m in self.task_min_available.items())

    def check_task_ready(self) -> bool:
        if self._roles_bypassed() or not self.task_min_available:
            return True
        occ = self._role_counts(_OCCUPIED, pending_empty=True)
        return all(occ.get(role, 0) >= m for role, m in self.task_min_available.items())

    def check_task_pipelined(self) -> bool:
        if self._roles_bypassed() or not self.task_min_available:
            return True
        occ = self._role_counts(_OCCUPIED_PIPELINED, pending_empty=True)
        return all(occ.get(role, 0) >= m for role, m in self.task_min_available.items())

    def check_task_starving(self) -> bool:
        if self._roles_bypassed():
            return True
        if not self.task_min_available:
            return False
        occ = self._role_counts(_OCCUPIED_PIPELINED, pending_empty=False)
        return any(occ.get(role, 0) < m for role, m in self.task_min_available.items())

    def allocated_roles(self) -> dict[str, int]:
        return self._role_counts(_OCCUPIED, pending_empty=True)

    # ------------------------------------------------------------------ fit errors
    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[uid].role for uid in self.nodes_fit_errors if uid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        if not task.role:
            return False
        return task.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """Upstream ``NeedContinueAllocating`` for the default sub-job."""
        if self.min_available == len(self.tasks):
            return False
        failed = self.fit_failed_roles()
        pending: dict[str, int] = {}
        for t in self.tasks_in(TaskStatus.Pending).values():
            pending[t.role] = pending.get(t.role, 0) + 1
        if self.min_available < self.task_min_available_total:
            left = sum(c for role, c in pending.items() if role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self.allocated_roles()
        for role in failed:
            m = self.task_min_available.get(role, 0)
            if m == 0:
                continue
            if allocated.get(role, 0) < m:
                return False
        return True

    def reset_fit_err(self) -> None:
        if self.nodes_fit_errors or self.job_fit_errors:
            self.bump_fit_version()
            self.job_fit_errors = ""
            self.nodes_fit_errors = {}

    def set_task_fit_errors(self, task: TaskInfo, errors: FitErrors) -> None:
        self.bump_fit_version()
        self.nodes_fit_errors[task.uid] = errors

    def task_scheduling_reason(self, task: TaskInfo) -> tuple[str, str, str]:
        """(reason, message, nominated node) from the task's last transaction (upstream wording)."""
        ctx = task.last_transaction or task.transaction_context()
        msg = self.job_fit_errors
        if ctx.status == TaskStatus.Allocated:
            return (
                "Schedulable",
                f"Pod {task.namespace}/{task.name} can possibly be assigned to {ctx.node_name}, "
                "once minAvailable is satisfied",
                "",
            )
        if ctx.status == TaskStatus.Pipelined:
            return (
                "Unschedulable",
                f"Pod {task.namespace}/{task.name} can possibly be assigned to {ctx.node_name}, "
                "once resource is released and minAvailable is satisfied",
                ctx.node_name if ctx.eviction_occurred else "",
            )
        if ctx.status == TaskStatus.Pending:
            fe = self.nodes_fit_errors.get(task.uid)
            if fe is not None:
                return "Unschedulable", fe.error(), ""
            return "Unschedulable", msg, ""
        return str(ctx.status), msg, ""

    def fit_error(self) -> str:
        """Upstream ``JobInfo.FitError``: the job-level unschedulable explanation."""
        reasons: dict[str, int] = {}
        for status, bucket in self.task_status_index.items():
            if bucket:
                reasons[str(status)] = reasons.get(str(status), 0) + len(bucket)
        reasons["minAvailable"] = self.min_available
        head = POD_GROUP_READY if self.is_ready() else POD_GROUP_NOT_READY
        msg = f"{head}, {', '.join(_histogram(reasons))}"
        pend: dict[str, int] = {}
        for t in self.tasks_in(TaskStatus.Pending).values():
            r, _, _ = self.task_scheduling_reason(t)
            pend[r] = pend.get(r, 0) + 1
        if pend:
            msg += f"; Pending: {', '.join(_histogram(pend))}"
        if self.job_fit_errors:
            msg += ". Origin reason is: " + self.job_fit_errors
        else:
            for t in self._tasks_in_order():
                fe = self.nodes_fit_errors.get(t.uid)
                if fe is not None:
                    msg += f". Origin reason is {t.name}: {fe.error()}"
                    break
        return msg

    def _tasks_in_order(self) -> list[TaskInfo]:
        # Go map iteration order is random; we use a stable order (index, name).
        return sorted(self.tasks.values(), key=lambda t: (t.index if t.index is not None else -1, t.name))

    def __repr__(self) -> str:
        return f"Job<{self.uid} queue={self.queue} min={self.min_available} tasks={len(self.tasks)}>"


def _histogram(reasons: dict[str, int]) -> list[str]:
    return sorted(f"{v} {k}" for k, v in reasons.items())


def podgroup_phase(job: JobInfo, unschedulable: bool) -> str:
    """The phase session close gives ``job``'s PodGroup (upstream ``getPodGroupPhase``);
    ``unschedulable``: the session gave it an ``Unschedulable`` condition."""
    assert job.podgroup is not None
    if job.tasks_in(TaskStatus.Running) and unschedulable:
        return "Unknown"
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    completed = job.count(COMPLETED_STATUS)
    if scheduled >= job.podgroup.min_member:
        return "Completed" if scheduled == completed else "Running"
    if job.podgroup.phase != "Inqueue":
        return "Pending"
    return job.podgroup.phase
