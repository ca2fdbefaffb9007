"""predicates plugin (upstream pkg/scheduler/plugins/predicates/predicates.go).

Per node, in upstream's order: the pod-number check ("node(s) pod number exceeded",
non-aborting), then the *stable* filters NodeUnschedulable, NodeAffinity (nodeSelector and
required node affinity) and TaintToleration — any failure there aborts — then NodePorts,
InterPodAffinity and PodTopologySpread. Statuses that are UnschedulableAndUnresolvable abort
the node at once; plain Unschedulable statuses accumulate.

Vectorisation. The stable filters depend only on the pod's template and the node's labels,
taints and unschedulable flag, so they are evaluated once per distinct node *signature*
(nodes with equal labels/taints share a result) and memoised per pod template, in the
cache, until a node's labels, taints or schedulability change or a node is added (the same
key as the signatures). Host ports, inter-pod affinity and topology spread run only for pods that use them
(or, for anti-affinity, when some running pod declares required anti-affinity).

Arguments (:data:`ARGUMENTS`): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``,
``predicate.PodTopologySpreadEnable`` (all default true); ``predicate.CacheEnable`` (upstream's
predicate cache: the stable filters here are always memoised, with the same results). Volume and
DRA filters are not modelled (no PV/PVC/ResourceSlice objects): their switches are refused unless
false, their settings (``volumebinding.*``, ``dynamicresources.filterTimeoutSeconds``) always.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api import interpod, topology_spread
from pyvolcano.api.matching import (
    find_untolerated_taint,
    host_ports_conflict,
    node_unschedulable_tolerated,
    pod_host_ports,
    pod_matches_node_selector_and_affinity,
    untolerated_taint_reason,
)
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import NODE_POD_NUMBER_EXCEEDED, Code, Status
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured, is_false, refused
from pyvolcano.framework.arguments import Arguments

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures

NAME = "predicates"
NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"
CACHE_ENABLE = "predicate.CacheEnable"
_OFF = "the key removed or set to false"
_VOLUMES = "volume scheduling: PersistentVolumeClaims are neither bound nor checked against nodes"
_DRA = "DynamicResourceAllocation: ResourceClaims are not allocated"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (
    honoured(NODE_AFFINITY_ENABLE),
    honoured(NODE_PORTS_ENABLE),
    honoured(TAINT_TOLERATION_ENABLE),
    honoured(POD_AFFINITY_ENABLE),
    honoured(POD_TOPOLOGY_SPREAD_ENABLE),
    honoured(CACHE_ENABLE, note="the stable filters are always memoised; the results are the same"),
    refused("predicate.NodeVolumeLimitsEnable", _VOLUMES, _OFF, accepts=is_false),
    refused("predicate.VolumeZoneEnable", _VOLUMES, _OFF, accepts=is_false),
    refused("predicate.VolumeBindingEnable", _VOLUMES, _OFF, accepts=is_false),
    refused("volumebinding.bindTimeoutSeconds", _VOLUMES),
    refused("volumebinding.weight", _VOLUMES),
    refused("volumebinding.shape", _VOLUMES),
    refused("predicate.DynamicResourceAllocationEnable", _DRA, _OFF, accepts=is_false),
    refused("dynamicresources.filterTimeoutSeconds", _DRA),
))
_STABLE_MEMO = "predicates/stable-failures"
_STABLE_MEMO_LIMIT = 4096  # distinct pod templates kept before the memo starts over

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"

_STATUS_PODS = Status(Code.Unschedulable, NODE_POD_NUMBER_EXCEEDED)
_STATUS_UNSCHEDULABLE = Status(Code.UnschedulableAndUnresolvable, REASON_UNSCHEDULABLE)
_STATUS_AFFINITY = Status(Code.UnschedulableAndUnresolvable, REASON_NODE_AFFINITY)
_STATUS_PORTS = Status(Code.Unschedulable, REASON_PORTS)
_INTERPOD_CODES = {
    "node(s) didn't match pod affinity rules": Code.UnschedulableAndUnresolvable,
    "node(s) didn't match pod anti-affinity rules": Code.Unschedulable,
    "node(s) didn't satisfy existing pods anti-affinity rules": Code.Unschedulable,
}


def node_signatures(nodes: list[NodeInfo]) -> tuple[np.ndarray, list[NodeInfo]]:
    """Group nodes with identical labels, taints and unschedulable flag.

    Returns a signature id per node (in node order) and one representative node per id.
    """
    ids = np.zeros(len(nodes), dtype=np.int64)
    seen: dict[Any, int] = {}
    reps: list[NodeInfo] = []
    for i, n in enumerate(nodes):
        key = (
            tuple(sorted(n.labels.items())),
            json.dumps(n.taints, sort_keys=True) if n.taints else "",
            n.unschedulable,
        )
        sid = seen.get(key)
        if sid is None:
            sid = len(reps)
            seen[key] = sid
            reps.append(n)
        ids[i] = sid
    return ids, reps


def _signatures_for(ssn: Session) -> tuple[np.ndarray, list[NodeInfo]]:
    """Node signatures, memoised across sessions until a node's labels/taints change."""
    memo = ssn.memo.plugin_memo.get(NAME)
    key = (ssn.cache.node_generation, len(ssn.node_list))
    if memo is None or memo[0] != key:
        memo = (key, node_signatures(ssn.node_list))
        ssn.memo.plugin_memo[NAME] = memo
    return memo[1]


class Predicates:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.node_affinity_enable = args.get_bool(NODE_AFFINITY_ENABLE, True)
        self.node_ports_enable = args.get_bool(NODE_PORTS_ENABLE, True)
        self.taint_toleration_enable = args.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.pod_affinity_enable = args.get_bool(POD_AFFINITY_ENABLE, True)
        self.pod_topology_spread_enable = args.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)
        args.get_bool(CACHE_ENABLE, False)  # checked only: the stable filters are memoised either way
        self._stable_cache: dict[str, list[tuple[Status, np.ndarray]]] = {}
        self._sig_ids = np.zeros(0, dtype=np.int64)
        self._reps: list[NodeInfo] = []

    # ------------------------------------------------------------------ stable filters
    def _template_key(self, task: TaskInfo) -> str:
        key = task.eq_key
        if isinstance(key, str):
            return key
        pod = task.pod
        if not pod.node_selector and not pod.affinity and not pod.tolerations:
            key = ""
        else:
            key = json.dumps(
                [pod.node_selector, pod.affinity.get("nodeAffinity") if pod.affinity else None, pod.tolerations],
                sort_keys=True,
            )
        task.eq_key = key
        return key

    def _stable_failures(self, task: TaskInfo, n_nodes: int) -> list[tuple[Status, np.ndarray]]:
        """Per-node failing masks (over all nodes) of the stable filters; all abort."""
        key = self._template_key(task)
        cached = self._stable_cache.get(key)
        if cached is not None:
            return cached
        pod = task.pod
        reps = self._reps
        rep_status: list[Status | None] = []
        for n in reps:
            st: Status | None = None
            if not node_unschedulable_tolerated(n.unschedulable, pod.tolerations):
                st = _STATUS_UNSCHEDULABLE
            elif self.node_affinity_enable and not pod_matches_node_selector_and_affinity(
                pod.node_selector, pod.affinity, n.name, n.labels
            ):
                st = _STATUS_AFFINITY
            elif self.taint_toleration_enable:
                taint = find_untolerated_taint(n.taints, pod.tolerations)
                if taint is not None:
                    st = Status(Code.UnschedulableAndUnresolvable, untolerated_taint_reason(taint))
            rep_status.append(st)
        groups: dict[Status, list[int]] = {}
        for sid, st in enumerate(rep_status):
            if st is not None:
                groups.setdefault(st, []).append(sid)
        out: list[tuple[Status, np.ndarray]] = []
        for st, sids in groups.items():
            out.append((st, np.isin(self._sig_ids, np.array(sids, dtype=np.int64))))
        self._stable_cache[key] = out
        return out

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        nodes = ssn.node_list
        self._sig_ids, self._reps = _signatures_for(ssn)
        memo_key = (ssn.cache.node_generation, len(nodes), self.node_affinity_enable, self.taint_toleration_enable)
        stable = ssn.memo.plugin_memo.get(_STABLE_MEMO)
        if stable is None or stable[0] != memo_key or len(stable[1]) >= _STABLE_MEMO_LIMIT:
            stable = ssn.memo.plugin_memo[_STABLE_MEMO] = (memo_key, {})
        self._stable_cache = stable[1]
        table = ssn.node_table
        pods_dim = table.dim_index.get("pods")
        anti_affinity_pods: list[TaskInfo] | None = None

        def existing_affinity_pods() -> list[TaskInfo]:
            nonlocal anti_affinity_pods
            if anti_affinity_pods is None and not table.pod_affinity_tasks:
                anti_affinity_pods = []
            if anti_affinity_pods is None:
                anti_affinity_pods = [
                    t for n in nodes for t in n.tasks.values()
                    if t.pod.has_pod_affinity
                ]
            return anti_affinity_pods

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            failures: NodeFailures = []
            # 1. pod number (non-aborting)
            if pods_dim is not None:
                max_pods = table.allocatable[pods_dim][idx]
            else:
                max_pods = np.zeros(len(idx))
            over = max_pods <= table.task_count[idx]
            if over.any():
                failures.append((_STATUS_PODS, over))
            # 2. stable filters (abort)
            aborted = np.zeros(len(idx), dtype=bool)
            for st, mask in self._stable_failures(task, len(nodes)):
                sub = mask[idx]
                if sub.any():
                    failures.append((st, sub))
                    aborted |= sub
            live = ~aborted
            pod = task.pod
            # 3. node ports
            if self.node_ports_enable:
                wanted = pod_host_ports(pod.containers)
                if wanted:
                    bad = np.zeros(len(idx), dtype=bool)
                    for k in np.flatnonzero(live):
                        node = nodes[int(idx[k])]
                        used = [p for t in node.tasks.values() for p in pod_host_ports(t.pod.containers)]
                        if host_ports_conflict(wanted, used):
                            bad[k] = True
                    if bad.any():
                        failures.append((_STATUS_PORTS, bad))
            # 4. inter-pod affinity
            if self.pod_affinity_enable:
                existing = existing_affinity_pods()
                has_own = pod.has_pod_affinity
                stale = self._stale_removed(ssn)
                if has_own or existing or any(t.pod.has_pod_affinity for t in stale):
                    failures.extend(self._interpod(ssn, task, idx, live, aborted))
            # 5. topology spread
            if self.pod_topology_spread_enable and pod.topology_spread_constraints:
                failures.extend(self._spread(ssn, task, idx, live, aborted))
            return failures

        def cache_key(task: TaskInfo) -> str | None:
            pod = task.pod
            if pod.topology_spread_constraints and self.pod_topology_spread_enable:
                return None
            if self.pod_affinity_enable:
                if pod.has_pod_affinity:
                    return None
                if existing_affinity_pods() or any(t.pod.has_pod_affinity for t in self._stale_removed(ssn)):
                    return None
            ports = pod_host_ports(pod.containers) if self.node_ports_enable else []
            return f"{self._template_key(task)}|{ports}"

        def projectable(task: TaskInfo) -> bool:
            # Host ports are checked against the node's task dict, not its table columns.
            return not (self.node_ports_enable and pod_host_ports(task.pod.containers))

        ssn.add_predicate_fn(NAME, predicate, cache_key=cache_key, projectable=projectable)

    @staticmethod
    def _stale_removed(ssn: Session) -> list[TaskInfo]:
        """Tasks a preemption dry run removed that inter-pod affinity must still see.

        Upstream keeps InterPodAffinity's pre-filter state up to date during the dry run only
        through the simulate hooks, which it calls when this plugin has ``enablePreemptable``
        or ``enabledAllocatable`` (``Session.simulates_removal``).
        """
        if not ssn.dry_run_removed or ssn.simulates_removal(NAME):
            return []
        return [t for _uid, t in sorted(ssn.dry_run_removed.items())]

    def _existing(self, ssn: Session, task: TaskInfo) -> list[interpod.ExistingPod]:
        out = []
        for n in ssn.node_list:
            for t in n.tasks.values():
                if t.uid == task.uid:
                    continue
                out.append(interpod.ExistingPod(t.namespace, t.pod.labels, n.name, t.pod.affinity))
        for t in self._stale_removed(ssn):
            out.append(interpod.ExistingPod(t.namespace, t.pod.labels, t.node_name, t.pod.affinity))
        return out

    def _interpod(
        self, ssn: Session, task: TaskInfo, idx: np.ndarray, live: np.ndarray, aborted: np.ndarray
    ) -> NodeFailures:
        pod = task.pod
        node_labels = {n.name: n.labels for n in ssn.node_list}
        state = interpod.prefilter(pod.namespace, pod.labels, pod.affinity, self._existing(ssn, task), node_labels)
        by_reason: dict[str, np.ndarray] = {}
        for k in np.flatnonzero(live):
            node = ssn.node_list[int(idx[k])]
            reason = interpod.filter_node(state, node.name, node.labels)
            if reason is not None:
                mask = by_reason.setdefault(reason, np.zeros(len(idx), dtype=bool))
                mask[k] = True
        out: NodeFailures = []
        for reason, mask in by_reason.items():
            code = _INTERPOD_CODES.get(reason, Code.Unschedulable)
            out.append((Status(code, reason), mask))
            if code == Code.UnschedulableAndUnresolvable:
                aborted |= mask
                live &= ~mask
        return out

    def _spread(
        self, ssn: Session, task: TaskInfo, idx: np.ndarray, live: np.ndarray, aborted: np.ndarray
    ) -> NodeFailures:
        pod = task.pod
        existing = [
            topology_spread.SpreadPod(t.namespace, t.pod.labels, n.name, t.status == TaskStatus.Releasing)
            for n in ssn.node_list
            for t in n.tasks.values()
            if t.uid != task.uid
        ]
        nodes = {n.name: (n.labels, n.taints) for n in ssn.node_list}
        state = topology_spread.prefilter(
            pod.namespace, pod.labels, pod.topology_spread_constraints, pod.node_selector, pod.affinity,
            pod.tolerations, existing, nodes,
        )
        by_reason: dict[str, np.ndarray] = {}
        for k in np.flatnonzero(live):
            node = ssn.node_list[int(idx[k])]
            reason = topology_spread.filter_node(state, node.name, node.labels)
            if reason is not None:
                mask = by_reason.setdefault(reason, np.zeros(len(idx), dtype=bool))
                mask[k] = True
        out: NodeFailures = []
        for reason, mask in by_reason.items():
            code = Code.UnschedulableAndUnresolvable if "missing required label" in reason else Code.Unschedulable
            out.append((Status(code, reason), mask))
        return out

    def on_session_close(self, ssn: Session) -> None:
        self._stable_cache = {}


def new(arguments: Mapping[str, Any]) -> Predicates:
    return Predicates(arguments)
