"""Statement: an ordered, revocable list of session operations (framework/statement.go).

Every operation changes the session immediately (task status, node accounting) and fires
the plugins' event handlers, so plugin bookkeeping (drf shares, queue allocations) follows.
``commit()`` hands the operations to the session's effects (bind requests, evictions);
``discard()`` undoes them in reverse order and leaves each task's last-transaction context
for the close-time reason messages. A statement that is neither committed nor discarded
(allocate keeps pipelined gangs) is discarded by the session at close, so nothing tentative
ever leaks into the cluster state.

Batch form: :meth:`Statement.allocate_many` allocates replicas of one template of one job
(api/task_template.py) with one call: the job's aggregates move once
(``JobInfo.update_tasks_status``) and every plugin's allocate event handler is called once
with all of them (``EventHandler.allocate_many``); ``commit()`` likewise moves a run of
such allocations to Binding at once. Both leave exactly the state the one-task-at-a-time
form leaves, which they fall back to when an event handler has no batch form or
``SchedulerOptions.batch_statement`` is off.

Invariant: after ``discard()`` the session state equals the state before the first operation.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyvolcano.api.node import NodeInfo
from pyvolcano.api.task import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from types import TracebackType

    from pyvolcano.framework.session import Session

__all__ = ["OpKind", "Operation", "SavedOperation", "Statement"]


class OpKind(enum.Enum):
    EVICT = "Evict"
    PIPELINE = "Pipeline"
    ALLOCATE = "Allocate"


@dataclass(slots=True)
class Operation:
    kind: OpKind
    task: TaskInfo
    reason: str = ""


@dataclass(frozen=True, slots=True)
class SavedOperation:
    """An operation as :meth:`Statement.save_operations` keeps it: with the node it used."""

    kind: OpKind
    task: TaskInfo
    node: str
    reason: str = ""
    eviction_occurred: bool = False


class Statement:
    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.operations: list[Operation] = []
        ssn._open_statements.append(self)

    def __enter__(self) -> Statement:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.discard()

    # ------------------------------------------------------------------ operations
    def evict(self, task: TaskInfo, reason: str) -> None:
        self.ssn.move_task(task, TaskStatus.Releasing)
        self.operations.append(Operation(OpKind.EVICT, task, reason))

    def pipeline(self, task: TaskInfo, node_name: str, eviction_occurred: bool) -> bool:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        ok = job is not None
        if job is not None:
            job.update_task_status(task, TaskStatus.Pipelined)
        task.node_name = node_name
        task.eviction_occurred = eviction_occurred
        node = ssn.nodes.get(node_name)
        if node is not None:
            node.add_task(task)
        else:
            ok = False
        if not ssn.fire_allocate(task):
            ok = False
        if not ok:
            self._unpipeline(task)
            return False
        self.operations.append(Operation(OpKind.PIPELINE, task))
        return True

    def allocate(self, task: TaskInfo, node: NodeInfo) -> bool:
        ssn = self.ssn
        job = ssn.jobs.get(task.job)
        ok = job is not None
        if job is not None:
            job.update_task_status(task, TaskStatus.Allocated)
        task.node_name = node.name
        node.add_task(task)
        if not ssn.fire_allocate(task):
            ok = False
        if not ok:
            self._unallocate(task)
            return False
        self.operations.append(Operation(OpKind.ALLOCATE, task))
        return True

    def allocate_many(self, tasks: list[TaskInfo], nodes: list[NodeInfo]) -> None:
        """:meth:`allocate` of ``tasks[i]`` on ``nodes[i]`` for each ``i`` in order; the tasks
        are pending replicas of one template of one job (see the module doc)."""
        ssn = self.ssn
        job = ssn.jobs.get(tasks[0].job)
        if job is None or len(tasks) == 1 or not ssn.cache.options.batch_statement or not ssn.allocate_batchable():
            for task, node in zip(tasks, nodes, strict=True):
                self.allocate(task, node)
            return
        job.update_tasks_status(tasks, TaskStatus.Allocated)
        NodeInfo.add_replicas(nodes, tasks)
        self.operations.extend([Operation(OpKind.ALLOCATE, task) for task in tasks])
        ssn.fire_allocate_many(tasks)

    # ------------------------------------------------------------------ reversal
    def _unevict(self, task: TaskInfo) -> None:
        self.ssn.move_task(task, TaskStatus.Running)

    def _unpipeline(self, task: TaskInfo) -> None:
        self.ssn.move_task(task, TaskStatus.Pending)
        task.node_name = ""
        task.eviction_occurred = False

    def _unallocate(self, task: TaskInfo) -> None:
        self.ssn.move_task(task, TaskStatus.Pending)
        task.node_name = ""

    def discard(self) -> None:
        for op in reversed(self.operations):
            op.task.generate_last_tx_context()
            if op.kind is OpKind.EVICT:
                self._unevict(op.task)
            elif op.kind is OpKind.PIPELINE:
                self._unpipeline(op.task)
            else:
                self._unallocate(op.task)
        self.operations = []
        self._close()

    def commit(self) -> None:
        ssn = self.ssn
        if ssn.observer is not None:
            evicted = [op.reason for op in self.operations if op.kind is OpKind.EVICT]
            if evicted:
                ssn.observer.evictions_committed(evicted[0], len(evicted))
        bulk = ssn.cache.options.batch_statement
        ops = self.operations
        i, n = 0, len(ops)
        while i < n:
            op = ops[i]
            if op.kind is OpKind.ALLOCATE and bulk:
                run = _allocation_run(ops, i)
                if len(run) > 1:
                    for task in run:
                        task.clear_last_tx_context()
                    ssn.dispatch_many(run)
                    i += len(run)
                    continue
            op.task.clear_last_tx_context()
            if op.kind is OpKind.EVICT:
                ssn.effects_evict(op.task, op.reason)
            elif op.kind is OpKind.ALLOCATE:
                ssn.dispatch(op.task)
            # Pipelining is session-only: nothing leaves the session.
            i += 1
        self.operations = []
        self._close()

    def merge(self, *others: Statement) -> None:
        for o in others:
            self.operations.extend(o.operations)
            o.operations = []
            o._close()

    def save_operations(self) -> list[SavedOperation]:
        """Upstream ``SaveOperations``: the operations with their nodes, to replay after a discard."""
        return [SavedOperation(op.kind, op.task, op.task.node_name, op.reason, op.task.eviction_occurred)
                for op in self.operations]

    def recover_operations(self, saved: list[SavedOperation]) -> bool:
        """Upstream ``RecoverOperations``: redo ``saved`` in order on this statement."""
        ok = True
        for op in saved:
            if op.kind is OpKind.EVICT:
                self.evict(op.task, op.reason)
            elif op.kind is OpKind.PIPELINE:
                ok = self.pipeline(op.task, op.node, op.eviction_occurred) and ok
            else:
                node = self.ssn.nodes.get(op.node)
                ok = node is not None and self.allocate(op.task, node) and ok
        return ok

    def has_evictions(self) -> bool:
        return any(op.kind is OpKind.EVICT for op in self.operations)

    def _close(self) -> None:
        with contextlib.suppress(ValueError):
            self.ssn._open_statements.remove(self)


def _allocation_run(ops: list[Operation], i: int) -> list[TaskInfo]:
    """The tasks of the allocations from ``ops[i]`` on that share its template (one job)."""
    first = ops[i].task
    tpl = first.template
    run = [first]
    if tpl is None:
        return run
    for op in ops[i + 1:]:
        if op.kind is not OpKind.ALLOCATE or op.task.template is not tpl:
            break
        run.append(op.task)
    return run
