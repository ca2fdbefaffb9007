"""GPU state of one scheduling session, shared by ``deviceshare`` and the placement policies.

Upstream keeps per-GPU device state in ``NodeInfo.Others`` (``api/node_info.go``
``addResource``/``subResource``, called from ``AddTask``/``RemoveTask`` for every status but
Releasing and Pipelined) and assigns GPUs in the predicates plugin's allocate event handler
(``plugins/predicates/predicates.go``: ``devices.Allocate`` / ``devices.Release``), which
also writes ``volcano.sh/gpu-index`` and ``volcano.sh/predicate-time`` on the pod.

Here one :class:`SessionGpus` per session holds a :class:`~pyvolcano.gpu.devices.GpuLedger`
rebuilt at session open from the tasks on the nodes: pods that carry ``volcano.sh/gpu-index``
are recorded on those GPUs first; GPU pods without it (bound by someone else) then take the
default choice, in UID order. Its event handler gives an allocated or pipelined task GPUs —
the GPUs already named on the pod if they still fit (an eviction undone), else the choice of
the installed placement policy (the one with the highest weight; the first configured on a
tie), else the default — and records the bind annotations; deallocation frees them.

The first GPU-aware plugin opened in a session creates the state; the others find it among
the session's plugins (:meth:`SessionGpus.of`), so no shared framework state is needed.

Invariants: the ledger changes only in this module's event handlers, always right after the
node's task list changed (so the node table's row version changed too, and version-keyed
caches of GPU verdicts and scores stay valid); the rebuild is deterministic.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.node import NodeInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.framework.interfaces import Event, EventHandler, GpuSessionHolder
from pyvolcano.gpu.devices import (
    GPU_INDEX_ANNOTATION,
    NO_GPU,
    PREDICATE_TIME_ANNOTATION,
    DemandKind,
    GpuDemand,
    GpuLedger,
    format_gpu_index,
    node_gpus,
    parse_gpu_index,
    pod_demand,
)
from pyvolcano.gpu.frag import DEFAULT_POPULARITY_THRESHOLD, PodSpec, TypicalPods, node_terms, typical_pods
from pyvolcano.gpu.policies import NodeView, Request

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures

__all__ = ["FragmentationReport", "GpuSelector", "SessionGpus", "assign_node_tasks", "build_ledger",
           "cluster_fragmentation"]

GpuSelector = Callable[[TaskInfo, GpuDemand, int], "tuple[int, ...] | None"]

REASON_MODEL = "node(s) didn't match the pod's GPU model"
REASON_WHOLE = "node(s) didn't have enough free whole GPUs"
REASON_SHARE = "node(s) didn't have a GPU with enough free share"
# Upstream (gpushare/device_info.go FilterNode) appends " on node <name>"; the node is left
# out here so that failures group into one reason per cause.
REASON_MEMORY = "GpuShare no enough gpu memory"
REASON_NUMBER = "GpuNumber no enough gpu number"

_UNTRACKED = TaskStatus.Releasing | TaskStatus.Pipelined | TaskStatus.Succeeded | TaskStatus.Failed


def build_ledger(nodes: Sequence[NodeInfo], demand_of: Callable[[TaskInfo], GpuDemand]) -> GpuLedger:
    """A ledger for ``nodes`` (row = position) with the GPUs their tasks hold.

    ``demand_of`` returns "no GPU" for demands that are not to be tracked.
    """
    ledger = GpuLedger([node_gpus(n.node) for n in nodes])
    for i, node in enumerate(nodes):
        assign_node_tasks(ledger, i, node, demand_of)
    return ledger


def assign_node_tasks(
    ledger: GpuLedger, i: int, node: NodeInfo, demand_of: Callable[[TaskInfo], GpuDemand]
) -> list[str]:
    """Record in row ``i`` (empty) the GPUs ``node``'s tasks hold; returns their uids.

    Tasks whose GPU-index annotation names valid GPUs get those; the others then get the
    default choice on what is left. A row depends only on its own node, so rebuilding one
    row this way gives what a whole new ledger would.
    """
    assigned: list[str] = []
    unindexed: list[tuple[TaskInfo, GpuDemand]] = []
    for uid in sorted(node.tasks):
        if node.task_status.get(uid, TaskStatus.Unknown) & _UNTRACKED:
            continue
        task = node.tasks[uid]
        demand = demand_of(task)
        if not demand.is_gpu:
            continue
        ids = parse_gpu_index(task.pod.annotations.get(GPU_INDEX_ANNOTATION, "") or "x")
        valid = ids is not None and len(ids) == demand.count and all(
            0 <= g < ledger.width and ledger.present[i, g] for g in ids)
        if valid and ids is not None:
            ledger.assign(uid, i, ids, demand)
            assigned.append(uid)
        else:
            unindexed.append((task, demand))
    for task, demand in unindexed:
        gpus = ledger.default_choice(demand, i)
        if gpus is not None:
            ledger.assign(task.uid, i, gpus, demand)
            assigned.append(task.uid)
    return assigned


def _spec(task: TaskInfo, demand: GpuDemand) -> PodSpec | None:
    if demand.kind in (DemandKind.MEMORY, DemandKind.INVALID):
        return None
    cpu = int(task.nonzero_request()[0])
    if not demand.is_gpu:
        return PodSpec(cpu, 0, 0)
    return PodSpec(cpu, demand.milli, demand.count, demand.models)


def workload_typical_pods(
    tasks: Iterable[TaskInfo],
    demand_of: Callable[[TaskInfo], GpuDemand],
    *,
    threshold: float = DEFAULT_POPULARITY_THRESHOLD,
    include_cpu: bool = True,
) -> TypicalPods | None:
    """FGD's target workload from ``tasks`` (memory-share pods are left out); None if empty."""
    specs = [s for t in tasks if (s := _spec(t, demand_of(t))) is not None]
    specs = [s for s in specs if include_cpu or s.count > 0]
    if not specs:
        return None
    return typical_pods(specs, threshold=threshold, include_cpu=include_cpu)


@dataclass(frozen=True, slots=True)
class FragmentationReport:
    """Cluster GPU fragmentation (milli-GPU) under a target workload."""

    fragmentation_milli: float
    idle_milli: int
    capacity_milli: int

    @property
    def fragmentation(self) -> float:
        """Fragmentation as a share of GPU capacity (the paper's Fig. 7a)."""
        return self.fragmentation_milli / self.capacity_milli if self.capacity_milli else 0.0

    @property
    def ratio(self) -> float:
        """The share of idle GPU milli that is fragmented (the paper's Fig. 7b)."""
        return self.fragmentation_milli / self.idle_milli if self.idle_milli else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"fragmentation_milli": round(self.fragmentation_milli, 3), "idle_milli": self.idle_milli,
                "capacity_milli": self.capacity_milli, "fragmentation": round(self.fragmentation, 6),
                "ratio": round(self.ratio, 6)}


def cluster_fragmentation(
    nodes: Sequence[NodeInfo], workload: Iterable[TaskInfo], *, typical: TypicalPods | None = None
) -> FragmentationReport:
    """The fragmentation of ``nodes`` now, with typical pods from ``workload`` unless given.

    For simulators: call it after any session with the cache's ``node_list`` and its tasks.
    """
    memo: dict[str, GpuDemand] = {}

    def demand_of(task: TaskInfo) -> GpuDemand:
        d = memo.get(task.uid)
        if d is None:
            d = memo[task.uid] = pod_demand(task.pod)
        return d if d.kind is not DemandKind.INVALID else NO_GPU

    ledger = build_ledger(nodes, demand_of)
    typ = typical if typical is not None else workload_typical_pods(workload, demand_of)
    idle = int(ledger.total_free.sum())
    if typ is None or ledger.n == 0:
        return FragmentationReport(0.0, idle, ledger.capacity_milli)
    table = nodes[0].table
    cpu = table.idle[table.dim_index["cpu"]][[n.index for n in nodes]]
    terms = node_terms(typ, typ.accessible(ledger.models), ledger.free, cpu, ledger.model)
    return FragmentationReport(int(terms.frag.sum()) / typ.total, idle, ledger.capacity_milli)


class SessionGpus:
    """The session's GPU ledger, GPU choice at allocation, and the shared GPU predicate.

    Whole-GPU and milli-share demands are always handled. Upstream's gpushare demands are
    handled as upstream gates them: memory demands are checked and allocated only when
    sharing is enabled, card-number demands only when numbers are enabled, and pods of
    either kind are recorded on their cards when either is (``enable``). The ledger is built
    on first use, after every plugin has opened and enabled what it needs.
    """

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.sharing_enable = False
        self.number_enable = False
        self._demands: dict[str, GpuDemand] = {}
        self._ledger: GpuLedger | None = None
        self._selector: tuple[float, GpuSelector, object] | None = None
        self._tie_bonus: np.ndarray | None = None
        self._typical: TypicalPods | None = None
        self._typical_built = False
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    @classmethod
    def of(cls, ssn: Session, owner: GpuSessionHolder) -> SessionGpus:
        """The session's state, created (and kept on ``owner``) by the first plugin that asks."""
        for _opt, plugin in ssn.plugins:
            if isinstance(plugin, GpuSessionHolder):
                state = plugin.session_gpus
                if state is not None and state.ssn is ssn:
                    return state
        state = cls(ssn)
        owner.session_gpus = state
        return state

    def enable(self, *, sharing: bool, number: bool) -> None:
        """Handle upstream's memory-share (``sharing``) and card-number demands too."""
        if self._ledger is not None and (sharing > self.sharing_enable or number > self.number_enable):
            raise RuntimeError("GPU demand kinds must be enabled before the ledger is used")
        self.sharing_enable |= sharing
        self.number_enable |= number

    @property
    def ledger(self) -> GpuLedger:
        if self._ledger is None:
            gpushare = self.sharing_enable or self.number_enable

            def tracked(task: TaskInfo) -> GpuDemand:
                d = self.demand(task)
                if d.kind in (DemandKind.MEMORY, DemandKind.NUMBER) and not gpushare:
                    return NO_GPU
                return d if d.is_gpu else NO_GPU

            self._ledger = build_ledger(self.ssn.node_list, tracked)
        return self._ledger

    # ------------------------------------------------------------------ demands and views
    def demand(self, task: TaskInfo) -> GpuDemand:
        """The pod's GPU demand as written (see :meth:`active` for whether it is handled)."""
        d = self._demands.get(task.uid)
        if d is None:
            d = self._demands[task.uid] = pod_demand(task.pod)
        return d

    def active(self, d: GpuDemand) -> bool:
        """Whether GPUs are checked and allocated for ``d`` (upstream's HasDeviceRequest)."""
        if d.kind is DemandKind.MEMORY:
            return self.sharing_enable
        if d.kind is DemandKind.NUMBER:
            return self.number_enable
        return d.is_gpu

    def typical(self, threshold: float, include_cpu: bool) -> TypicalPods | None:
        """Typical pods of every task the session knows (jobs and nodes), built once."""
        if not self._typical_built:
            tasks: dict[str, TaskInfo] = {}
            for job in self.ssn.jobs.values():
                tasks.update(job.tasks)
            for node in self.ssn.node_list:
                tasks.update(node.tasks)
            ordered = [tasks[uid] for uid in sorted(tasks)]

            def demand_of(task: TaskInfo) -> GpuDemand:
                d = self.demand(task)
                return d if self.active(d) or not d.is_gpu else NO_GPU

            self._typical = workload_typical_pods(ordered, demand_of, threshold=threshold,
                                                  include_cpu=include_cpu)
            self._typical_built = True
        return self._typical

    def request(self, task: TaskInfo, idx: np.ndarray) -> Request:
        """What the scorers see of ``task`` on the nodes ``idx`` (CPU only if GPUs are not handled)."""
        d = self.demand(task)
        cpu = float(task.nonzero_request()[0])
        if not self.active(d):
            return Request(cpu)
        milli: int | np.ndarray = self.ledger.share_milli(d, idx) if d.kind is DemandKind.MEMORY else d.milli
        return Request(cpu, d.count, milli, d.shared, d.tag)

    def view(self, idx: np.ndarray) -> NodeView:
        table = self.ssn.node_table
        led = self.ledger
        return NodeView(
            cpu_left=np.asarray(table.idle[table.dim_index["cpu"]][idx], dtype=np.float64),
            free=led.free[idx],
            total_free=led.total_free[idx],
            n_gpus=led.n_gpus[idx],
            model=led.model[idx],
            tags=led.tags[idx],
        )

    # ------------------------------------------------------------------ predicate
    def predicate(self) -> Callable[[TaskInfo, np.ndarray], NodeFailures]:
        """A vectorised GPU predicate (demands that are not :meth:`active` pass)."""

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            d = self.demand(task)
            if d.kind is DemandKind.INVALID:
                return [(Status(Code.UnschedulableAndUnresolvable, d.error), np.ones(len(idx), dtype=bool))]
            # Upstream (gpushare HasDeviceRequest): a demand whose device type is not enabled
            # is not checked at all.
            if not self.active(d):
                return []
            ledger = self.ledger
            failures: NodeFailures = []
            wrong_model = np.zeros(len(idx), dtype=bool)
            if d.models:
                wrong_model = ~ledger.model_mask(d.models)[ledger.model[idx]]
                if wrong_model.any():
                    failures.append((Status(Code.UnschedulableAndUnresolvable, REASON_MODEL), wrong_model))
            bare = GpuDemand(d.kind, d.count, d.milli, d.memory)
            short = ~ledger.fit_mask(bare, idx) & ~wrong_model
            if short.any():
                reason = {DemandKind.MEMORY: REASON_MEMORY, DemandKind.NUMBER: REASON_NUMBER,
                          DemandKind.WHOLE: REASON_WHOLE}.get(d.kind, REASON_SHARE)
                failures.append((Status(Code.Unschedulable, reason), short))
            return failures

        return predicate

    def predicate_key(self, task: TaskInfo) -> Hashable:
        d = self.demand(task)
        return (d, self.active(d))

    # ------------------------------------------------------------------ GPU choice
    def install_selector(self, weight: float, selector: GpuSelector, owner: object) -> None:
        """Let a placement policy choose GPUs; the highest weight wins, the first on a tie."""
        if self._selector is None or weight > self._selector[0]:
            self._selector = (weight, selector, owner)

    @property
    def selector_owner(self) -> object | None:
        """The plugin whose GPU choice is used (the heaviest placement policy)."""
        return None if self._selector is None else self._selector[2]

    def tie_bonus(self, idx: np.ndarray) -> np.ndarray:
        """A node-order bonus in (0, 0.5] that breaks equal integer scores in a fixed order.

        The order is a pseudo-random but stable permutation of the nodes (CRC-32 of the name),
        the same in every session, like the paper artifact's per-run random node names.
        """
        if self._tie_bonus is None:
            names = [n.name for n in self.ssn.node_list]
            keys = np.array([zlib.crc32(name.encode()) for name in names], dtype=np.int64)
            order = np.lexsort((np.arange(len(names)), keys))
            rank = np.empty(len(names), dtype=np.float64)
            rank[order] = np.arange(len(names))
            self._tie_bonus = 0.5 * (1.0 - rank / max(len(names), 1))
        return self._tie_bonus[idx]

    def _choose(self, task: TaskInfo, d: GpuDemand, i: int) -> tuple[int, ...] | None:
        ledger = self.ledger
        named = parse_gpu_index(task.pod.annotations.get(GPU_INDEX_ANNOTATION, "") or "x")
        if named is not None and ledger.fits_on(d, i, named):
            return named
        if self._selector is not None:
            picked = self._selector[1](task, d, i)
            if picked is not None and ledger.fits_on(d, i, picked):
                return picked
        return ledger.default_choice(d, i)

    def _on_allocate(self, ev: Event) -> None:
        task = ev.task
        d = self.demand(task)
        if not self.active(d):
            return
        node = self.ssn.nodes.get(task.node_name)
        if node is None:
            return
        gpus = self._choose(task, d, node.index)
        if gpus is None:
            ev.err = f"no GPUs on node {node.name} for pod {task.key}"
            return
        self.ledger.assign(task.uid, node.index, gpus, d)
        self.ssn.bind_annotations.setdefault(task.uid, {}).update({
            GPU_INDEX_ANNOTATION: format_gpu_index(gpus),
            PREDICATE_TIME_ANNOTATION: str(int(self.ssn.now * 1e9)),
        })

    def _on_deallocate(self, ev: Event) -> None:
        task = ev.task
        if self.ledger.release(task.uid) is None:
            return
        notes = self.ssn.bind_annotations.get(task.uid)
        if notes is not None:
            notes.pop(GPU_INDEX_ANNOTATION, None)
            notes.pop(PREDICATE_TIME_ANNOTATION, None)
            if not notes:
                del self.ssn.bind_annotations[task.uid]

