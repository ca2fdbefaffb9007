"""Sub-jobs: a job's pods grouped by its PodGroup's ``subGroupPolicy`` (upstream pkg/scheduler/api/sub_job_info.go).

A job whose PodGroup has a ``networkTopology`` or a ``subGroupPolicy`` carries a
:class:`JobTopology`: its sub-jobs, the task → sub-job map, each policy's ``minSubGroups``,
and the HyperNode the job was placed in. Jobs without either carry none, so the hot paths of
ordinary jobs do not change.

Grouping, as upstream's ``JobInfo.getOrCreateSubJob``:

* a pod belongs to the first policy whose ``labelSelector`` (when set) matches its labels and
  whose ``matchLabelKeys`` are all present on it with non-empty values; its sub-job id is
  ``<job>/<policy>-<values joined by ->`` (a join longer than 128 characters is replaced by
  its FNV-32a hash in decimal, each digit mapped onto the apiserver's vowel-free alphabet as
  apimachinery's ``rand.SafeEncodeString`` does), its group id ``<job>/<policy>``, its size the policy's
  ``subGroupSize``, its ``match_index`` the first value read as an integer (0 otherwise);
* every other pod is in the default sub-job (id and group id: the job's uid), which carries the
  job's network topology and, when the PodGroup has no sub-group policy, the job's
  ``minMember`` as its size (1 otherwise);
* a policy without ``matchLabelKeys`` takes no pod (upstream returns an empty match and falls
  through to the default sub-job).

Each sub-job keeps a count of its tasks per status (``JobInfo.update_task_status`` keeps it in
step), so readiness is O(1). ``network_topology`` is the constraint as written; the session
derives the effective one (``hard_tier``: soft turned into hard, a tier name resolved) at open
(:mod:`pyvolcano.framework.topology`). ``allocated_hypernode`` and ``nominated_hypernode``
outlive a session, as upstream's cache keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from pyvolcano.api.matching.errors import SelectorError
from pyvolcano.api.matching.labels import compile_label_selector
from pyvolcano.api.network_topology import NetworkTopology, SubGroupPolicy
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from pyvolcano.api.objects import PodGroup

__all__ = ["JobTopology", "SubJobInfo", "long_sub_job_ident", "needs_topology"]

_READY: Final = ALLOCATED_STATUS | TaskStatus.Succeeded


# apimachinery's pkg/util/rand alphabet; SafeEncodeString maps each character c to _SAFE[ord(c) % 27].
_SAFE: Final = "bcdfghjklmnpqrstvwxz2456789"


def _fnv32a(text: str) -> int:
    h = 0x811C9DC5
    for b in text.encode():
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def long_sub_job_ident(ident: str) -> str:
    """Upstream ``getSubJobID`` for a join of match values longer than 128 characters."""
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(_fnv32a(ident)))


class SubJobInfo:
    """One sub-job (upstream ``SubJobInfo``)."""

    __slots__ = ("allocated_hypernode", "gid", "hard_tier", "job", "match_index", "min_available",
                 "network_topology", "nominated_hypernode", "policy", "status_counts", "tasks", "uid")

    def __init__(self, gid: str, uid: str, job: str, *, min_available: int = 1,
                 network_topology: NetworkTopology | None = None, match_index: int = 0, policy: str = ""):
        self.gid = gid
        self.uid = uid
        self.job = job
        self.policy = policy
        self.min_available = min_available
        self.network_topology = network_topology
        self.match_index = match_index
        self.tasks: dict[str, TaskInfo] = {}
        self.status_counts: dict[TaskStatus, int] = {}
        # Effective hard tier for this session (None: no hard constraint); set at session open.
        self.hard_tier: int | None = None
        self.allocated_hypernode = ""
        self.nominated_hypernode = ""

    # ------------------------------------------------------------------ tasks
    def add(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.status_counts[task.status] = self.status_counts.get(task.status, 0) + 1

    def remove(self, task: TaskInfo) -> None:
        if self.tasks.pop(task.uid, None) is not None:
            self.status_counts[task.status] -= 1

    def moved(self, old: TaskStatus, new: TaskStatus) -> None:
        self.status_counts[old] -= 1
        self.status_counts[new] = self.status_counts.get(new, 0) + 1

    def count(self, statuses: TaskStatus) -> int:
        return sum(n for s, n in self.status_counts.items() if s & statuses)

    # ------------------------------------------------------------------ gang
    def ready_task_num(self) -> int:
        return self.count(_READY)

    def pending_best_effort_num(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pending and t.best_effort)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (self.count(TaskStatus.Pipelined) + self.ready_task_num() + self.pending_best_effort_num()
                >= self.min_available)

    def allocated_task_num(self) -> int:
        return self.count(ALLOCATED_STATUS)

    def min_resources(self) -> Resource:
        """Upstream ``GetMinResources``: the init requests of every pending task."""
        total = Resource()
        for t in self.tasks.values():
            if t.status == TaskStatus.Pending:
                total.add(t.init_resreq)
        return total

    # ------------------------------------------------------------------ topology
    @property
    def with_network_topology(self) -> bool:
        return self.network_topology is not None

    @property
    def is_soft(self) -> bool:
        return self.network_topology is not None and self.network_topology.mode == "soft"

    def __repr__(self) -> str:
        return f"SubJobInfo({self.uid}, tasks={len(self.tasks)}, min={self.min_available})"


class JobTopology:
    """A job's sub-jobs and placement state (upstream ``JobInfo.SubJobs`` and friends)."""

    __slots__ = (
        "_selectors",
        "allocated_hypernode",
        "hard_tier",
        "job",
        "min_sub_jobs",
        "network_topology",
        "policies",
        "sub_jobs",
        "task_to_sub_job",
    )

    def __init__(self, job: str, podgroup: PodGroup):
        self.job = job
        self.network_topology = podgroup.network_topology
        self.policies: tuple[SubGroupPolicy, ...] = podgroup.sub_group_policy
        self.min_sub_jobs = {f"{job}/{p.name}": p.min_sub_groups for p in self.policies}
        self.sub_jobs: dict[str, SubJobInfo] = {}
        self.task_to_sub_job: dict[str, str] = {}
        self.hard_tier: int | None = None
        self.allocated_hypernode = ""
        self._selectors = []
        for p in self.policies:
            try:
                sel = compile_label_selector(p.label_selector) if p.label_selector is not None else None
                ok = True
            except SelectorError:
                sel, ok = None, False
            self._selectors.append((sel, ok))
        self._default(podgroup.min_member)

    def _default(self, min_member: int) -> SubJobInfo:
        sj = self.sub_jobs.get(self.job)
        if sj is None:
            size = 1 if self.policies else min_member
            sj = SubJobInfo(self.job, self.job, self.job, min_available=size,
                            network_topology=self.network_topology)
            self.sub_jobs[self.job] = sj
        return sj

    @property
    def default_sub_job(self) -> SubJobInfo:
        return self.sub_jobs[self.job]

    @property
    def has_policies(self) -> bool:
        return bool(self.policies)

    def sub_job_of(self, task: TaskInfo) -> SubJobInfo:
        return self.sub_jobs[self.task_to_sub_job[task.uid]]

    def _place(self, task: TaskInfo) -> SubJobInfo:
        labels = task.pod.labels
        for policy, (sel, ok) in zip(self.policies, self._selectors, strict=True):
            if policy.label_selector is not None and (not ok or sel is None or not sel.matches(labels)):
                continue
            if not policy.match_label_keys:
                continue
            values = [labels.get(k, "") for k in policy.match_label_keys]
            if not all(values):
                continue
            ident = "-".join(values)
            if len(ident) > 128:
                ident = long_sub_job_ident(ident)
            uid = f"{self.job}/{policy.name}-{ident}"
            sj = self.sub_jobs.get(uid)
            if sj is None:
                try:
                    index = int(values[0])
                except ValueError:
                    index = 0
                sj = SubJobInfo(f"{self.job}/{policy.name}", uid, self.job, min_available=policy.sub_group_size,
                                network_topology=policy.network_topology, match_index=index, policy=policy.name)
                self.sub_jobs[uid] = sj
            return sj
        return self.sub_jobs[self.job]

    def add_task(self, task: TaskInfo) -> None:
        sj = self._place(task)
        sj.add(task)
        self.task_to_sub_job[task.uid] = sj.uid

    def remove_task(self, task: TaskInfo) -> None:
        uid = self.task_to_sub_job.pop(task.uid, None)
        if uid is not None:
            self.sub_jobs[uid].remove(task)

    def moved(self, task: TaskInfo, old: TaskStatus, new: TaskStatus) -> None:
        uid = self.task_to_sub_job.get(task.uid)
        if uid is not None:
            self.sub_jobs[uid].moved(old, new)

    def rebuild(self, tasks: Iterable[TaskInfo], previous: JobTopology | None) -> None:
        for t in tasks:
            self.add_task(t)
        if previous is not None:
            self.allocated_hypernode = previous.allocated_hypernode
            for uid, sj in self.sub_jobs.items():
                old = previous.sub_jobs.get(uid)
                if old is not None:
                    sj.allocated_hypernode = old.allocated_hypernode
                    sj.nominated_hypernode = old.nominated_hypernode

    # ------------------------------------------------------------------ upstream predicates
    @property
    def is_hard(self) -> bool:
        return self.hard_tier is not None

    def contains_hard_topology(self) -> bool:
        return self.hard_tier is not None or any(sj.hard_tier is not None for sj in self.sub_jobs.values())

    def contains_network_topology(self) -> bool:
        return self.network_topology is not None or any(sj.with_network_topology for sj in self.sub_jobs.values())

    def _count_groups(self, cond: Callable[[SubJobInfo], bool] | None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for sj in self.sub_jobs.values():
            counts.setdefault(sj.gid, 0)
            if cond is None or cond(sj):
                counts[sj.gid] += 1
        return counts

    def check_valid(self) -> bool:
        """Upstream ``CheckSubJobValid``: every policy has at least ``minSubGroups`` sub-jobs."""
        counts = self._count_groups(None)
        return all(counts.get(gid, 0) >= m for gid, m in self.min_sub_jobs.items())

    def check_ready(self) -> bool:
        counts = self._count_groups(SubJobInfo.is_ready)
        return all(m == 0 or counts.get(gid, 0) >= m for gid, m in self.min_sub_jobs.items())

    def check_pipelined(self) -> bool:
        counts = self._count_groups(SubJobInfo.is_pipelined)
        return all(m == 0 or counts.get(gid, 0) >= m for gid, m in self.min_sub_jobs.items())


def needs_topology(podgroup: PodGroup | None) -> bool:
    """Whether a job of ``podgroup`` carries a :class:`JobTopology`."""
    return podgroup is not None and (podgroup.network_topology is not None or bool(podgroup.sub_group_policy))
