"""numa-aware plugin: CPU NUMA alignment for Guaranteed pods (upstream ``pkg/scheduler/plugins/numaaware``).

Design. At session open the plugin takes every node's NUMA state from the cache
(:meth:`~pyvolcano.cache.cache.SchedulerCache.numa_scheduler_infos`: the node's Numatopology,
less the CPUs of pods placed since that its exporter does not list yet) and keeps, per node,
the free CPU set. Only Guaranteed pods are looked at (``api.qos``).

* Predicate. A pod whose ``volcano.sh/numa-topology-policy`` (the Job task's
  ``topologyPolicy``) is set and not ``none`` needs a node with a Numatopology, a ``static`` CPU
  manager, the same ``TopologyManagerPolicy`` and free CPUs; any other node fails with code
  ``Error`` (``numa info is empty``, ``cpu manager policy isn't static``, ``task topology
  policy[X] is different with node[Y]``, ``cpu allocatable map is empty``). A pod without the
  annotation is checked only on nodes with a static CPU manager and a policy other than
  ``none``. Then, container by container, the CPU hints (:mod:`.cpumanager`) go through the
  node's policy (:mod:`.policy`); a refusal is ``UnschedulableAndUnresolvable``
  (``container C cannot be assigned by numa``). The CPUs each container would take are kept as
  the pod's assignment on that node.
* Node order (``weight``, default 1). For a pod with a policy and an assignment, nodes whose
  assignment spans fewer NUMA nodes score higher: the NUMA node counts, normalised over the
  candidates to 0..100 in reverse (``util.NormalizeScore``), times the weight.
* Allocate events move the pod's assigned CPUs out of (deallocate: back into) the node's free
  set, so later pods of the session see them taken. At session close every pod this session
  bound keeps its CPUs in the cache until the node's exporter lists it
  (``AddUnassignedNumaPods``).

Invariants: no wall clock; nodes are visited in the order the framework passes them; a
non-Guaranteed pod costs one QoS check (memoised on the pod), and its predicate verdict is
cacheable (constant), so the replica batch and the feasibility memo still serve it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import NUMA_POLICY_KEY
from pyvolcano.api.numatopology import NumaSchedulerInfo, PodMeta, ResNumaSets
from pyvolcano.api.qos import QOSClass, pod_qos
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.diagnosis.model import PluginBlock, Reason
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.framework.session_plugins import NodeFailures
from pyvolcano.plugins.numa_aware import cpumanager, policy

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["NAME", "NumaAware", "new", "task_policy"]

NAME: Final = "numa-aware"
WEIGHT: Final = "weight"
MAX_NODE_SCORE: Final = 100


def task_policy(task: TaskInfo) -> str:
    """The pod's ``volcano.sh/numa-topology-policy`` (``""`` without one)."""
    return task.pod.annotations.get(NUMA_POLICY_KEY, "")


def _has_policy(task: TaskInfo) -> bool:
    return task_policy(task) not in ("", "none")


class NumaAware:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, owner=f"plugin {NAME}")
        self.weight = args.get_int(WEIGHT, 1)
        self.infos: dict[str, NumaSchedulerInfo] = {}
        self.free: dict[str, ResNumaSets] = {}
        self.topologies: dict[str, cpumanager.CpuTopology] = {}
        # Pod uid -> node -> the CPUs the pod would take there (upstream assignRes).
        self.assign: dict[str, dict[str, ResNumaSets]] = {}
        # Pod uid -> the node its allocate event placed it on (upstream taskBindNodeMap).
        self.placed: dict[str, str] = {}
        self._guaranteed: dict[str, bool] = {}
        # The reasons this session's predicate gave: nodes that cannot serve the pod's policy at
        # all, and nodes whose policy refused the CPU hints (for the pending diagnosis).
        self.mismatch_reasons: set[str] = set()
        self.aligned_reasons: set[str] = set()

    # ------------------------------------------------------------------ helpers
    def guaranteed(self, task: TaskInfo) -> bool:
        known = self._guaranteed.get(task.uid)
        if known is None:
            known = self._guaranteed[task.uid] = pod_qos(task.pod) is QOSClass.GUARANTEED
        return known

    def _filter_node(self, task: TaskInfo, node: str) -> tuple[bool, str | None]:
        """Upstream ``filterNodeByPolicy``: (go on with the hints, error to fail the node with)."""
        info = self.infos.get(node)
        if _has_policy(task):
            if info is None:
                return False, "numa info is empty"
            if info.cpu_manager_policy != "static":
                return False, "cpu manager policy isn't static"
            if task_policy(task) != info.topology_manager_policy:
                return False, (f"task topology policy[{task_policy(task)}] is different with "
                               f"node[{info.topology_manager_policy}]")
            free = self.free.get(node)
            if free is None:
                return False, "no topo information"
            if not free.get("cpu"):
                return False, "cpu allocatable map is empty"
            return True, None
        if info is None or info.cpu_manager_policy != "static":
            return False, None
        return info.topology_manager_policy not in ("none", ""), None

    def check(self, task: TaskInfo, node: str) -> Status | None:
        """The plugin's verdict for ``task`` on ``node`` (None: passes); records the assignment."""
        if not self.guaranteed(task):
            return None
        go_on, err = self._filter_node(task, node)
        if not go_on:
            if err is None:
                return None
            self.mismatch_reasons.add(err)
            return Status(Code.Error, err)
        info = self.infos[node]
        topo = self.topologies[node]
        free = dict(self.free[node])
        numa_nodes = info.numa_nodes()
        assigned: dict[str, frozenset[int]] = {}
        for container in task.pod.containers:
            provided = [cpumanager.hints(container, topo, info.res_reserved, free)]
            best, admit = policy.predicate(info.topology_manager_policy, numa_nodes, provided)
            if not admit:
                reason = f"container {container.name} cannot be assigned by numa"
                self.aligned_reasons.add(reason)
                return Status(Code.UnschedulableAndUnresolvable, reason)
            for res, cpus in cpumanager.allocate(container, best, topo, info.res_reserved, free).items():
                assigned[res] = assigned.get(res, frozenset()) | cpus
                free[res] = free.get(res, frozenset()) - cpus
        self.assign.setdefault(task.uid, {})[node] = assigned
        return None

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.infos = ssn.cache.numa_scheduler_infos()
        self.free = {name: dict(info.free) for name, info in self.infos.items()}
        self.topologies = {name: cpumanager.CpuTopology(info.cpu_detail) for name, info in self.infos.items()}
        node_list = ssn.node_list

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            if not self.guaranteed(task):
                return []
            groups: dict[Status, list[int]] = {}
            for pos, i in enumerate(idx.tolist()):
                st = self.check(task, node_list[i].name)
                if st is not None:
                    groups.setdefault(st, []).append(pos)
            out: NodeFailures = []
            for st, positions in groups.items():
                mask = np.zeros(len(idx), dtype=bool)
                mask[positions] = True
                out.append((st, mask))
            return out

        def cache_key(task: TaskInfo) -> Hashable | None:
            # A pod that is not Guaranteed passes everywhere; a Guaranteed one depends on the
            # CPUs this session's placements took.
            return None if self.guaranteed(task) else ()

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            scores = np.zeros(len(idx), dtype=np.float64)
            mine = self.assign.get(task.uid)
            if mine is None or not _has_policy(task):
                return scores
            counts = []
            for i in idx.tolist():
                name = node_list[i].name
                cpus = mine.get(name, {}).get("cpu", frozenset())
                info = self.infos.get(name)
                detail = info.cpu_detail if info is not None else {}
                counts.append(len({detail[c].numa if c in detail else 0 for c in cpus}))
            top = max(counts, default=0)
            if top == 0:
                return scores + MAX_NODE_SCORE * self.weight
            for k, n in enumerate(counts):
                scores[k] = (MAX_NODE_SCORE - MAX_NODE_SCORE * n // top) * self.weight
            return scores

        def node_order_key(task: TaskInfo) -> Hashable | None:
            return None if self.guaranteed(task) and _has_policy(task) else ()

        def on_allocate(ev: Event) -> None:
            self._move(ev.task, take=True)

        def on_deallocate(ev: Event) -> None:
            self._move(ev.task, take=False)

        def on_allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                self._move(t, take=True)

        ssn.add_predicate_fn(NAME, predicate, cache_key=cache_key, projectable=lambda t: not self.guaranteed(t))
        ssn.add_node_order_fn(NAME, node_order, cache_key=node_order_key,
                              projectable=lambda t: not (self.guaranteed(t) and _has_policy(t)))
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           allocate_many=on_allocate_many))

    def _move(self, task: TaskInfo, *, take: bool) -> None:
        sets = self.assign.get(task.uid, {}).get(task.node_name)
        if sets is None:
            return
        free = self.free.get(task.node_name)
        if free is not None:
            for res, cpus in sets.items():
                if res in free:
                    free[res] = free[res] - cpus if take else free[res] | cpus
        if take:
            self.placed[task.uid] = task.node_name
        else:
            self.placed.pop(task.uid, None)

    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           hist: Mapping[str, int]) -> PluginBlock | None:
        """``NUMA.NotAligned`` / ``NUMA.PolicyMismatch`` with the largest free block on one NUMA node."""
        mismatch = sum(n for reason, n in hist.items() if reason in self.mismatch_reasons)
        unaligned = sum(n for reason, n in hist.items() if reason in self.aligned_reasons)
        if mismatch + unaligned == 0:
            return None
        wanted = task_policy(task) or "(the node's)"
        cpus = [cpumanager.guaranteed_cpus(c) for c in task.pod.containers]
        best_free, best_node = 0, ""
        for name, info in sorted(self.infos.items()):
            free = self.free.get(name, {}).get("cpu", frozenset())
            for numa in info.numa_nodes():
                n = sum(1 for c in free if info.cpu_detail.get(c) is not None and info.cpu_detail[c].numa == numa)
                if n > best_free:
                    best_free, best_node = n, name
        matching = sorted(n for n, i in self.infos.items()
                          if i.cpu_manager_policy == "static" and i.topology_manager_policy == task_policy(task))
        figures = {"topology_policy": wanted, "cpus_requested": cpus, "nodes_policy_mismatch": mismatch,
                   "nodes_not_aligned": unaligned, "most_free_cpus_on_one_numa_node": best_free,
                   "on_node": best_node or None}
        if unaligned >= mismatch:
            where = f"{best_free} on one NUMA node of {best_node}" if best_node else "no node with a Numatopology"
            hint = (f"topology policy {wanted} cannot place {max(cpus, default=0)} CPUs of one container within "
                    f"the NUMA nodes it allows on {unaligned} node(s); the most free CPUs on one NUMA node are "
                    f"{where}: free CPUs there, lower the request, or relax the policy (best-effort)")
            return PluginBlock(Reason.NUMA_NOT_ALIGNED, f"{unaligned} node(s) refuse the CPU alignment", hint,
                               NAME, tuple(figures.items()))
        hint = (f"the pod asks for topology policy {wanted}, which {mismatch} node(s) cannot serve (no "
                f"Numatopology, no static CPU manager, or another TopologyManagerPolicy); nodes that run it: "
                f"{', '.join(matching) if matching else 'none'}")
        return PluginBlock(Reason.NUMA_POLICY_MISMATCH, f"{mismatch} node(s) do not run policy {wanted}", hint,
                           NAME, tuple(figures.items()))

    def on_session_close(self, ssn: Session) -> None:
        # Upstream hands the cache every task of taskBindNodeMap; only bound pods are kept here
        # (a pipelined or discarded placement never reaches a kubelet; docs/differences.md).
        for uid, node in sorted(self.placed.items()):
            task = ssn.cache.tasks.get(uid)
            if task is None or task.status != TaskStatus.Binding:
                continue
            sets = self.assign.get(uid, {}).get(node)
            if sets is not None:
                ssn.cache.add_unassigned_numa(node, PodMeta(task.uid, task.name, task.namespace), sets)


def new(arguments: Mapping[str, Any]) -> NumaAware:
    return NumaAware(arguments)
