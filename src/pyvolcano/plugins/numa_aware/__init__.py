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
  the pod's assignment on that node. Verdicts and CPUs are kept per pod shape (policy,
  containers' CPU requests) and node state (:meth:`NumaAware.verdicts`): a gang's pods are worked
  out once per node, then only where a placement moved the free CPUs.
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

from bisect import bisect_right
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
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.framework.session_plugins import NodeFailures
from pyvolcano.plugins.numa_aware import cpumanager, policy

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "NumaAware", "new", "task_policy"]

NAME: Final = "numa-aware"
WEIGHT: Final = "weight"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (honoured(WEIGHT),))
MAX_NODE_SCORE: Final = 100


def task_policy(task: TaskInfo) -> str:
    """The pod's ``volcano.sh/numa-topology-policy`` (``""`` without one)."""
    return task.pod.annotations.get(NUMA_POLICY_KEY, "")


def _has_policy(task: TaskInfo) -> bool:
    return task_policy(task) not in ("", "none")


class NumaAware:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.weight = args.get_int(WEIGHT, 1)
        self.infos: dict[str, NumaSchedulerInfo] = {}
        self.free: dict[str, ResNumaSets] = {}
        self.topologies: dict[str, cpumanager.CpuTopology] = {}
        # Pod uid -> the node its allocate event placed it on (upstream taskBindNodeMap).
        self.placed: dict[str, str] = {}
        self._guaranteed: dict[str, bool] = {}
        # The predicate's memo. A verdict and the CPUs a pod would take on a node (upstream
        # assignRes) depend only on the node's free CPUs, the pod's policy and its containers'
        # CPU requests (its "shape"), so they are worked out once per shape and node state: a
        # node's version counts the allocate events that moved its free CPUs, at global epochs
        # (``_changes``); per shape, ``_memos`` holds the version each node's verdict is for and
        # the verdict (an index into ``_statuses``, -1: passes); ``_assigned`` the CPUs by
        # (shape, node index, version); ``_seen`` the shape and epoch of a pod's last predicate.
        self._index: dict[str, int] = {}
        self._versions = np.zeros(0, dtype=np.int64)
        self._changes: list[list[int]] = []
        self._epoch = 0
        self._shapes: dict[str, Hashable] = {}
        self._memos: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}
        self._statuses: list[Status] = []
        self._status_ids: dict[Status, int] = {}
        self._assigned: dict[tuple[Hashable, int, int], ResNumaSets] = {}
        self._seen: dict[str, tuple[Hashable, int]] = {}
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

    def _shape(self, task: TaskInfo) -> Hashable:
        shape = self._shapes.get(task.uid)
        if shape is None:
            shape = self._shapes[task.uid] = (task_policy(task), tuple(
                (c.name, "cpu" in c.requests, cpumanager.guaranteed_cpus(c)) for c in task.pod.containers))
        return shape

    def verdicts(self, task: TaskInfo, idx: np.ndarray, names: list[str]) -> np.ndarray:
        """Per node of ``idx`` (indices into the session's node list ``names``), the index in
        ``_statuses`` of the plugin's verdict for the Guaranteed ``task``, -1 where it passes;
        records the CPUs the pod would take on each passing node."""
        shape = self._shape(task)
        memo = self._memos.get(shape)
        if memo is None:
            memo = self._memos[shape] = (np.full(len(names), -1, dtype=np.int64),
                                         np.full(len(names), -1, dtype=np.int64))
        done, codes = memo
        stale = idx[done[idx] != self._versions[idx]]
        for i in stale.tolist():
            version = int(self._versions[i])
            status, assigned = self._check(task, names[i])
            if status is None:
                codes[i] = -1
            else:
                code = self._status_ids.get(status)
                if code is None:
                    code = self._status_ids[status] = len(self._statuses)
                    self._statuses.append(status)
                codes[i] = code
            if assigned is not None:
                self._assigned[(shape, i, version)] = assigned
            done[i] = version
        self._seen[task.uid] = (shape, self._epoch)
        return codes[idx]

    def assignment(self, uid: str, node: str) -> ResNumaSets | None:
        """The CPUs pod ``uid`` would take on ``node``, as of its last predicate (upstream
        ``assignRes[uid][node]``); None where it did not pass there."""
        seen = self._seen.get(uid)
        i = self._index.get(node)
        if seen is None or i is None:
            return None
        shape, epoch = seen
        return self._assigned.get((shape, i, bisect_right(self._changes[i], epoch)))

    def _check(self, task: TaskInfo, node: str) -> tuple[Status | None, ResNumaSets | None]:
        go_on, err = self._filter_node(task, node)
        if not go_on:
            if err is None:
                return None, None
            self.mismatch_reasons.add(err)
            return Status(Code.Error, err), None
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
                return Status(Code.UnschedulableAndUnresolvable, reason), None
            for res, cpus in cpumanager.allocate(container, best, topo, info.res_reserved, free).items():
                assigned[res] = assigned.get(res, frozenset()) | cpus
                free[res] = free.get(res, frozenset()) - cpus
        return None, assigned

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.infos = ssn.cache.numa_scheduler_infos()
        self.free = {name: dict(info.free) for name, info in self.infos.items()}
        self.topologies = {name: cpumanager.CpuTopology(info.cpu_detail) for name, info in self.infos.items()}
        node_list = ssn.node_list

        names = [n.name for n in node_list]
        self._index = {name: i for i, name in enumerate(names)}
        self._versions = np.zeros(len(names), dtype=np.int64)
        self._changes = [[] for _ in names]

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            if not self.guaranteed(task):
                return []
            codes = self.verdicts(task, idx, names)
            failed = codes >= 0
            if not failed.any():
                return []
            return [(self._statuses[int(code)], codes == code) for code in np.unique(codes[failed]).tolist()]

        def cache_key(task: TaskInfo) -> Hashable | None:
            # A pod that is not Guaranteed passes everywhere; a Guaranteed one depends on the
            # CPUs this session's placements took.
            return None if self.guaranteed(task) else ()

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            scores = np.zeros(len(idx), dtype=np.float64)
            if task.uid not in self._seen or not _has_policy(task):
                return scores
            counts = []
            for i in idx.tolist():
                name = names[i]
                cpus = (self.assignment(task.uid, name) or {}).get("cpu", frozenset())
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
        # The framework keeps one projectable flag per plugin (the last registered): a
        # Guaranteed pod's verdict reads the free CPUs the allocate events keep.
        ssn.add_node_order_fn(NAME, node_order, cache_key=node_order_key, projectable=lambda t: not self.guaranteed(t))
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           allocate_many=on_allocate_many))

    def _move(self, task: TaskInfo, *, take: bool) -> None:
        sets = self.assignment(task.uid, task.node_name)
        if sets is None:
            return
        free = self.free.get(task.node_name)
        if free is not None:
            i = self._index[task.node_name]
            self._epoch += 1
            self._changes[i].append(self._epoch)
            self._versions[i] += 1
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
                               plugin=NAME, figures=tuple(figures.items()))
        hint = (f"the pod asks for topology policy {wanted}, which {mismatch} node(s) cannot serve (no "
                f"Numatopology, no static CPU manager, or another TopologyManagerPolicy); nodes that run it: "
                f"{', '.join(matching) if matching else 'none'}")
        return PluginBlock(Reason.NUMA_POLICY_MISMATCH, f"{mismatch} node(s) do not run policy {wanted}", hint,
                           plugin=NAME, figures=tuple(figures.items()))

    def on_session_close(self, ssn: Session) -> None:
        # Upstream hands the cache every task of taskBindNodeMap; only bound pods are kept here
        # (a pipelined or discarded placement never reaches a kubelet; docs/differences.md).
        for uid, node in sorted(self.placed.items()):
            task = ssn.cache.tasks.get(uid)
            if task is None or task.status != TaskStatus.Binding:
                continue
            sets = self.assignment(uid, node)
            if sets is not None:
                ssn.cache.add_unassigned_numa(node, PodMeta(task.uid, task.name, task.namespace), sets)


def new(arguments: Mapping[str, Any]) -> NumaAware:
    return NumaAware(arguments)
