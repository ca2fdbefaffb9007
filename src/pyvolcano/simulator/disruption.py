"""PodDisruptionBudgets in a simulation: kube-controller-manager's disruption controller
(``pkg/controller/disruption``), which keeps each budget's ``status`` that the pdb plugin reads.

Design. For each PodDisruptionBudget the controller keeps the pods its selector matches in its
namespace, and which of them are healthy (``Ready`` and not being deleted), updated from the
store's watch events (O(budgets of the namespace) per pod event). It writes the status when it
changes:

* ``minAvailable`` an integer: ``expectedPods`` = the matching pods, ``desiredHealthy`` =
  ``minAvailable``;
* ``minAvailable`` a percentage, or ``maxUnavailable``: ``expectedPods`` is the scale of the
  pods' controllers (the ``spec.replicas`` of the ReplicaSets and StatefulSets that own them,
  each counted once); ``desiredHealthy`` = the percentage of it rounded up, or ``expectedPods``
  less ``maxUnavailable``. A matching pod without such a controller (a Volcano Job's pod: the
  Job CRD has no scale subresource) makes the status unknown, and nothing may be disrupted;
* neither: nothing is desired;
* ``disruptionsAllowed`` = ``currentHealthy`` − ``desiredHealthy``, or 0 when that is negative
  or nothing is expected; ``disruptedPods`` stays empty (the scheduler deletes pods, it does
  not evict them through the Eviction API).

Invariants: a simulation without PodDisruptionBudgets does no work here beyond one dictionary
lookup per event.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api import matching
from pyvolcano.store.base import NotFound, Store, StoreError, WatchEvent

__all__ = ["DisruptionController"]

logger = logging.getLogger(__name__)

_SCALED_KINDS = ("ReplicaSet", "StatefulSet")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}


def _part(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = obj.get(key)
    return v if isinstance(v, Mapping) else {}


def _healthy(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady`` and not being deleted."""
    if _meta(pod).get("deletionTimestamp"):
        return False
    status = _part(pod, "status")
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _controller(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in _meta(pod).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("kind") or ""), str(ref.get("name") or "")
    return None


@dataclass(slots=True)
class _Budget:
    selector: matching.LabelSelector
    min_available: Any
    max_unavailable: Any
    pods: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # matching pods by uid


class DisruptionController:
    """Keeps the PodDisruptionBudgets' status (see the module docstring)."""

    name = "disruption-controller"
    watches = frozenset({"Pod", "PodDisruptionBudget", *_SCALED_KINDS})

    def __init__(self, store: Store):
        self.store = store
        self._budgets: dict[str, dict[str, _Budget]] = {}  # namespace -> name -> budget
        self._dirty: set[tuple[str, str]] = set()

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Pod":
            ns = str(_meta(ev.object).get("namespace") or "default")
            budgets = self._budgets.get(ns)
            if budgets:
                self._pod_changed(ns, budgets, ev)
        elif ev.kind == "PodDisruptionBudget":
            md = _meta(ev.object)
            ns, name = str(md.get("namespace") or "default"), str(md.get("name") or "")
            if ev.type == "DELETED":
                self._budgets.get(ns, {}).pop(name, None)
                return
            budget = self._budget_of(ns, ev.object)
            if budget is not None:
                self._budgets.setdefault(ns, {})[name] = budget
                self._dirty.add((ns, name))
        elif ev.kind in _SCALED_KINDS:
            ns = str(_meta(ev.object).get("namespace") or "default")
            self._dirty.update((ns, name) for name in self._budgets.get(ns, {}))

    def _budget_of(self, ns: str, pdb: Mapping[str, Any]) -> _Budget | None:
        spec = _part(pdb, "spec")
        try:
            selector = matching.compile_label_selector(spec.get("selector"), "spec.selector")
        except matching.SelectorError as e:
            logger.warning("PodDisruptionBudget %s/%s: %s", ns, _meta(pdb).get("name"), e)
            return None
        budget = _Budget(selector, spec.get("minAvailable"), spec.get("maxUnavailable"))
        for pod in self.store.list("Pod", ns):
            if selector.matches(_meta(pod).get("labels") or {}):
                budget.pods[str(_meta(pod).get("uid") or "")] = pod
        return budget

    def _pod_changed(self, ns: str, budgets: dict[str, _Budget], ev: WatchEvent) -> None:
        md = _meta(ev.object)
        uid = str(md.get("uid") or "")
        labels = md.get("labels") or {}
        for name, budget in budgets.items():
            had = budget.pods.pop(uid, None)
            if ev.type != "DELETED" and budget.selector.matches(labels):
                budget.pods[uid] = ev.object
            if had is not None or uid in budget.pods:
                self._dirty.add((ns, name))

    def run(self, now: float) -> float | None:
        dirty, self._dirty = self._dirty, set()
        for ns, name in sorted(dirty):
            budget = self._budgets.get(ns, {}).get(name)
            if budget is not None:
                self._write_status(ns, name, budget)
        return None

    def _expected_scale(self, ns: str, budget: _Budget) -> int | None:
        """``getExpectedScale``: the replicas of the pods' controllers, or None when one has none."""
        seen: set[tuple[str, str]] = set()
        total = 0
        for pod in budget.pods.values():
            owner = _controller(pod)
            if owner is None or owner[0] not in _SCALED_KINDS:
                return None
            if owner in seen:
                continue
            seen.add(owner)
            try:
                workload = self.store.get(owner[0], ns, owner[1])
            except StoreError:
                return None
            replicas = (workload.get("spec") or {}).get("replicas")
            total += 1 if replicas is None else int(replicas)
        return total

    def _write_status(self, ns: str, name: str, budget: _Budget) -> None:
        healthy = sum(1 for pod in budget.pods.values() if _healthy(pod))
        expected, desired = 0, 0
        known = True
        min_available, max_unavailable = budget.min_available, budget.max_unavailable
        if max_unavailable is not None or isinstance(min_available, str):
            scale = self._expected_scale(ns, budget)
            if scale is None:
                known = False
            else:
                expected = scale
                if max_unavailable is not None:
                    desired = max(expected - _scaled(max_unavailable, expected), 0)
                else:
                    desired = _scaled(min_available, expected)
        elif min_available is not None:
            expected, desired = len(budget.pods), int(min_available)
        allowed = healthy - desired if known and expected > 0 else 0
        status: dict[str, Any] = {"currentHealthy": healthy, "desiredHealthy": desired, "disruptionsAllowed":
                                  max(allowed, 0), "expectedPods": expected}
        try:
            pdb = self.store.get("PodDisruptionBudget", ns, name)
            old = pdb.get("status") or {}
            if all(old.get(k) == v for k, v in status.items()) and not old.get("disruptedPods"):
                return
            self.store.update_status({**pdb, "status": {**old, **status, "disruptedPods": {}}})
        except NotFound:
            return
        except StoreError as e:
            logger.warning("PodDisruptionBudget %s/%s: status not written: %s", ns, name, e)
            self._dirty.add((ns, name))


def _scaled(value: Any, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)
