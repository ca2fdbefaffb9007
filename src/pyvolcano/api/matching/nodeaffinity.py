"""Node selector and node affinity (the kube-scheduler ``NodeAffinity`` filter and score).

Reproduces:

* ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``
  (``GetRequiredNodeAffinity``, ``LazyErrorNodeSelector``, ``PreferredSchedulingTerms``):
  ``nodeSelectorTerms`` are ORed, the requirements inside a term are ANDed; an empty term
  (neither ``matchExpressions`` nor ``matchFields``) selects nothing; a non-null
  ``requiredDuringSchedulingIgnoredDuringExecution`` with no terms selects nothing; a term that
  fails to parse never matches but does not stop the other terms ("lazy errors", kept for
  backwards compatibility). ``matchFields`` only knows ``metadata.name`` with ``In``/``NotIn``
  and exactly one value; it is ignored for a node whose name is empty.
* ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go``: the filter requires both
  ``spec.nodeSelector`` (every pair equal) and the required affinity; the score is the sum of
  the weights of matching preferred terms (weight-0 and empty terms are skipped), normalised
  later with :func:`pyvolcano.api.matching.normalize.default_normalize`.

Design: :class:`RequiredNodeAffinity` and :class:`PreferredNodeAffinity` compile a pod's terms
once; the module-level functions are convenience wrappers that compile on every call.

Deviation: a preferred term that fails to parse contributes 0 here, whereas kube-scheduler
fails PreScore for the pod (API validation rejects such pods anyway).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pyvolcano.api.matching.errors import SelectorError, fail, show
from pyvolcano.api.matching.labels import Requirement, compile_requirement

__all__ = [
    "ERR_REASON_NODE_AFFINITY",
    "NodeSelectorTerm",
    "PreferredNodeAffinity",
    "RequiredNodeAffinity",
    "compile_node_selector_term",
    "node_selector_matches",
    "pod_matches_node_selector_and_affinity",
    "preferred_node_affinity_score",
    "required_node_affinity_matches",
]

ERR_REASON_NODE_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
NODE_NAME_FIELD: Final = "metadata.name"


class NodeSelectorTerm:
    """A compiled, non-empty ``NodeSelectorTerm``."""

    __slots__ = ("_fields", "_reqs")

    def __init__(self, requirements: Sequence[Requirement], fields: Sequence[tuple[bool, str]]) -> None:
        self._reqs = tuple(requirements)
        # (is_in, value) pairs over metadata.name
        self._fields = tuple(fields)

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for r in self._reqs:
            if not r.matches(node_labels):
                return False
        if self._fields and node_name:
            for is_in, value in self._fields:
                if (node_name == value) != is_in:
                    return False
        return True


def _list(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise fail(path, f"got {show(value)}; expected a list")
    return value


def compile_node_selector_term(term: Any, path: str) -> NodeSelectorTerm | None:
    """Compile one ``NodeSelectorTerm``; ``None`` for an empty term (which selects nothing).

    Raises :class:`SelectorError` when the term would fail to parse in kube-scheduler.
    """
    if not isinstance(term, Mapping):
        raise fail(path, f"got {show(term)}; expected a node selector term mapping "
                         "(matchExpressions / matchFields)")
    exprs = _list(term.get("matchExpressions"), f"{path}.matchExpressions")
    flds = _list(term.get("matchFields"), f"{path}.matchFields")
    if not exprs and not flds:
        return None
    reqs = [compile_requirement(e, f"{path}.matchExpressions[{i}]", node_selector=True)
            for i, e in enumerate(exprs)]
    fields: list[tuple[bool, str]] = []
    for i, f in enumerate(flds):
        fp = f"{path}.matchFields[{i}]"
        if not isinstance(f, Mapping):
            raise fail(fp, f"got {show(f)}; expected a {{key, operator, values}} mapping")
        if f.get("key") != NODE_NAME_FIELD:
            raise fail(f"{fp}.key", f"got {show(f.get('key'))}; expected {NODE_NAME_FIELD}")
        op = f.get("operator")
        if op not in ("In", "NotIn"):
            raise fail(f"{fp}.operator", f"got {show(op)}; expected one of In, NotIn")
        values = _list(f.get("values"), f"{fp}.values")
        if len(values) != 1 or not isinstance(values[0], str):
            raise fail(f"{fp}.values", f"got {show(values)}; expected exactly one node name")
        fields.append((op == "In", values[0]))
    return NodeSelectorTerm(reqs, fields)


def _node_affinity(affinity: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not affinity:
        return None
    na = affinity.get("nodeAffinity")
    return na if isinstance(na, Mapping) else None


class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: pod ``nodeSelector`` AND required node affinity."""

    __slots__ = ("_has_required", "_node_selector", "_terms")

    def __init__(self, node_selector: Mapping[str, str] | None, affinity: Mapping[str, Any] | None) -> None:
        self._node_selector: tuple[tuple[str, str], ...] = (
            tuple(node_selector.items()) if node_selector else ())
        self._terms: tuple[NodeSelectorTerm, ...] = ()
        self._has_required = False
        na = _node_affinity(affinity)
        required = na.get("requiredDuringSchedulingIgnoredDuringExecution") if na is not None else None
        if required is not None:
            self._has_required = True
            raw_terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
            terms: list[NodeSelectorTerm] = []
            if isinstance(raw_terms, Sequence) and not isinstance(raw_terms, (str, bytes)):
                for i, t in enumerate(raw_terms):
                    try:
                        compiled = compile_node_selector_term(t, f"nodeSelectorTerms[{i}]")
                    except SelectorError:
                        continue  # lazy parse error: this term never matches
                    if compiled is not None:
                        terms.append(compiled)
            self._terms = tuple(terms)

    @property
    def is_trivial(self) -> bool:
        """True when every node matches (no nodeSelector, no required node affinity)."""
        return not self._node_selector and not self._has_required

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for k, v in self._node_selector:
            if node_labels.get(k) != v:
                return False
        if not self._has_required:
            return True
        return any(t.matches(node_name, node_labels) for t in self._terms)


class PreferredNodeAffinity:
    """Compiled ``preferredDuringSchedulingIgnoredDuringExecution`` node affinity terms."""

    __slots__ = ("_terms",)

    def __init__(self, affinity: Mapping[str, Any] | None) -> None:
        terms: list[tuple[NodeSelectorTerm, int]] = []
        na = _node_affinity(affinity)
        raw = na.get("preferredDuringSchedulingIgnoredDuringExecution") if na is not None else None
        if isinstance(raw, Sequence) and not isinstance(raw, (str, bytes)):
            for i, p in enumerate(raw):
                if not isinstance(p, Mapping):
                    continue
                weight = p.get("weight")
                if not isinstance(weight, int) or isinstance(weight, bool) or weight == 0:
                    continue
                try:
                    compiled = compile_node_selector_term(p.get("preference"), f"preferred[{i}].preference")
                except SelectorError:
                    continue
                if compiled is not None:
                    terms.append((compiled, weight))
        self._terms = tuple(terms)

    @property
    def is_trivial(self) -> bool:
        return not self._terms

    def score(self, node_name: str, node_labels: Mapping[str, str]) -> int:
        total = 0
        for term, weight in self._terms:
            if term.matches(node_name, node_labels):
                total += weight
        return total


def node_selector_matches(node_selector: Mapping[str, str] | None, node_labels: Mapping[str, str]) -> bool:
    """``spec.nodeSelector``: every pair must be present with an equal value (``None``/{} = all)."""
    if not node_selector:
        return True
    for k, v in node_selector.items():  # noqa: SIM110 - explicit loop: hot path
        if node_labels.get(k) != v:
            return False
    return True


def required_node_affinity_matches(affinity: Mapping[str, Any] | None, node_name: str,
                                   node_labels: Mapping[str, str]) -> bool:
    """Required node affinity of the pod's ``spec.affinity`` (``None`` = no constraint)."""
    return RequiredNodeAffinity(None, affinity).matches(node_name, node_labels)


def pod_matches_node_selector_and_affinity(node_selector: Mapping[str, str] | None,
                                           affinity: Mapping[str, Any] | None, node_name: str,
                                           node_labels: Mapping[str, str]) -> bool:
    """The ``NodeAffinity`` filter: nodeSelector AND required node affinity."""
    return RequiredNodeAffinity(node_selector, affinity).matches(node_name, node_labels)


def preferred_node_affinity_score(affinity: Mapping[str, Any] | None, node_name: str,
                                  node_labels: Mapping[str, str]) -> int:
    """Raw ``NodeAffinity`` score: Σ weights of the matching preferred terms."""
    return PreferredNodeAffinity(affinity).score(node_name, node_labels)
