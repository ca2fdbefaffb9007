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

Volumes. A pod with PersistentVolumeClaims (``Pod.claims``) also meets NodeVolumeLimits (CSI,
:mod:`.nodevolumelimits`), VolumeZone (:mod:`.volumezone`) and VolumeBinding
(:mod:`.volumebinding`), in upstream's order after the others; its verdicts are never cached
or batched (they change as the session assumes PVs), the allocate event reserves its volumes
and the pre-bind step (:class:`.volumebinding.VolumeBinder`) writes them before the pod's bind.
A pod without claims takes none of these paths; in a cluster without PVCs and without pods
that mount any, the event handler and pre-binder are not even registered.

Dynamic resource allocation. A pod with ``spec.resourceClaims`` meets kube-scheduler's
DynamicResources plugin (:mod:`.dynamicresources`) last: its PreFilter as this plugin's
pre-predicate, its Filter after the volume filters, its Reserve and Unreserve in the allocate
and deallocate events, its PreBind as the pre-binder :class:`.dynamicresources.ClaimBinder`.
Such a pod's verdicts are never cached or batched. While no pod has claims, none of it is
registered.

Arguments (:data:`ARGUMENTS`, upstream's keys): ``predicate.NodeAffinityEnable``,
``predicate.NodePortsEnable``, ``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``,
``predicate.PodTopologySpreadEnable``, ``predicate.NodeVolumeLimitsEnable``,
``predicate.VolumeZoneEnable``, ``predicate.VolumeBindingEnable`` (all default true),
``volumebinding.bindTimeoutSeconds`` (600, an integer; read, but see volumebinding's doc on
the wait), ``volumebinding.weight`` and ``volumebinding.shape`` (checked only: upstream scores
volume binding only under the StorageCapacityScoring gate, off by default),
``predicate.DynamicResourceAllocationEnable`` (default true: the feature gate is GA; upstream
reads only the gate), ``dynamicresources.filterTimeoutSeconds`` (10; read, no effect: the
allocator here is not interrupted), ``predicate.CacheEnable`` (upstream's predicate cache: the
stable filters here are always memoised, with the same results). NUMA filters are not modelled.
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
from pyvolcano.api.unschedule import DRA_PRE_PREDICATE, NODE_POD_NUMBER_EXCEEDED, Code, Status
from pyvolcano.cache.memo import NODE_SIGNATURES, STABLE_FAILURES
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.plugins.predicates.dynamicresources import ClaimBinder, DynamicResources
from pyvolcano.plugins.predicates.nodevolumelimits import REASON_MAX_VOLUME_COUNT, csi_volumes, exceeds_limits
from pyvolcano.plugins.predicates.volumebinding import VolumeBinder, VolumeBinding
from pyvolcano.plugins.predicates.volumezone import REASON_ZONE_CONFLICT, volume_zones, zone_conflict

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures

NAME = "predicates"
NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"
NODE_VOLUME_LIMITS_ENABLE = "predicate.NodeVolumeLimitsEnable"
VOLUME_ZONE_ENABLE = "predicate.VolumeZoneEnable"
VOLUME_BINDING_ENABLE = "predicate.VolumeBindingEnable"
BIND_TIMEOUT_SECONDS = "volumebinding.bindTimeoutSeconds"
VOLUME_BINDING_WEIGHT = "volumebinding.weight"
VOLUME_BINDING_SHAPE = "volumebinding.shape"
DRA_ENABLE = "predicate.DynamicResourceAllocationEnable"
DRA_FILTER_TIMEOUT_SECONDS = "dynamicresources.filterTimeoutSeconds"
CACHE_ENABLE = "predicate.CacheEnable"
_UNSCORED = "upstream scores volume binding only under the StorageCapacityScoring gate, off by default"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (
    honoured(NODE_AFFINITY_ENABLE),
    honoured(NODE_PORTS_ENABLE),
    honoured(TAINT_TOLERATION_ENABLE),
    honoured(POD_AFFINITY_ENABLE),
    honoured(POD_TOPOLOGY_SPREAD_ENABLE),
    honoured(CACHE_ENABLE, note="the stable filters are always memoised; the results are the same"),
    honoured(NODE_VOLUME_LIMITS_ENABLE),
    honoured(VOLUME_ZONE_ENABLE),
    honoured(VOLUME_BINDING_ENABLE),
    honoured(BIND_TIMEOUT_SECONDS, note="pre-bind does not wait for the PV controller (docs/differences.md, Volumes)"),
    honoured(VOLUME_BINDING_WEIGHT, note=_UNSCORED),
    honoured(VOLUME_BINDING_SHAPE, note=_UNSCORED),
    honoured(DRA_ENABLE),
    honoured(DRA_FILTER_TIMEOUT_SECONDS, note="the allocator is never interrupted; the placement is the same"),
))
_STABLE_MEMO_LIMIT = 4096  # distinct pod templates kept before the memo starts over

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"

_STATUS_PODS = Status(Code.Unschedulable, NODE_POD_NUMBER_EXCEEDED)
_STATUS_UNSCHEDULABLE = Status(Code.UnschedulableAndUnresolvable, REASON_UNSCHEDULABLE)
_STATUS_AFFINITY = Status(Code.UnschedulableAndUnresolvable, REASON_NODE_AFFINITY)
_STATUS_PORTS = Status(Code.Unschedulable, REASON_PORTS)
_STATUS_VOLUME_COUNT = Status(Code.Unschedulable, REASON_MAX_VOLUME_COUNT)
_STATUS_VOLUME_ZONE = Status(Code.UnschedulableAndUnresolvable, REASON_ZONE_CONFLICT)
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
    key = (ssn.cache.node_generation, len(ssn.node_list))
    kept = ssn.memo.kept(NODE_SIGNATURES, key)
    if kept is None:
        kept = ssn.memo.keep(NODE_SIGNATURES, key, node_signatures(ssn.node_list))
    return kept


class Predicates:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.node_affinity_enable = args.get_bool(NODE_AFFINITY_ENABLE, True)
        self.node_ports_enable = args.get_bool(NODE_PORTS_ENABLE, True)
        self.taint_toleration_enable = args.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.pod_affinity_enable = args.get_bool(POD_AFFINITY_ENABLE, True)
        self.pod_topology_spread_enable = args.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)
        self.node_volume_limits_enable = args.get_bool(NODE_VOLUME_LIMITS_ENABLE, True)
        self.volume_zone_enable = args.get_bool(VOLUME_ZONE_ENABLE, True)
        self.volume_binding_enable = args.get_bool(VOLUME_BINDING_ENABLE, True)
        self.bind_timeout_seconds = args.get_int(BIND_TIMEOUT_SECONDS, 600)
        self.dra_enable = args.get_bool(DRA_ENABLE, True)
        self.dra_filter_timeout_seconds = args.get_int(DRA_FILTER_TIMEOUT_SECONDS, 10)
        # Checked only: the stable filters are memoised either way, and upstream scores volume
        # binding only under the StorageCapacityScoring gate, off by default.
        args.get_bool(CACHE_ENABLE, False)
        args.get_int(VOLUME_BINDING_WEIGHT, 1)
        self._volumes: VolumeBinding | None = None
        self._dra: DynamicResources | None = None
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
        stable = ssn.memo.kept(STABLE_FAILURES, memo_key)
        if stable is None or len(stable) >= _STABLE_MEMO_LIMIT:
            stable = ssn.memo.keep(STABLE_FAILURES, memo_key, {})
        self._stable_cache = stable
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
            # 6. volumes: CSI limits, zone, binding
            if pod.claims and self._volumes is not None:
                failures.extend(self._volume_failures(ssn, task, idx, live))
            # 7. dynamic resource allocation
            if pod.resource_claims and self._dra is not None:
                for _st, mask in failures:
                    if _st.aborts:
                        live = live & ~mask
                failures.extend(self._dra.filter(task, idx, live))
            return failures

        def cache_key(task: TaskInfo) -> str | None:
            pod = task.pod
            if (pod.claims and self._volumes is not None) or (pod.resource_claims and self._dra is not None):
                return None
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
            return (not (self.node_ports_enable and pod_host_ports(task.pod.containers)) and not task.pod.claims
                    and not task.pod.resource_claims)

        ssn.add_predicate_fn(NAME, predicate, cache_key=cache_key, projectable=projectable)
        self._open_volumes(ssn)
        self._open_dra(ssn)

    # ------------------------------------------------------------------ dynamic resource allocation
    def _open_dra(self, ssn: Session) -> None:
        """PreFilter, Reserve / Unreserve and the pre-binder, only while some pod has claims."""
        self._dra = None
        if not self.dra_enable or not ssn.cache.dra.pods_with_claims:
            return
        dra = self._dra = DynamicResources(ssn)
        ssn.add_pre_binder(ClaimBinder())

        def pre_predicate(task: TaskInfo) -> Status | None:
            if not task.pod.resource_claims:
                return None
            st = dra.pre_filter(task)
            if st is None:
                return None
            # upstream handleSkipPrePredicatePlugin's wording
            return Status(st.code, f"{DRA_PRE_PREDICATE} {st.reason}")

        def allocate(ev: Event) -> None:
            if ev.task.pod.resource_claims:
                err = dra.reserve(ev.task)
                if err is not None:
                    ev.err = err

        def allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                if t.pod.resource_claims:
                    dra.reserve(t)

        def deallocate(ev: Event) -> None:
            if ev.task.pod.resource_claims:
                dra.unreserve(ev.task)

        ssn.add_pre_predicate_fn(NAME, pre_predicate)
        ssn.add_event_handler(EventHandler(allocate=allocate, deallocate=deallocate, allocate_many=allocate_many))

    # ------------------------------------------------------------------ volumes
    def _open_volumes(self, ssn: Session) -> None:
        """Volume filters, the reserve event and the pre-binder, only where claims or pods with claims exist."""
        self._volumes = None
        if (not ssn.cache.volumes.pvcs and not ssn.cache.pods_with_claims) or not (
                self.volume_binding_enable or self.volume_zone_enable or self.node_volume_limits_enable):
            return
        vb = self._volumes = VolumeBinding(ssn, frozenset(ssn.cache.options.ignored_provisioners))
        if not self.volume_binding_enable:
            return
        ssn.add_pre_binder(VolumeBinder())

        def allocate(ev: Event) -> None:
            if ev.task.pod.claims and not vb.reserve(ev.task):
                ev.err = f"failed to reserve the volumes of {ev.task.key} on {ev.task.node_name}"

        def allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                if t.pod.claims:
                    vb.reserve(t)

        def deallocate(ev: Event) -> None:
            if ev.task.pod.claims:
                vb.unreserve(ev.task)

        ssn.add_event_handler(EventHandler(allocate=allocate, deallocate=deallocate, allocate_many=allocate_many))

    def _volume_failures(self, ssn: Session, task: TaskInfo, idx: np.ndarray, live: np.ndarray) -> NodeFailures:
        vb = self._volumes
        assert vb is not None
        failures: NodeFailures = []
        live = live.copy()
        nodes = ssn.node_list
        claims = vb.pod_claims(task)
        if self.node_volume_limits_enable and vb.volumes.csi_nodes:
            new = csi_volumes(task.pod, vb.volumes, vb.ignored)
            if new:
                over = np.zeros(len(idx), dtype=bool)
                for k in np.flatnonzero(live):
                    node = nodes[int(idx[k])]
                    if exceeds_limits(new, node.name, (t.pod for t in node.tasks.values() if t.uid != task.uid),
                                      vb.volumes, vb.ignored):
                        over[k] = True
                if over.any():
                    failures.append((_STATUS_VOLUME_COUNT, over))
        if self.volume_zone_enable and claims.failure is None and claims.bound:
            zones = volume_zones([pv for _pvc, pv in claims.bound])
            if zones:
                bad = np.zeros(len(idx), dtype=bool)
                for k in np.flatnonzero(live):
                    if zone_conflict(zones, nodes[int(idx[k])].labels):
                        bad[k] = True
                if bad.any():
                    failures.append((_STATUS_VOLUME_ZONE, bad))
                    live &= ~bad
        if self.volume_binding_enable:
            failures.extend(vb.filter(task, idx, live))
        return failures

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
        self._volumes = None
        self._dra = None


def new(arguments: Mapping[str, Any]) -> Predicates:
    return Predicates(arguments)
