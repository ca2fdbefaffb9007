"""task-topology plugin: place a job's tasks together or apart (upstream pkg/scheduler/plugins/task-topology).

Design. A PodGroup names affinities between its job's tasks in three annotations:
``volcano.sh/task-topology-affinity`` and ``volcano.sh/task-topology-anti-affinity`` (groups
separated by ``;``, task names in a group by ``,``; a group of one name is self-(anti-)affinity,
a longer one inter-(anti-)affinity among its members) and ``volcano.sh/task-topology-task-order``
(``,``-separated names, earlier first). Every non-empty name must be the role of a task of the
job and may appear once per group; otherwise the whole topology is ignored. Empty names are
kept and never match. A task's name is its pod's *annotation* ``volcano.sh/task-spec``.

At session open, each job with a pending task and a valid topology gets a :class:`JobManager`
that sorts its tasks with a topology (bound ones first, by node name; then the user's task
order, then the topology priority: self-anti-affinity 4 > inter-affinity 3 > self-affinity 2 >
inter-anti-affinity 1, then the pod name) and puts them one by one into **buckets**: a bound
task into the bucket of its node; a pending one into the existing bucket with the highest
affinity count (+1 per affine, −1 per anti-affine task name already in it; ties go to the
bucket with the smaller resource score, 1 mCPU = 1 MiB = 1 unit), or into a new bucket when
that count is negative or there is none.

* TaskOrder: tasks in a bucket before tasks outside one (across jobs too); within a job, the
  bigger bucket first, then the older one, then the user's order and the topology priority.
* NodeOrder: on a node that could hold the task (idle + releasing), the bucket mates already
  on it, minus the anti-affinity hits against the task names placed on it this session, plus
  the bucket's unplaced tasks, less one per unplaced task (other than this one) that has to be
  left out for the rest of the bucket to fit (taken in UID order; upstream walks a Go map);
  × ``task-topology.weight`` × 100 / the largest bucket.
* Allocate event: the task counts as placed on its node in its bucket and in the node's task
  names. As upstream, there is no deallocate hook: a rolled-back allocation stays counted.

Arguments (upstream's): ``task-topology.weight`` (1).

Invariants: buckets and orders are deterministic (tasks sorted, buckets by creation index);
only jobs with the annotations pay anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import (
    TASK_SPEC_KEY,
    TASK_TOPOLOGY_AFFINITY_KEY,
    TASK_TOPOLOGY_ANTI_AFFINITY_KEY,
    TASK_TOPOLOGY_TASK_ORDER_KEY,
)
from pyvolcano.api.node import NodeTable
from pyvolcano.api.resource import MIN_RESOURCE, Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.plugins._scoring import MAX_NODE_SCORE

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "WEIGHT", "Bucket", "JobManager", "TaskTopology", "TaskTopologyPlugin", "new",
           "read_topology"]

NAME: Final = "task-topology"
WEIGHT: Final = "task-topology.weight"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (honoured(WEIGHT),))

SELF_ANTI_AFFINITY: Final = 4
INTER_AFFINITY: Final = 3
SELF_AFFINITY: Final = 2
INTER_ANTI_AFFINITY: Final = 1


@dataclass(frozen=True, slots=True)
class TaskTopology:
    affinity: tuple[tuple[str, ...], ...] = ()
    anti_affinity: tuple[tuple[str, ...], ...] = ()
    task_order: tuple[str, ...] = ()


class TopologyError(ValueError):
    pass


def _check(job: JobInfo, groups: list[list[str]]) -> None:
    """Upstream ``affinityCheck``: every non-empty name a task role of the job, once per group."""
    roles = {t.role for t in job.tasks.values()}
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(f"task {name} do not exist in job <{job.uid}>")
            if name in seen:
                raise TopologyError(f"task {name} is duplicate in job <{job.uid}>")
            seen.add(name)


def read_topology(job: JobInfo) -> TaskTopology | None:
    """The job's topology from its PodGroup annotations; None without any of them.

    Raises :class:`TopologyError` when a name is not a task of the job or repeats in a group.
    """
    pg = job.podgroup
    if pg is None:
        return None
    ann = pg.annotations
    if not any(k in ann for k in (TASK_TOPOLOGY_AFFINITY_KEY, TASK_TOPOLOGY_ANTI_AFFINITY_KEY,
                                  TASK_TOPOLOGY_TASK_ORDER_KEY)):
        return None
    parts: list[tuple[tuple[str, ...], ...]] = []
    for key in (TASK_TOPOLOGY_AFFINITY_KEY, TASK_TOPOLOGY_ANTI_AFFINITY_KEY):
        text = ann.get(key)
        if text is None:
            parts.append(())
            continue
        groups = [g.split(",") for g in text.split(";")]
        _check(job, groups)
        parts.append(tuple(tuple(g) for g in groups))
    order: tuple[str, ...] = ()
    text = ann.get(TASK_TOPOLOGY_TASK_ORDER_KEY)
    if text is not None:
        names = text.split(",")
        _check(job, [names])
        order = tuple(names)
    return TaskTopology(parts[0], parts[1], order)


def task_name(task: TaskInfo) -> str:
    return task.pod.annotations.get(TASK_SPEC_KEY, "")


def _req_score(req: Resource) -> float:
    return req.milli_cpu + req.memory / 1024 / 1024 + sum(req.scalars.values())


@dataclass(slots=True)
class Bucket:
    """Tasks meant for one node (upstream ``Bucket``)."""

    index: int
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # the unplaced ones, by uid
    names: dict[str, int] = field(default_factory=dict)  # task name -> tasks of it in the bucket
    req_score: float = 0.0
    request: Resource = field(default_factory=Resource)
    bound: int = 0
    nodes: dict[str, int] = field(default_factory=dict)  # node -> bucket tasks placed there

    def add(self, name: str, task: TaskInfo) -> None:
        self.names[name] = self.names.get(name, 0) + 1
        if task.node_name:
            self.nodes[task.node_name] = self.nodes.get(task.node_name, 0) + 1
            self.bound += 1
            return
        self.tasks[task.uid] = task
        self.req_score += _req_score(task.resreq)
        self.request.add(task.resreq)

    def placed(self, task: TaskInfo) -> None:
        self.nodes[task.node_name] = self.nodes.get(task.node_name, 0) + 1
        self.bound += 1
        self.tasks.pop(task.uid, None)
        self.req_score -= _req_score(task.resreq)
        self.request.sub_without_assert(task.resreq)


class JobManager:
    """One job's topology and buckets this session (upstream ``JobManager``)."""

    def __init__(self, topo: TaskTopology):
        self.buckets: list[Bucket] = []
        self.bucket_of: dict[str, int] = {}  # pod uid -> bucket index, -1 outside any
        self.name_of: dict[str, str] = {}
        self.priority: dict[str, int] = {}
        self.order: dict[str, int] = {}
        self.inter_affinity: dict[str, set[str]] = {}
        self.self_affinity: set[str] = set()
        self.inter_anti: dict[str, set[str]] = {}
        self.self_anti: set[str] = set()
        self.max_size = 0
        self.node_names: dict[str, dict[str, int]] = {}  # node -> task name -> placed this session
        self._apply(topo)

    def _mark(self, name: str, priority: int) -> None:
        if priority > self.priority.get(name, 0):
            self.priority[name] = priority

    def _apply(self, topo: TaskTopology) -> None:
        for groups, pair, single, inter, alone in (
                (topo.affinity, self.inter_affinity, self.self_affinity, INTER_AFFINITY, SELF_AFFINITY),
                (topo.anti_affinity, self.inter_anti, self.self_anti, INTER_ANTI_AFFINITY, SELF_ANTI_AFFINITY)):
            for group in groups:
                if len(group) == 1:
                    single.add(group[0])
                    self._mark(group[0], alone)
                    continue
                for i, src in enumerate(group):
                    for dst in group[:i]:
                        pair.setdefault(src, set()).add(dst)
                        pair.setdefault(dst, set()).add(src)
                    self._mark(src, inter)
        n = len(topo.task_order)
        for i, name in enumerate(topo.task_order):
            self.order[name] = n - i

    def affinity_order(self, left: TaskInfo, right: TaskInfo) -> int:
        """Upstream ``taskAffinityOrder``: 1 when ``left`` ranks higher, -1 lower, 0 the same."""
        ln, rn = self.name_of.get(left.uid, ""), self.name_of.get(right.uid, "")
        if ln == rn:
            return 0
        lo, ro = self.order.get(ln, 0), self.order.get(rn, 0)
        if lo != ro:
            return 1 if lo > ro else -1
        lp, rp = self.priority.get(ln, 0), self.priority.get(rn, 0)
        if lp != rp:
            return 1 if lp > rp else -1
        return 0

    def set_affinity(self, name: str, names: Mapping[str, int], only_anti: bool) -> int:
        """Upstream ``checkTaskSetAffinity``: affinities minus anti-affinities of ``name`` with ``names``."""
        if not name:
            return 0
        total = 0
        for other, count in names.items():
            same = other == name
            if not only_anti and (name in self.self_affinity if same else other in self.inter_affinity.get(name, ())):
                total += count
            if name in self.self_anti if same else other in self.inter_anti.get(name, ()):
                total -= count
        return total

    def construct(self, tasks: list[TaskInfo]) -> None:
        """Upstream ``ConstructBucket`` over every task of the job."""
        with_topology = []
        for task in tasks:
            name = task_name(task)
            if not name or name not in self.priority:
                self.bucket_of[task.uid] = -1
                continue
            self.name_of[task.uid] = name
            with_topology.append(task)
        bound = sorted((t for t in with_topology if t.node_name), key=lambda t: t.node_name)
        unbound = [t for t in with_topology if not t.node_name]
        unbound.sort(key=lambda t: t.name)
        unbound.sort(key=lambda t: (-self.order.get(self.name_of[t.uid], 0),
                                    -self.priority.get(self.name_of[t.uid], 0)))
        by_node: dict[str, Bucket] = {}
        for task in [*bound, *unbound]:
            name = self.name_of[task.uid]
            chosen: Bucket | None = None
            best = -(2**31)
            if task.node_name:
                best = 0
                chosen = by_node.get(task.node_name)
            else:
                for bucket in self.buckets:
                    aff = self.set_affinity(name, bucket.names, only_anti=False)
                    if aff > best:
                        best, chosen = aff, bucket
                    elif aff == best and chosen is not None and bucket.req_score < chosen.req_score:
                        chosen = bucket
            if best < 0 or chosen is None:
                chosen = Bucket(len(self.buckets))
                self.buckets.append(chosen)
                if task.node_name:
                    by_node[task.node_name] = chosen
            self.bucket_of[task.uid] = chosen.index
            chosen.add(name, task)
            self.max_size = max(self.max_size, len(chosen.tasks) + chosen.bound)

    def bucket(self, task: TaskInfo) -> Bucket | None:
        i = self.bucket_of.get(task.uid, -1)
        return self.buckets[i] if i >= 0 else None

    def placed(self, task: TaskInfo) -> None:
        name = task_name(task)
        if name:
            names = self.node_names.setdefault(task.node_name, {})
            names[name] = names.get(name, 0) + 1
        bucket = self.bucket(task)
        if bucket is not None:
            bucket.placed(task)


def _le(left: np.ndarray | float, right: np.ndarray) -> np.ndarray:
    """Upstream ``lessEqualFunc`` over arrays: ``l < r`` or within the ε of resource comparisons."""
    return (left < right) | (np.abs(left - right) < MIN_RESOURCE)


class _Rows:
    """The room (idle + releasing) of the nodes ``idx`` per table dimension, and which scalar
    dimensions each node has (declared or not zero), as upstream's ``Resource`` would hold them."""

    def __init__(self, table: NodeTable, idx: np.ndarray):
        self.table = table
        self.room = [table.idle[d][idx] + table.releasing[d][idx] for d in range(len(table.dims))]
        self.present = [np.ones(len(idx), dtype=bool) if d < 2 else table.declared[d][idx] | (self.room[d] != 0)
                        for d in range(len(table.dims))]

    def never_fits(self, req: Resource) -> np.ndarray:
        """Upstream ``room.LessPartly(req, Zero)``: some dimension of the room below ``req``
        (strictly), or a scalar ``req`` names that the node does not have."""
        room, present = self.room, self.present
        out = (room[0] < req.milli_cpu) | (room[1] < req.memory)
        wanted = {self.table.dim_index.get(name): v for name, v in req.scalars.items()}
        if None in wanted:
            return np.ones(len(out), dtype=bool)  # a scalar no node has
        for d in range(2, len(room)):
            v = wanted.get(d)
            if v is None:
                out |= present[d] & (room[d] < 0.0)
            else:
                out |= ~present[d] | (room[d] < v)
        return out

    def fits(self, reqs: list[Resource]) -> np.ndarray:
        """Upstream ``req.LessEqual(room, Zero)`` for each of ``reqs`` (rows) on each node
        (columns). The scalar names compared are those of ``reqs[0]``, which holds every name
        the later ones have (they are what is left of it)."""
        room, present, table = self.room, self.present, self.table
        lhs = np.array([[r.milli_cpu, r.memory] for r in reqs])
        out = _le(lhs[:, 0:1], room[0][None, :]) & _le(lhs[:, 1:2], room[1][None, :])
        names = list(reqs[0].scalars)
        wanted: set[int] = set()
        for name in names:
            d = table.dim_index.get(name)
            values = np.array([[r.scalars.get(name, 0.0)] for r in reqs])
            if d is None:
                out &= values < MIN_RESOURCE  # a scalar no node has: compared with 0
                continue
            wanted.add(d)
            out &= _le(values, np.where(present[d], room[d], 0.0)[None, :])
        for d in range(2, len(room)):
            if d not in wanted:
                out &= (~present[d] | _le(0.0, room[d]))[None, :]
        return out


class TaskTopologyPlugin:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.weight = args.get_int(WEIGHT, 1)
        self.managers: dict[str, JobManager] = {}

    def _init_buckets(self, ssn: Session) -> None:
        self.managers = {}
        for uid, job in ssn.jobs.items():
            if not job.count(TaskStatus.Pending):
                continue
            try:
                topo = read_topology(job)
            except TopologyError:
                continue  # upstream logs the invalid key and ignores the job's topology
            if topo is None:
                continue
            manager = JobManager(topo)
            manager.construct(sorted(job.tasks.values(), key=lambda t: t.uid))
            self.managers[uid] = manager

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        lm, rm = self.managers.get(left.job), self.managers.get(right.job)
        if lm is None or rm is None:
            return 0
        lb, rb = lm.bucket(left), rm.bucket(right)
        if (lb is None) != (rb is None):
            return -1 if lb is not None else 1
        if left.job != right.job or lb is None or rb is None:
            return 0
        if len(lb.tasks) != len(rb.tasks):
            return -1 if len(lb.tasks) > len(rb.tasks) else 1
        if lb.index == rb.index:
            return -lm.affinity_order(left, right)
        return -1 if lb.index < rb.index else 1

    def bucket_scores(self, ssn: Session, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """Upstream ``NodeOrderFn`` (``calcBucketScore`` scaled) on the nodes ``idx``."""
        out = np.zeros(len(idx), dtype=np.float64)
        manager = self.managers.get(task.job)
        bucket = manager.bucket(task) if manager is not None else None
        if manager is None or bucket is None:
            return out  # upstream: 0, whatever the node
        rows = _Rows(ssn.node_table, idx)
        score = np.zeros(len(idx), dtype=np.float64)
        position = np.full(ssn.node_table.n, -1, dtype=np.int64)
        position[idx] = np.arange(len(idx))

        def at(node_name: str) -> int:
            node = ssn.nodes.get(node_name)
            return -1 if node is None else int(position[node.index])

        # 1. the bucket's tasks already placed on the node
        for name, count in bucket.nodes.items():
            k = at(name)
            if k >= 0:
                score[k] += count
        # 2. anti-affinity against the task names placed on the node this session
        me = task_name(task)
        for name, names in manager.node_names.items():
            k = at(name)
            if k >= 0:
                anti = manager.set_affinity(me, names, only_anti=True)
                if anti < 0:
                    score[k] += anti
        # 3. the bucket's unplaced tasks, less those that have to be left out for the rest to fit
        score += len(bucket.tasks)
        others = [t for uid, t in sorted(bucket.tasks.items()) if uid != task.uid]
        # What is left of the bucket's request after taking out its first k other tasks (upstream
        # takes them in Go map order; here in pod UID order), for k = 0 .. len(others).
        remains = [bucket.request.clone()]
        for other in others:
            remains.append(remains[-1].clone().sub_without_assert(other.resreq))
        fits = rows.fits(remains)
        # One point less per task taken out before the rest fits (all of them if it never does).
        score -= np.where(fits.any(axis=0), fits.argmax(axis=0), len(others))
        score[rows.never_fits(task.resreq)] = 0.0  # upstream: the task could never fit the node
        score *= self.weight
        if manager.max_size:
            score *= MAX_NODE_SCORE / manager.max_size
        return score

    def on_session_open(self, ssn: Session) -> None:
        self._init_buckets(ssn)
        if not self.managers:
            return
        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            return self.bucket_scores(ssn, task, idx)

        def on_allocate(ev: Event) -> None:
            manager = self.managers.get(ev.task.job)
            if manager is not None:
                manager.placed(ev.task)

        def on_allocate_many(tasks: list[TaskInfo]) -> None:
            for task in tasks:
                on_allocate(Event(task))

        def score_key(task: TaskInfo) -> tuple[str] | None:
            # A task of a job without buckets scores 0 on every node.
            return None if task.job in self.managers else ("none",)

        ssn.add_task_order_fn(NAME, self.task_order)
        ssn.add_node_order_fn(NAME, node_order, cache_key=score_key, projectable=lambda t: t.job not in self.managers)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, allocate_many=on_allocate_many))

    def on_session_close(self, ssn: Session) -> None:
        self.managers = {}


def new(arguments: Mapping[str, Any]) -> TaskTopologyPlugin:
    return TaskTopologyPlugin(arguments)
