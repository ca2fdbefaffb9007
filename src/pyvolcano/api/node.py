"""NodeInfo and the columnar NodeTable (upstream pkg/scheduler/api/node_info.go).

Node accounting (``allocatable``, ``idle``, ``used``, ``releasing``, ``pipelined``) lives in a
:class:`NodeTable`: one contiguous float64 numpy array per resource dimension, indexed by the
node's position. Predicates and scores are computed over these arrays for all nodes at once;
a placement touches one row. :class:`NodeInfo` is a thin handle (name, labels, taints, the
tasks on the node) whose resource properties materialise :class:`Resource` values from the
table for the few slow paths (preemption, messages).

Accounting follows upstream ``AddTask`` / ``RemoveTask`` exactly: a task is accounted under
the status it had when it was added (upstream keeps a clone), so ``update_task`` is
remove-then-add. ``future_idle = idle + releasing - pipelined``.

``nonzero_cpu`` / ``nonzero_mem`` hold kube-scheduler's ``NonZeroRequested`` view for the
k8s-derived scorers (nodeorder): the sum of every task's non-zero cpu/memory request
(:meth:`TaskInfo.nonzero_request`), whatever its status, since upstream's k8s node snapshot
holds every pod on the node.

Invariant: every change to row ``i`` appends ``i`` to the change log (:meth:`NodeTable.bump`),
so per-task caches can find the stale rows without rescanning the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from pyvolcano.api.objects import Node
from pyvolcano.api.resource import CPU, MEMORY, MIN_RESOURCE, PODS, Resource
from pyvolcano.api.task import TaskInfo, TaskStatus

__all__ = ["NodeInfo", "NodeTable", "RequestVector"]

RequestVector = tuple[tuple[int, float], ...]
# NodeInfo.add_replicas updates fewer rows than this one at a time (cheaper than fancy indexing).
_FEW_REPLICAS = 6
_MAX_CHANGE_LOG = 1_000_000
_NO_ROWS = np.zeros(0, dtype=np.int64)


class NodeTable:
    """Structure-of-arrays resource accounting for all nodes of a cluster."""

    FIELDS = ("allocatable", "idle", "used", "releasing", "pipelined")
    # future_idle = idle + releasing - pipelined, kept as its own column for fast fit checks.
    _FUTURE_SIGN: ClassVar[dict[str, float]] = {"idle": 1.0, "releasing": 1.0, "pipelined": -1.0}

    def __init__(self, capacity: int = 0):
        self.dims: list[str] = []
        self.dim_index: dict[str, int] = {}
        self.n = 0
        self._cap = max(capacity, 4)
        self.allocatable: list[np.ndarray] = []
        self.idle: list[np.ndarray] = []
        self.used: list[np.ndarray] = []
        self.releasing: list[np.ndarray] = []
        self.pipelined: list[np.ndarray] = []
        self.future: list[np.ndarray] = []
        # Which scalar dimensions each node declares (needed for "relevant dimension" rules).
        self.declared: list[np.ndarray] = []
        self.task_count = np.zeros(self._cap, dtype=np.int64)
        # Tasks on any node whose pod declares podAffinity / podAntiAffinity: inter-pod checks
        # and scores can skip scanning every pod when there are none.
        self.pod_affinity_tasks = 0
        self.nonzero_cpu = np.zeros(self._cap, dtype=np.float64)
        self.nonzero_mem = np.zeros(self._cap, dtype=np.float64)
        # Append-only log of changed rows (bounded; see changes_since).
        self._changes: list[int] = []
        self._change_base = 0
        self._vec_cache: dict[int, RequestVector] = {}
        for d in (CPU, MEMORY):
            self.ensure_dim(d)

    # ------------------------------------------------------------------ layout
    def ensure_dim(self, name: str) -> int:
        idx = self.dim_index.get(name)
        if idx is not None:
            return idx
        idx = len(self.dims)
        self.dims.append(name)
        self.dim_index[name] = idx
        for f in (*self.FIELDS, "future"):
            getattr(self, f).append(np.zeros(self._cap, dtype=np.float64))
        self.declared.append(np.zeros(self._cap, dtype=bool))
        self._vec_cache.clear()
        return idx

    def _grow(self) -> None:
        new_cap = self._cap * 2
        for f in (*self.FIELDS, "future"):
            arrs = getattr(self, f)
            for i, a in enumerate(arrs):
                b = np.zeros(new_cap, dtype=np.float64)
                b[: self._cap] = a
                arrs[i] = b
        for i, a in enumerate(self.declared):
            b2 = np.zeros(new_cap, dtype=bool)
            b2[: self._cap] = a
            self.declared[i] = b2
        counts = np.zeros(new_cap, dtype=np.int64)
        counts[: self._cap] = self.task_count
        self.task_count = counts
        for name in ("nonzero_cpu", "nonzero_mem"):
            a = getattr(self, name)
            b4 = np.zeros(new_cap, dtype=np.float64)
            b4[: self._cap] = a
            setattr(self, name, b4)
        self._cap = new_cap

    def add_row(self, allocatable: Resource) -> int:
        if self.n == self._cap:
            self._grow()
        i = self.n
        self.n += 1
        for name, v in allocatable.items():
            d = self.ensure_dim(name)
            self.allocatable[d][i] = v
            self.idle[d][i] = v
            self.future[d][i] = v
            self.declared[d][i] = True
        self.bump(i)
        return i

    def set_allocatable(self, i: int, allocatable: Resource) -> None:
        for d in range(len(self.dims)):
            old = self.allocatable[d][i]
            self.allocatable[d][i] = 0.0
            self.idle[d][i] -= old
            self.future[d][i] -= old
            self.declared[d][i] = False
        for name, v in allocatable.items():
            d = self.ensure_dim(name)
            self.allocatable[d][i] = v
            self.idle[d][i] += v
            self.future[d][i] += v
            self.declared[d][i] = True
        self.bump(i)

    def bump(self, i: int) -> None:
        self._changes.append(i)
        if len(self._changes) > _MAX_CHANGE_LOG:
            self._change_base += len(self._changes)
            self._changes = []

    @property
    def change_position(self) -> int:
        """Position in the change log; pass it to :meth:`changes_since` later."""
        return self._change_base + len(self._changes)

    def rows_changed_since(self, position: int) -> list[int] | None:
        """The change log's entries since ``position`` (rows, repeats kept), or None if it no longer reaches back.

        For callers that expect a handful of entries and want no numpy work.
        """
        if position < self._change_base:
            return None
        return self._changes[position - self._change_base :]

    def changes_since(self, position: int) -> np.ndarray | None:
        """Rows changed since ``position`` (unique), or None if the log no longer reaches back."""
        if position < self._change_base:
            return None
        tail = self._changes[position - self._change_base :]
        if not tail:
            return _NO_ROWS
        if len(tail) == 1:
            return np.array(tail, dtype=np.int64)
        # Sorted and unique, as np.unique gives them; marking a mask over the rows is cheaper.
        marks = np.zeros(self.n, dtype=bool)
        marks[tail] = True
        return np.flatnonzero(marks).astype(np.int64, copy=False)

    # ------------------------------------------------------------------ vectors
    def task_vector(self, task: TaskInfo) -> RequestVector:
        """The task's request as dense pairs, cached on the task (requests never change)."""
        vec = task.req_vec
        if vec is None:
            vec = self.vector(task.resreq)
            task.req_vec = vec
        return vec  # type: ignore[return-value]

    def vector(self, res: Resource) -> RequestVector:
        """Dense (dim, value) pairs: cpu and memory always, then every scalar of ``res``."""
        out = [(0, res.milli_cpu), (1, res.memory)]
        for name, v in res.scalars.items():
            out.append((self.ensure_dim(name), v))
        return tuple(out)

    def add_vec(self, field: str, i: int, vec: RequestVector, sign: float = 1.0) -> None:
        arrs = getattr(self, field)
        fsign = self._FUTURE_SIGN.get(field)
        future = self.future
        for d, v in vec:
            arrs[d][i] += sign * v
            if fsign is not None:
                future[d][i] += fsign * sign * v

    def fits_rows(self, vec: RequestVector, idx: np.ndarray, *, future: bool = True) -> np.ndarray:
        """:meth:`fits_row` over ``idx`` (the same comparison per row, vectorised)."""
        arrs = self.future if future else self.idle
        ok = np.ones(len(idx), dtype=bool)
        for d, v in vec:
            ok &= v < arrs[d][idx] + MIN_RESOURCE
        return ok

    def trial_add(
        self, idx: np.ndarray, vec: RequestVector, nonzero: tuple[float, float], allocated: np.ndarray
    ) -> Callable[[], None]:
        """Account one more task of request ``vec`` on each of the rows ``idx`` (unique), as
        :meth:`NodeInfo.add_task` would: allocated where ``allocated``, pipelined elsewhere.

        For evaluating predicates and scores on the state a placement would leave. Writes no
        change-log entry and touches no task dict; returns the function that puts the rows'
        values back exactly (saved copies, not arithmetic), to be called before anything
        else reads the table.
        """
        dims = [d for d, _v in vec]
        cols = [self.idle, self.used, self.pipelined, self.future]
        saved = [[col[d][idx] for d in dims] for col in cols]
        saved_nz = (self.nonzero_cpu[idx], self.nonzero_mem[idx], self.task_count[idx])
        rows_a = idx[allocated]
        rows_p = idx[~allocated]
        for d, v in vec:
            self.idle[d][rows_a] += -1.0 * v
            self.future[d][rows_a] += -1.0 * v
            self.used[d][rows_a] += v
            self.pipelined[d][rows_p] += 1.0 * v
            self.future[d][rows_p] += -1.0 * 1.0 * v
        self.nonzero_cpu[idx] += nonzero[0]
        self.nonzero_mem[idx] += nonzero[1]
        self.task_count[idx] += 1

        def undo() -> None:
            for col, values in zip(cols, saved, strict=True):
                for d, v in zip(dims, values, strict=True):
                    col[d][idx] = v
            self.nonzero_cpu[idx] = saved_nz[0]
            self.nonzero_mem[idx] = saved_nz[1]
            self.task_count[idx] = saved_nz[2]

        return undo

    def resource(self, field: str, i: int) -> Resource:
        arrs = getattr(self, field)
        r = Resource(arrs[0][i], arrs[1][i])
        for d in range(2, len(self.dims)):
            if self.declared[d][i] or arrs[d][i] != 0.0:
                r.scalars[self.dims[d]] = float(arrs[d][i])
        return r

    def future_idle(self, d: int, idx: np.ndarray | slice | None = None) -> np.ndarray:
        s = slice(0, self.n) if idx is None else idx
        return self.future[d][s]

    def fit_mask(self, vec: RequestVector, idx: np.ndarray, *, future: bool = True) -> np.ndarray:
        """Mask over ``idx`` of rows where ``vec`` fits (ε-tolerant, missing scalars are 0)."""
        arrs = self.future if future else self.idle
        ok: np.ndarray | None = None
        for d, v in vec:
            m = arrs[d][idx] > v - MIN_RESOURCE
            if ok is None:
                ok = m
            else:
                ok &= m
        assert ok is not None
        return ok

    def fits_row(self, vec: RequestVector, i: int, *, future: bool = True) -> bool:
        arrs = self.future if future else self.idle
        return all(v < float(arrs[d][i]) + MIN_RESOURCE for d, v in vec)

    def fits(
        self, vec: RequestVector, idx: np.ndarray | None = None, *, future: bool = True
    ) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
        """Vectorised ``LessEqualWithResourcesName(req, FutureIdle|Idle, Zero)``.

        Returns the fit mask over ``idx`` (all rows if None) and, per failing dimension in
        upstream's order (cpu, memory, scalars), the mask of rows failing it.
        """
        s: np.ndarray | slice = slice(0, self.n) if idx is None else idx
        size = self.n if idx is None else len(idx)
        ok = np.ones(size, dtype=bool)
        failures: list[tuple[str, np.ndarray]] = []
        for d, v in vec:
            avail = self.future_idle(d, s) if future else self.idle[d][s]
            dim_ok = v < avail + MIN_RESOURCE
            if not dim_ok.all():
                failures.append((self.dims[d], ~dim_ok))
                ok &= dim_ok
        return ok, failures


class NodeInfo:
    """Handle on one node: identity, scheduling-relevant metadata and the tasks on it."""

    __slots__ = ("index", "labels", "name", "node", "table", "taints", "task_status", "tasks", "unschedulable")

    def __init__(self, node: Node, table: NodeTable, allocatable: Resource):
        self.node = node
        self.name = node.name
        self.labels = node.labels
        self.taints = node.taints
        self.unschedulable = node.unschedulable
        self.table = table
        self.index = table.add_row(allocatable)
        self.tasks: dict[str, TaskInfo] = {}
        # Status each task was accounted under (upstream keeps a clone of the task).
        self.task_status: dict[str, TaskStatus] = {}

    # ------------------------------------------------------------------ accounting
    @staticmethod
    def add_replicas(nodes: list[NodeInfo], tasks: list[TaskInfo]) -> None:
        """:meth:`add_task` of ``tasks[i]`` on ``nodes[i]`` for each ``i`` in order: allocated
        replicas of one template (one request) on nodes of one table; on distinct nodes each
        column is updated for all rows at once (the same float operation per row)."""
        if len(tasks) < _FEW_REPLICAS or len({node.index for node in nodes}) != len(nodes):
            for node, task in zip(nodes, tasks, strict=True):
                node.add_task(task)
            return
        for node, task in zip(nodes, tasks, strict=True):
            if task.uid in node.tasks:
                raise ValueError(f"task {task.key} already on node {node.name}")
        first = tasks[0]
        t = nodes[0].table
        rows = np.fromiter((node.index for node in nodes), dtype=np.int64, count=len(nodes))
        vec = t.task_vector(first)
        idle, used, future = t.idle, t.used, t.future
        for d, v in vec:
            idle[d][rows] += -1.0 * v
            future[d][rows] += -1.0 * v
            used[d][rows] += v
        nz_cpu, nz_mem = first.nonzero_request()
        t.nonzero_cpu[rows] += nz_cpu
        t.nonzero_mem[rows] += nz_mem
        t.task_count[rows] += 1
        if first.pod.has_pod_affinity:
            t.pod_affinity_tasks += len(tasks)
        for node, task in zip(nodes, tasks, strict=True):
            t.bump(node.index)
            task.node_name = node.name
            node.tasks[task.uid] = task
            node.task_status[task.uid] = task.status

    def add_task(self, task: TaskInfo) -> None:
        if task.uid in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        t = self.table
        i = self.index
        vec = t.task_vector(task)
        status = task.status
        if status == TaskStatus.Pipelined:
            t.add_vec("pipelined", i, vec)
        elif status == TaskStatus.Releasing:
            t.add_vec("idle", i, vec, -1.0)
            t.add_vec("used", i, vec)
            t.add_vec("releasing", i, vec)
        else:
            # add_vec("idle", -1) and add_vec("used") inlined: the same operations per column.
            idle, used, future = t.idle, t.used, t.future
            for d, v in vec:
                idle[d][i] += -1.0 * v
                future[d][i] += -1.0 * v
                used[d][i] += v
        nz_cpu, nz_mem = task.nonzero_request()
        t.nonzero_cpu[i] += nz_cpu
        t.nonzero_mem[i] += nz_mem
        t.task_count[i] += 1
        if task.pod.has_pod_affinity:
            t.pod_affinity_tasks += 1
        t.bump(i)
        task.node_name = self.name
        self.tasks[task.uid] = task
        self.task_status[task.uid] = status

    def remove_task(self, task: TaskInfo) -> None:
        status = self.task_status.pop(task.uid, None)
        if status is None:
            return
        del self.tasks[task.uid]
        t = self.table
        i = self.index
        vec = t.task_vector(task)
        if status == TaskStatus.Pipelined:
            t.add_vec("pipelined", i, vec, -1.0)
        else:
            t.add_vec("idle", i, vec)
            t.add_vec("used", i, vec, -1.0)
            if status == TaskStatus.Releasing:
                t.add_vec("releasing", i, vec, -1.0)
        nz_cpu, nz_mem = task.nonzero_request()
        t.nonzero_cpu[i] -= nz_cpu
        t.nonzero_mem[i] -= nz_mem
        t.task_count[i] -= 1
        if task.pod.has_pod_affinity:
            t.pod_affinity_tasks -= 1
        t.bump(i)

    def update_task(self, task: TaskInfo) -> None:
        self.remove_task(task)
        self.add_task(task)

    # ------------------------------------------------------------------ views
    @property
    def allocatable(self) -> Resource:
        return self.table.resource("allocatable", self.index)

    @property
    def idle(self) -> Resource:
        return self.table.resource("idle", self.index)

    @property
    def used(self) -> Resource:
        return self.table.resource("used", self.index)

    @property
    def releasing(self) -> Resource:
        return self.table.resource("releasing", self.index)

    @property
    def pipelined(self) -> Resource:
        return self.table.resource("pipelined", self.index)

    def future_idle(self) -> Resource:
        return self.idle.add(self.releasing).sub(self.pipelined)

    @property
    def pods_allocatable(self) -> float:
        d = self.table.dim_index.get(PODS)
        return float(self.table.allocatable[d][self.index]) if d is not None else 0.0

    def __repr__(self) -> str:
        return f"Node<{self.name}>"
