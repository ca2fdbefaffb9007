"""Inter-pod affinity and anti-affinity: the kube-scheduler ``InterPodAffinity`` plugin.

Reproduces ``pkg/scheduler/framework/plugins/interpodaffinity/{filtering,scoring}.go`` and the
term parsing of ``pkg/scheduler/framework/types.go`` (``AffinityTerm``, ``NewPodInfo``), plus
the ``matchLabelKeys``/``mismatchLabelKeys`` merge the API server applies at pod creation
(``pkg/registry/core/pod/strategy.go``), on plain manifest data:

Terms
    ``labelSelector`` null selects nothing, ``{}`` everything. ``namespaces`` empty *and*
    ``namespaceSelector`` null means "the owning pod's namespace"; otherwise a pod's namespace
    qualifies if it is listed in ``namespaces`` or its labels match ``namespaceSelector``
    (``{}`` = every namespace; labels come from ``namespace_labels``, an unknown namespace has
    none). ``matchLabelKeys`` / ``mismatchLabelKeys`` add ``key in (v)`` / ``key notin (v)``
    for every listed key the *owning* pod carries (re-applying it to an already-merged
    manifest is harmless: the requirement is idempotent); nothing is merged into a null
    selector.

Filter (:func:`prefilter` once per incoming pod, then :func:`filter_node` per node)
    1. *pod affinity*: a node lacking a required term's ``topologyKey`` fails; otherwise
       every term needs a positive count at the node's ``(key, value)``, where an existing
       pod counts for all terms iff it matches *all* of them. Exception ("first pod of a
       group"): when no existing pod matched at all and the incoming pod matches all its own
       terms, any node carrying every topology key passes.
    2. *pod anti-affinity*: fails if an existing pod matching a term sits in the node's
       domain for that term.
    3. *existing pods' anti-affinity*: fails if some existing pod has a required
       anti-affinity term matching the incoming pod and the node shares that pod's domain.
    Reasons are the kube-scheduler strings (:data:`ERR_REASON_AFFINITY_RULES` ...).

Score (:func:`score_nodes`)
    Per topology ``(key, value)`` accumulate: +weight for each existing pod matching an
    incoming preferred affinity term, −weight for preferred anti-affinity; for every existing
    pod, +``hard_pod_affinity_weight`` per required affinity term of it that matches the
    incoming pod, +weight / −weight for its preferred affinity / anti-affinity terms that
    match the incoming pod. A node's raw score sums the accumulators of its label values;
    NormalizeScore maps ``(s-min)/(max-min)`` to 0..100 (all equal -> 0).

Design and invariants
    :func:`prefilter` is the only O(existing pods) step; it produces counts keyed by
    ``(topologyKey, value)`` so :func:`filter_node` is O(#terms). A pod without pod
    (anti-)affinity facing no existing anti-affinity gets a trivial state and
    :func:`filter_node` returns immediately. Compiled terms of an :class:`ExistingPod` are
    cached on the instance (:attr:`ExistingPod.terms`), so keeping ``ExistingPod`` objects
    alive across scheduling cycles avoids recompiling them. No global state; inputs are
    never mutated; states are immutable (:meth:`InterPodAffinityState.with_pod` returns a copy).

Malformed terms of the *incoming* pod raise :class:`SelectorError` (kube-scheduler rejects
such a pod as UnschedulableAndUnresolvable); a malformed category of an *existing* pod's terms
is ignored (as ``NewPodInfo`` does). Not implemented: the scheduler arguments
``ignorePreferredTermsOfExistingPods`` (always false here) and the
``InterPodAffinityHostnameFastPath`` optimisation (same results).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from pyvolcano.api.matching import SelectorError, compile_label_selector
from pyvolcano.api.matching.errors import fail, show
from pyvolcano.api.matching.labels import EMPTY_LABELS, LabelSelector

__all__ = [
    "ERR_REASON_AFFINITY_RULES",
    "ERR_REASON_ANTI_AFFINITY_RULES",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "AffinityTerm",
    "ExistingPod",
    "InterPodAffinityState",
    "PodAffinityTerms",
    "compile_pod_affinity_terms",
    "filter_node",
    "has_pod_affinity_terms",
    "is_trivial",
    "prefilter",
    "score_nodes",
]

ERR_REASON_AFFINITY_RULES: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES: Final = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"

_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"

NamespaceLabels = Mapping[str, Mapping[str, str]]
TopologyPair = tuple[str, str]


# ----------------------------------------------------------------------------- terms


class AffinityTerm:
    """A compiled ``PodAffinityTerm`` (with its weight; 0 for required terms)."""

    __slots__ = ("_ns_all", "_ns_none", "namespace_selector", "namespaces", "selector", "topology_key",
                 "weight")

    def __init__(self, namespaces: frozenset[str], namespace_selector: LabelSelector, selector: LabelSelector,
                 topology_key: str, weight: int = 0) -> None:
        self.namespaces = namespaces
        self.namespace_selector = namespace_selector
        self.selector = selector
        self.topology_key = topology_key
        self.weight = weight
        self._ns_none = namespace_selector.is_nothing
        self._ns_all = namespace_selector.is_everything

    def matches(self, namespace: str, labels: Mapping[str, str],
                namespace_labels: NamespaceLabels | None) -> bool:
        """Does a pod in ``namespace`` with ``labels`` match this term?"""
        if namespace not in self.namespaces:
            if self._ns_none:
                return False
            if not self._ns_all:
                ns_labels = namespace_labels.get(namespace, EMPTY_LABELS) if namespace_labels \
                    else EMPTY_LABELS
                if not self.namespace_selector.matches(ns_labels):
                    return False
        return self.selector.matches(labels)

    def __repr__(self) -> str:
        return (f"AffinityTerm(topology_key={self.topology_key!r}, weight={self.weight}, "
                f"namespaces={sorted(self.namespaces)!r}, selector={self.selector!r})")


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """All compiled pod (anti-)affinity terms of one pod."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()


_NO_TERMS: Final = PodAffinityTerms()


def _seq(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise fail(path, f"got {show(value)}; expected a list")
    return value


def _compile_term(namespace: str, labels: Mapping[str, str], raw: Any, path: str,
                  weight: int) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise fail(path, f"got {show(raw)}; expected a pod affinity term mapping")
    selector = compile_label_selector(raw.get("labelSelector"), f"{path}.labelSelector")
    match_keys = _seq(raw.get("matchLabelKeys"), f"{path}.matchLabelKeys")
    mismatch_keys = _seq(raw.get("mismatchLabelKeys"), f"{path}.mismatchLabelKeys")
    if match_keys or mismatch_keys:
        selector = selector.merged({k: labels[k] for k in match_keys if k in labels},
                                   {k: labels[k] for k in mismatch_keys if k in labels})
    ns_raw = raw.get("namespaceSelector")
    namespaces = _seq(raw.get("namespaces"), f"{path}.namespaces")
    ns_selector = compile_label_selector(ns_raw, f"{path}.namespaceSelector")
    ns_set = frozenset((namespace,)) if not namespaces and ns_raw is None else frozenset(namespaces)
    key = raw.get("topologyKey") or ""
    if not isinstance(key, str):
        raise fail(f"{path}.topologyKey", f"got {show(key)}; expected a label key")
    return AffinityTerm(ns_set, ns_selector, selector, key, weight)


def _compile_category(namespace: str, labels: Mapping[str, str], part: Any, field: str, path: str,
                      weighted: bool) -> tuple[AffinityTerm, ...]:
    if part is None:
        return ()
    if not isinstance(part, Mapping):
        raise fail(path, f"got {show(part)}; expected a pod (anti-)affinity mapping")
    fp = f"{path}.{field}"
    out: list[AffinityTerm] = []
    for i, item in enumerate(_seq(part.get(field), fp)):
        ip = f"{fp}[{i}]"
        if not weighted:
            out.append(_compile_term(namespace, labels, item, ip, 0))
            continue
        if not isinstance(item, Mapping):
            raise fail(ip, f"got {show(item)}; expected a {{weight, podAffinityTerm}} mapping")
        w = item.get("weight")
        if not isinstance(w, int) or isinstance(w, bool):
            raise fail(f"{ip}.weight", f"got {show(w)}; expected an integer")
        out.append(_compile_term(namespace, labels, item.get("podAffinityTerm"), f"{ip}.podAffinityTerm", w))
    return tuple(out)


def compile_pod_affinity_terms(namespace: str, labels: Mapping[str, str], affinity: Mapping[str, Any] | None,
                               *, path: str = "spec.affinity", lenient: bool = False) -> PodAffinityTerms:
    """Compile a pod's ``podAffinity`` / ``podAntiAffinity`` terms.

    Raises :class:`SelectorError` for malformed terms unless ``lenient``, in which case a
    category containing a malformed term is treated as empty.
    """
    if not affinity:
        return _NO_TERMS
    pa = affinity.get("podAffinity")
    paa = affinity.get("podAntiAffinity")
    if pa is None and paa is None:
        return _NO_TERMS
    parts: list[tuple[AffinityTerm, ...]] = []
    for part, kind in ((pa, "podAffinity"), (paa, "podAntiAffinity")):
        for field, weighted in ((_REQUIRED, False), (_PREFERRED, True)):
            try:
                parts.append(_compile_category(namespace, labels, part, field, f"{path}.{kind}", weighted))
            except SelectorError:
                if not lenient:
                    raise
                parts.append(())
    return PodAffinityTerms(required_affinity=parts[0], preferred_affinity=parts[1],
                            required_anti_affinity=parts[2], preferred_anti_affinity=parts[3])


def has_pod_affinity_terms(affinity: Mapping[str, Any] | None) -> bool:
    """Does ``spec.affinity`` carry any pod affinity or anti-affinity term (required or preferred)?"""
    if not affinity:
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(kind)
        if isinstance(part, Mapping) and (part.get(_REQUIRED) or part.get(_PREFERRED)):
            return True
    return False


@dataclass(frozen=True)
class ExistingPod:
    """A pod already placed (or nominated) on ``node_name``."""

    namespace: str
    labels: Mapping[str, str]
    node_name: str
    affinity: Mapping[str, Any] | None = None

    @property
    def terms(self) -> PodAffinityTerms:
        """Compiled terms (lenient: a malformed category is ignored); cached on the instance."""
        cached: PodAffinityTerms | None = self.__dict__.get("_terms")
        if cached is None:
            cached = compile_pod_affinity_terms(self.namespace, self.labels, self.affinity, lenient=True) \
                if self.affinity else _NO_TERMS
            # not a dataclass field: invisible to __eq__/__repr__; bypasses frozen on purpose
            object.__setattr__(self, "_terms", cached)
        return cached


# ----------------------------------------------------------------------------- filter


def _bump(counts: dict[TopologyPair, int], pair: TopologyPair, delta: int) -> None:
    n = counts.get(pair, 0) + delta
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


class InterPodAffinityState:
    """Result of :func:`prefilter` for one incoming pod (treat as immutable)."""

    __slots__ = ("affinity_counts", "anti_affinity_counts", "existing_anti_affinity_counts",
                 "namespace_labels", "pod_labels", "pod_namespace", "required_affinity",
                 "required_anti_affinity", "self_match")

    def __init__(self, pod_namespace: str, pod_labels: Mapping[str, str], terms: PodAffinityTerms,
                 affinity_counts: dict[TopologyPair, int], anti_affinity_counts: dict[TopologyPair, int],
                 existing_anti_affinity_counts: dict[TopologyPair, int],
                 namespace_labels: NamespaceLabels | None) -> None:
        self.pod_namespace = pod_namespace
        self.pod_labels = pod_labels
        self.required_affinity = terms.required_affinity
        self.required_anti_affinity = terms.required_anti_affinity
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.namespace_labels = namespace_labels
        # does the incoming pod match all of its own required affinity terms?
        self.self_match = bool(terms.required_affinity) and all(
            t.matches(pod_namespace, pod_labels, namespace_labels) for t in terms.required_affinity)

    @property
    def is_trivial(self) -> bool:
        """True when :func:`filter_node` accepts every node (kube-scheduler PreFilter "Skip")."""
        return not self.required_affinity and not self.required_anti_affinity \
            and not self.existing_anti_affinity_counts

    def with_pod(self, pod: ExistingPod, pod_node_labels: Mapping[str, str],
                 delta: int = 1) -> InterPodAffinityState:
        """A copy updated for ``pod`` added (``delta=1``) to or removed (``-1``) from a node with
        ``pod_node_labels`` (kube-scheduler ``AddPod`` / ``RemovePod`` for preemption simulation).

        Unlike kube-scheduler, a trivial state is updated too (kube-scheduler skips the plugin
        entirely once PreFilter returned Skip).
        """
        aff = dict(self.affinity_counts)
        anti = dict(self.anti_affinity_counts)
        existing = dict(self.existing_anti_affinity_counts)
        ns_labels = self.namespace_labels
        for t in pod.terms.required_anti_affinity:
            if t.matches(self.pod_namespace, self.pod_labels, ns_labels):
                v = pod_node_labels.get(t.topology_key)
                if v is not None:
                    _bump(existing, (t.topology_key, v), delta)
        req = self.required_affinity
        if req and all(t.matches(pod.namespace, pod.labels, ns_labels) for t in req):
            for t in req:
                v = pod_node_labels.get(t.topology_key)
                if v is not None:
                    _bump(aff, (t.topology_key, v), delta)
        for t in self.required_anti_affinity:
            if t.matches(pod.namespace, pod.labels, ns_labels):
                v = pod_node_labels.get(t.topology_key)
                if v is not None:
                    _bump(anti, (t.topology_key, v), delta)
        new = object.__new__(InterPodAffinityState)
        new.pod_namespace = self.pod_namespace
        new.pod_labels = self.pod_labels
        new.required_affinity = self.required_affinity
        new.required_anti_affinity = self.required_anti_affinity
        new.affinity_counts = aff
        new.anti_affinity_counts = anti
        new.existing_anti_affinity_counts = existing
        new.namespace_labels = ns_labels
        new.self_match = self.self_match
        return new


def prefilter(pod_namespace: str, pod_labels: Mapping[str, str], affinity: Mapping[str, Any] | None,
              existing: Iterable[ExistingPod], node_labels: Mapping[str, Mapping[str, str]],
              namespace_labels: NamespaceLabels | None = None) -> InterPodAffinityState:
    """kube-scheduler ``InterPodAffinity.PreFilter``: count matches per topology pair once.

    ``node_labels`` maps node name -> labels; existing pods on unknown nodes are ignored.
    Raises :class:`SelectorError` if the incoming pod's terms are malformed.

    Cost: one pass over ``existing``. When the incoming pod has no required pod (anti-)affinity
    terms only existing pods with required anti-affinity can matter, so callers holding an
    index may pass just those (kube-scheduler's ``HavePodsWithRequiredAntiAffinityList``).
    """
    terms = compile_pod_affinity_terms(pod_namespace, pod_labels, affinity)
    req_aff = terms.required_affinity
    req_anti = terms.required_anti_affinity
    aff: dict[TopologyPair, int] = {}
    anti: dict[TopologyPair, int] = {}
    existing_anti: dict[TopologyPair, int] = {}
    scan_incoming = bool(req_aff or req_anti)
    for ep in existing:
        ep_anti = ep.terms.required_anti_affinity if ep.affinity is not None else ()
        if not ep_anti and not scan_incoming:
            continue
        nl = node_labels.get(ep.node_name)
        if nl is None:
            continue
        if ep_anti:
            for t in ep_anti:
                if t.matches(pod_namespace, pod_labels, namespace_labels):
                    v = nl.get(t.topology_key)
                    if v is not None:
                        pair = (t.topology_key, v)
                        existing_anti[pair] = existing_anti.get(pair, 0) + 1
        if not scan_incoming:
            continue
        if req_aff:
            for t in req_aff:
                if not t.matches(ep.namespace, ep.labels, namespace_labels):
                    break
            else:
                for t in req_aff:
                    v = nl.get(t.topology_key)
                    if v is not None:
                        pair = (t.topology_key, v)
                        aff[pair] = aff.get(pair, 0) + 1
        for t in req_anti:
            if t.matches(ep.namespace, ep.labels, namespace_labels):
                v = nl.get(t.topology_key)
                if v is not None:
                    pair = (t.topology_key, v)
                    anti[pair] = anti.get(pair, 0) + 1
    return InterPodAffinityState(pod_namespace, pod_labels, terms, aff, anti, existing_anti, namespace_labels)


def is_trivial(state: InterPodAffinityState) -> bool:
    """Fast-path check: does :func:`filter_node` accept every node for this state?"""
    return state.is_trivial


def filter_node(state: InterPodAffinityState, node_name: str, node_labels: Mapping[str, str]) -> str | None:
    """kube-scheduler ``InterPodAffinity.Filter``: ``None`` if the node fits, else the reason."""
    req_aff = state.required_affinity
    if req_aff:
        counts = state.affinity_counts
        pods_exist = True
        for t in req_aff:
            v = node_labels.get(t.topology_key)
            if v is None:
                return ERR_REASON_AFFINITY_RULES
            if counts.get((t.topology_key, v), 0) <= 0:
                pods_exist = False
        if not pods_exist and (counts or not state.self_match):
            return ERR_REASON_AFFINITY_RULES
    anti = state.anti_affinity_counts
    if anti:
        for t in state.required_anti_affinity:
            v = node_labels.get(t.topology_key)
            if v is not None and anti.get((t.topology_key, v), 0) > 0:
                return ERR_REASON_ANTI_AFFINITY_RULES
    existing = state.existing_anti_affinity_counts
    if existing:
        for key, value in node_labels.items():
            if existing.get((key, value), 0) > 0:
                return ERR_REASON_EXISTING_ANTI_AFFINITY
    return None


# ----------------------------------------------------------------------------- score


def _add(topo: dict[str, dict[str, int]], key: str, node_labels: Mapping[str, str], amount: int) -> None:
    v = node_labels.get(key)
    if v is None:
        return
    per_value = topo.get(key)
    if per_value is None:
        per_value = topo[key] = {}
    per_value[v] = per_value.get(v, 0) + amount


def score_nodes(pod_namespace: str, pod_labels: Mapping[str, str], affinity: Mapping[str, Any] | None,
                existing: Iterable[ExistingPod], node_labels: Mapping[str, Mapping[str, str]],
                candidate_nodes: Sequence[str], *, hard_pod_affinity_weight: int = 1,
                namespace_labels: NamespaceLabels | None = None) -> npt.NDArray[np.int64]:
    """kube-scheduler ``InterPodAffinity`` PreScore + Score + NormalizeScore.

    Returns one normalised score (0..100, ``int64``) per entry of ``candidate_nodes``.
    Raises :class:`SelectorError` if the incoming pod's terms are malformed.
    """
    n = len(candidate_nodes)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    terms = compile_pod_affinity_terms(pod_namespace, pod_labels, affinity)
    pref_aff = terms.preferred_affinity
    pref_anti = terms.preferred_anti_affinity
    has_constraints = bool(pref_aff or pref_anti)
    topo: dict[str, dict[str, int]] = {}
    for ep in existing:
        if ep.affinity is None and not has_constraints:
            continue
        nl = node_labels.get(ep.node_name)
        if not nl:
            continue
        if has_constraints:
            for t in pref_aff:
                if t.matches(ep.namespace, ep.labels, namespace_labels):
                    _add(topo, t.topology_key, nl, t.weight)
            for t in pref_anti:
                if t.matches(ep.namespace, ep.labels, namespace_labels):
                    _add(topo, t.topology_key, nl, -t.weight)
        if ep.affinity is None:
            continue
        et = ep.terms
        if hard_pod_affinity_weight > 0:
            for t in et.required_affinity:
                if t.matches(pod_namespace, pod_labels, namespace_labels):
                    _add(topo, t.topology_key, nl, hard_pod_affinity_weight)
        for t in et.preferred_affinity:
            if t.matches(pod_namespace, pod_labels, namespace_labels):
                _add(topo, t.topology_key, nl, t.weight)
        for t in et.preferred_anti_affinity:
            if t.matches(pod_namespace, pod_labels, namespace_labels):
                _add(topo, t.topology_key, nl, -t.weight)
    if not topo:
        return out
    items = list(topo.items())
    raw = [0] * n
    for j, name in enumerate(candidate_nodes):
        cl = node_labels.get(name, EMPTY_LABELS)
        s = 0
        for key, per_value in items:
            v = cl.get(key)
            if v is not None:
                s += per_value.get(v, 0)
        raw[j] = s
    lo = min(raw)
    diff = max(raw) - lo
    if diff > 0:
        for j, s in enumerate(raw):
            out[j] = int(100.0 * ((s - lo) / diff))
    return out
