"""Pod topology spread: the kube-scheduler ``PodTopologySpread`` plugin (explicit constraints).

Reproduces ``pkg/scheduler/framework/plugins/podtopologyspread/{common,filtering,scoring}.go``
with the feature gates of current Kubernetes on (MinDomains, NodeInclusionPolicy,
MatchLabelKeys), on plain manifest data:

Constraints
    Only the pod's own ``spec.topologySpreadConstraints`` are used; ``DoNotSchedule`` ones
    filter, ``ScheduleAnyway`` ones score. ``labelSelector`` null selects nothing;
    ``matchLabelKeys`` ANDs ``key = value`` for every listed key the incoming pod carries (a
    null selector stays null). ``minDomains`` defaults to 1, ``nodeAffinityPolicy`` to
    ``Honor`` (only nodes matching the pod's nodeSelector + required node affinity count),
    ``nodeTaintsPolicy`` to ``Ignore`` (``Honor``: only nodes whose NoSchedule/NoExecute taints
    the pod tolerates count). Pods counted: same namespace as the incoming pod, not
    terminating, matching the selector; a selector that places no restriction
    (``labels.Selector.Empty()``) counts no pods — a kube-scheduler quirk kept on purpose.

Filter (:func:`prefilter` once, :func:`filter_node` per node)
    Domains are the topology values of nodes that carry *every* DoNotSchedule topology key
    and pass the constraint's inclusion policies (a domain may hold 0 pods). For each
    constraint: a node without the key is rejected "(missing required label)"; otherwise
    ``count(domain) + selfMatch - globalMin > maxSkew`` rejects, where ``globalMin`` is the
    smallest domain count, or 0 when there are fewer domains than ``minDomains``.

Score (:func:`score_nodes`)
    Candidate nodes lacking any ScheduleAnyway key are ignored (score 0 after normalising).
    Per constraint the topology weight is ``log(size + 2)`` with size = #distinct values among
    the candidates (for ``kubernetes.io/hostname``: #non-ignored candidates). Domain counts come
    from all nodes passing the inclusion policies whose value occurs among candidates; for the
    hostname key the count is the matching pods on the node itself. Raw score =
    ``round(Σ count·weight + (maxSkew − 1))``; normalised as
    ``100·(max + min − s) / max`` (integer division; all 100 when max is 0), so fewer
    matching pods means a higher score.

Not implemented: the cluster-level *system default constraints* (used for pods without
``topologySpreadConstraints``), because they derive selectors from the Services,
ReplicaSets, StatefulSets and ReplicationControllers selecting the pod — objects pyvolcano
does not model. Such pods score 0 everywhere and are never filtered. The alpha
``Gt``/``Lt`` toleration operators are not supported either (see ``matching.taints``).

Design and invariants: :func:`prefilter` does the O(nodes + existing pods) work once, keeping
per-constraint ``{topology value: count}`` maps, so :func:`filter_node` is O(#constraints);
a pod without DoNotSchedule constraints gets a trivial state. ``with_pod`` (preemption
simulation) returns a copy and recomputes the exact global minimum (kube-scheduler keeps an
approximate two-entry "critical paths" cache). No global state; inputs are never mutated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from pyvolcano.api.matching import RequiredNodeAffinity, compile_label_selector, find_untolerated_taint
from pyvolcano.api.matching.errors import fail, show
from pyvolcano.api.matching.labels import EMPTY_LABELS, LabelSelector
from pyvolcano.api.matching.normalize import go_div, go_round

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LABEL_HOSTNAME",
    "SpreadConstraint",
    "SpreadFilterState",
    "SpreadPod",
    "compile_constraints",
    "filter_node",
    "is_trivial",
    "prefilter",
    "score_nodes",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
_MAX_INT32: Final = 2**31 - 1
_DO_NOT_SCHEDULE_EFFECTS: Final = ("NoSchedule", "NoExecute")

NodeEntry = tuple[Mapping[str, str], Sequence[Mapping[str, Any]] | None]


@dataclass(frozen=True)
class SpreadPod:
    """An existing pod as seen by topology spread."""

    namespace: str
    labels: Mapping[str, str]
    node_name: str
    terminating: bool = False


class SpreadConstraint:
    """A compiled topology spread constraint."""

    __slots__ = ("countable", "honor_affinity", "honor_taints", "max_skew", "min_domains", "selector",
                 "topology_key")

    def __init__(self, max_skew: int, topology_key: str, selector: LabelSelector, min_domains: int,
                 honor_affinity: bool, honor_taints: bool) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.honor_affinity = honor_affinity
        self.honor_taints = honor_taints
        # countPodsMatchSelector returns 0 for an unrestricted selector
        self.countable = not selector.is_everything and not selector.is_nothing

    def __repr__(self) -> str:
        return (f"SpreadConstraint({self.topology_key!r}, maxSkew={self.max_skew}, "
                f"minDomains={self.min_domains}, selector={self.selector!r})")


def compile_constraints(constraints: Sequence[Mapping[str, Any]] | None, pod_labels: Mapping[str, str],
                        when_unsatisfiable: str, path: str = "spec.topologySpreadConstraints",
                        ) -> list[SpreadConstraint]:
    """Compile the constraints with the given ``whenUnsatisfiable`` (raises ``SelectorError``)."""
    out: list[SpreadConstraint] = []
    for i, c in enumerate(constraints or ()):
        ip = f"{path}[{i}]"
        if not isinstance(c, Mapping):
            raise fail(ip, f"got {show(c)}; expected a topology spread constraint mapping")
        if c.get("whenUnsatisfiable") != when_unsatisfiable:
            continue
        selector = compile_label_selector(c.get("labelSelector"), f"{ip}.labelSelector")
        keys = c.get("matchLabelKeys") or ()
        if keys:
            extra = {k: pod_labels[k] for k in keys if k in pod_labels}
            if extra:
                selector = selector.merged(extra)
        max_skew = c.get("maxSkew")
        if not isinstance(max_skew, int) or isinstance(max_skew, bool):
            raise fail(f"{ip}.maxSkew", f"got {show(max_skew)}; expected an integer")
        key = c.get("topologyKey")
        if not isinstance(key, str):
            raise fail(f"{ip}.topologyKey", f"got {show(key)}; expected a label key")
        md = c.get("minDomains")
        min_domains = 1 if md is None else int(md)
        out.append(SpreadConstraint(max_skew, key, selector, min_domains,
                                    (c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                                    (c.get("nodeTaintsPolicy") or "Ignore") == "Honor"))
    return out


class _Inclusion:
    """Per-node evaluation of the nodeAffinityPolicy / nodeTaintsPolicy inclusion rules."""

    __slots__ = ("required", "tolerations")

    def __init__(self, node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None,
                 tolerations: Sequence[Mapping[str, Any]] | None) -> None:
        self.required = RequiredNodeAffinity(node_selector, affinity)
        self.tolerations = tolerations or ()

    def slots(self, constraints: Sequence[SpreadConstraint], name: str, labels: Mapping[str, str],
              taints: Sequence[Mapping[str, Any]] | None) -> list[int]:
        """Indices of the constraints for which this node is an eligible domain member."""
        aff_ok: bool | None = None
        taint_ok: bool | None = None
        out: list[int] = []
        for i, c in enumerate(constraints):
            if c.honor_affinity:
                if aff_ok is None:
                    aff_ok = self.required.matches(name, labels)
                if not aff_ok:
                    continue
            if c.honor_taints:
                if taint_ok is None:
                    untolerated = find_untolerated_taint(taints, self.tolerations, _DO_NOT_SCHEDULE_EFFECTS)
                    taint_ok = untolerated is None
                if not taint_ok:
                    continue
            out.append(i)
        return out


def _has_all_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    for c in constraints:  # noqa: SIM110 - explicit loop: hot path
        if c.topology_key not in labels:
            return False
    return True


def _global_min(counts: Mapping[str, int], min_domains: int) -> int:
    if len(counts) < min_domains:
        return 0
    return min(counts.values()) if counts else _MAX_INT32


# ----------------------------------------------------------------------------- filter


class SpreadFilterState:
    """Result of :func:`prefilter` for one incoming pod (treat as immutable)."""

    __slots__ = ("_inclusion", "constraints", "counts", "min_match", "pod_namespace", "self_match")

    def __init__(self, pod_namespace: str, constraints: Sequence[SpreadConstraint],
                 counts: list[dict[str, int]], self_match: Sequence[int],
                 inclusion: _Inclusion | None) -> None:
        self.pod_namespace = pod_namespace
        self.constraints: tuple[SpreadConstraint, ...] = tuple(constraints)
        self.counts = counts
        self.self_match: tuple[int, ...] = tuple(self_match)
        self.min_match: tuple[int, ...] = tuple(_global_min(cnt, c.min_domains)
                                                for cnt, c in zip(counts, self.constraints))
        self._inclusion = inclusion

    @property
    def is_trivial(self) -> bool:
        """True when the pod has no DoNotSchedule constraint (every node passes)."""
        return not self.constraints

    def with_pod(self, pod: SpreadPod, node_labels: Mapping[str, str],
                 node_taints: Sequence[Mapping[str, Any]] | None = None, delta: int = 1) -> SpreadFilterState:
        """A copy updated for ``pod`` added (``delta=1``) / removed (``-1``) on the node
        ``pod.node_name`` (kube-scheduler ``AddPod`` / ``RemovePod``)."""
        if not self.constraints or self._inclusion is None or pod.namespace != self.pod_namespace \
                or not _has_all_keys(node_labels, self.constraints):
            return self
        counts = [dict(c) for c in self.counts]
        for i in self._inclusion.slots(self.constraints, pod.node_name, node_labels, node_taints):
            c = self.constraints[i]
            if not c.selector.matches(pod.labels):
                continue
            v = node_labels[c.topology_key]
            counts[i][v] = counts[i].get(v, 0) + delta
        return SpreadFilterState(self.pod_namespace, self.constraints, counts, self.self_match,
                                 self._inclusion)


def prefilter(pod_namespace: str, pod_labels: Mapping[str, str],
              constraints: Sequence[Mapping[str, Any]] | None,
              node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None,
              tolerations: Sequence[Mapping[str, Any]] | None, existing: Iterable[SpreadPod],
              nodes: Mapping[str, NodeEntry]) -> SpreadFilterState:
    """kube-scheduler ``PodTopologySpread.PreFilter`` over ``nodes`` (name -> (labels, taints))."""
    cons = compile_constraints(constraints, pod_labels, "DoNotSchedule")
    if not cons:
        return SpreadFilterState(pod_namespace, (), [], (), None)
    inclusion = _Inclusion(node_selector, affinity, tolerations)
    counts: list[dict[str, int]] = [{} for _ in cons]
    node_slots: dict[str, list[tuple[dict[str, int], str, SpreadConstraint]]] = {}
    for name, (labels, taints) in nodes.items():
        if not _has_all_keys(labels, cons):
            continue
        slots = []
        for i in inclusion.slots(cons, name, labels, taints):
            c = cons[i]
            v = labels[c.topology_key]
            cnt = counts[i]
            if v not in cnt:
                cnt[v] = 0
            if c.countable:
                slots.append((cnt, v, c))
        if slots:
            node_slots[name] = slots
    if node_slots:
        for p in existing:
            if p.terminating or p.namespace != pod_namespace:
                continue
            entry = node_slots.get(p.node_name)
            if entry is None:
                continue
            for cnt, v, c in entry:
                if c.selector.matches(p.labels):
                    cnt[v] += 1
    self_match = [1 if c.selector.matches(pod_labels) else 0 for c in cons]
    return SpreadFilterState(pod_namespace, cons, counts, self_match, inclusion)


def is_trivial(state: SpreadFilterState) -> bool:
    """Fast-path check: does :func:`filter_node` accept every node for this state?"""
    return state.is_trivial


def filter_node(state: SpreadFilterState, node_name: str, node_labels: Mapping[str, str]) -> str | None:
    """kube-scheduler ``PodTopologySpread.Filter``: ``None`` if the node fits, else the reason."""
    if not state.constraints:
        return None
    for i, c in enumerate(state.constraints):
        v = node_labels.get(c.topology_key)
        if v is None:
            return ERR_REASON_NODE_LABEL_NOT_MATCH
        skew = state.counts[i].get(v, 0) + state.self_match[i] - state.min_match[i]
        if skew > c.max_skew:
            return ERR_REASON_CONSTRAINTS_NOT_MATCH
    return None


# ----------------------------------------------------------------------------- score


def score_nodes(pod_namespace: str, pod_labels: Mapping[str, str],
                constraints: Sequence[Mapping[str, Any]] | None,
                node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None,
                tolerations: Sequence[Mapping[str, Any]] | None, existing: Iterable[SpreadPod],
                nodes: Mapping[str, NodeEntry], candidate_nodes: Sequence[str]) -> npt.NDArray[np.int64]:
    """kube-scheduler ``PodTopologySpread`` PreScore + Score + NormalizeScore.

    Returns one normalised score (0..100, ``int64``) per entry of ``candidate_nodes``; all
    zeros when the pod has no ScheduleAnyway constraint.
    """
    n = len(candidate_nodes)
    out = np.zeros(n, dtype=np.int64)
    if n == 0 or not nodes:
        return out
    cons = compile_constraints(constraints, pod_labels, "ScheduleAnyway")
    if not cons:
        return out

    # PreScore, part 1: candidate domains and topology weights
    ignored = [False] * n
    ignored_names: set[str] = set()
    domain_counts: list[dict[str, int]] = [{} for _ in cons]
    is_host = [c.topology_key == LABEL_HOSTNAME for c in cons]
    for j, name in enumerate(candidate_nodes):
        entry = nodes.get(name)
        labels = entry[0] if entry is not None else EMPTY_LABELS
        if not _has_all_keys(labels, cons):
            ignored[j] = True
            ignored_names.add(name)
            continue
        for i, c in enumerate(cons):
            if not is_host[i]:
                domain_counts[i].setdefault(labels[c.topology_key], 0)
    weights = [math.log((n - len(ignored_names) if is_host[i] else len(domain_counts[i])) + 2)
               for i in range(len(cons))]

    # PreScore, part 2: count matching pods per candidate domain over all eligible nodes
    inclusion = _Inclusion(node_selector, affinity, tolerations)
    node_slots: dict[str, list[tuple[dict[str, int], str, SpreadConstraint]]] = {}
    for name, (labels, taints) in nodes.items():
        if not _has_all_keys(labels, cons):
            continue
        slots = []
        for i in inclusion.slots(cons, name, labels, taints):
            c = cons[i]
            if is_host[i] or not c.countable:
                continue
            v = labels[c.topology_key]
            if v in domain_counts[i]:
                slots.append((domain_counts[i], v, c))
        if slots:
            node_slots[name] = slots
    host_cons = [(i, c) for i, c in enumerate(cons) if is_host[i] and c.countable]
    host_counts: list[dict[str, int]] = [{} for _ in cons]
    candidates = {name for j, name in enumerate(candidate_nodes) if not ignored[j]} if host_cons else set()
    if node_slots or candidates:
        for p in existing:
            if p.terminating or p.namespace != pod_namespace:
                continue
            entry_slots = node_slots.get(p.node_name)
            if entry_slots is not None:
                for cnt, v, c in entry_slots:
                    if c.selector.matches(p.labels):
                        cnt[v] += 1
            if p.node_name in candidates:
                for i, c in host_cons:
                    if c.selector.matches(p.labels):
                        hc = host_counts[i]
                        hc[p.node_name] = hc.get(p.node_name, 0) + 1

    # Score
    raw = [0] * n
    for j, name in enumerate(candidate_nodes):
        if ignored[j]:
            continue
        labels = nodes[name][0]
        score = 0.0
        for i, c in enumerate(cons):
            matching = host_counts[i].get(name, 0) if is_host[i] else domain_counts[i][labels[c.topology_key]]
            score += matching * weights[i] + (c.max_skew - 1)
        raw[j] = go_round(score)

    # NormalizeScore
    valid = [raw[j] for j in range(n) if not ignored[j]]
    if not valid:
        return out
    lo = min(valid)
    hi = max(0, max(valid))
    for j in range(n):
        if ignored[j]:
            continue
        out[j] = 100 if hi == 0 else go_div(100 * (hi + lo - raw[j]), hi)
    return out
