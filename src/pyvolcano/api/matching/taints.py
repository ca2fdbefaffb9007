"""Taints and tolerations (kube-scheduler ``TaintToleration`` and ``NodeUnschedulable``).

Reproduces:

* ``k8s.io/api/core/v1/toleration.go`` (``Toleration.ToleratesTaint``): a toleration with a
  non-empty effect must have the taint's effect; a non-empty key must equal the taint's key;
  operator ``Equal`` (or empty) compares values, ``Exists`` matches any value; so ``Exists``
  with an empty key and empty effect tolerates every taint.
* ``k8s.io/component-helpers/scheduling/corev1/helpers.go``
  (``FindMatchingUntoleratedTaint``): the first taint, among those whose effect is selected,
  that no toleration tolerates.
* ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``: Filter considers
  ``NoSchedule`` and ``NoExecute`` taints; the raw score counts ``PreferNoSchedule`` taints not
  tolerated by the tolerations whose effect is ``PreferNoSchedule`` or empty (normalised later
  with ``default_normalize(..., reverse=True)``).
* ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``: an
  ``spec.unschedulable`` node is acceptable only to pods tolerating the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint.

Not implemented: the alpha ``Gt``/``Lt`` toleration operators (feature gate
``TaintTolerationComparisonOperators``); such tolerations tolerate nothing, as in a cluster
without the gate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "ERR_REASON_UNSCHEDULABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "count_intolerable_prefer_no_schedule",
    "find_untolerated_taint",
    "node_unschedulable_tolerated",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
    "untolerated_taint_reason",
]

TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
_DO_NOT_SCHEDULE: Final = ("NoSchedule", "NoExecute")


def toleration_tolerates_taint(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Does this single toleration tolerate ``taint``?"""
    effect = tol.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = tol.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Does any toleration tolerate ``taint``?"""
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_untolerated_taint(taints: Sequence[Mapping[str, Any]] | None,
                           tolerations: Sequence[Mapping[str, Any]] | None,
                           effects: Iterable[str] = _DO_NOT_SCHEDULE) -> Mapping[str, Any] | None:
    """First taint whose effect is in ``effects`` and that no toleration tolerates, else None."""
    if not taints:
        return None
    wanted = frozenset(effects)
    tols = tolerations or ()
    for taint in taints:
        if (taint.get("effect") or "") not in wanted:
            continue
        if not tolerations_tolerate_taint(tols, taint):
            return taint
    return None


def untolerated_taint_reason(taint: Mapping[str, Any]) -> str:
    """The kube-scheduler ``TaintToleration`` filter reason for an untolerated taint."""
    return f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"


def count_intolerable_prefer_no_schedule(taints: Sequence[Mapping[str, Any]] | None,
                                         tolerations: Sequence[Mapping[str, Any]] | None) -> int:
    """Raw ``TaintToleration`` score: # ``PreferNoSchedule`` taints left untolerated."""
    if not taints:
        return 0
    relevant = [t for t in (tolerations or ()) if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    count = 0
    for taint in taints:
        if taint.get("effect") != "PreferNoSchedule":
            continue
        if not tolerations_tolerate_taint(relevant, taint):
            count += 1
    return count


def node_unschedulable_tolerated(unschedulable: bool,
                                 tolerations: Sequence[Mapping[str, Any]] | None) -> bool:
    """``NodeUnschedulable`` filter: True when the pod may go to the node."""
    if not unschedulable:
        return True
    taint = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}
    return tolerations_tolerate_taint(tolerations or (), taint)
