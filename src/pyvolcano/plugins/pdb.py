"""pdb plugin: PodDisruptionBudgets guard eviction victims (upstream pkg/scheduler/plugins/pdb/pdb.go).

Design. One filter serves three extension points, as upstream registers it: VictimTasks
(shuffle), and Preemptable and Reclaimable (preempt, reclaim), where it always votes Permit
with the victims it keeps. The filter walks the candidates in the order given, with a copy of
every budget's ``status.disruptionsAllowed`` made for that call:

* a pod without any label is never kept (upstream skips it before looking at budgets);
* for each budget of the pod's namespace whose selector is not empty and matches the pod's
  labels, and that does not list the pod in ``status.disruptedPods``, the copy is decremented;
* a pod that takes any such copy below zero is dropped; every other pod is kept.

So the budget is shared by all candidates of one call (the victims on one node in preempt and
reclaim, every Running pod in shuffle): with one disruption allowed and two matching
candidates, only the first is kept. Budgets come from the session
(``Session.pod_disruption_budgets``, the cache's copy of the watched objects).

Upstream registers no UnifiedEvictable callback, so gangpreempt and gangreclaim ignore
budgets. ``enableGangEviction: true`` (a pyvolcano argument, off by default) registers the
same filter there too, with the candidates of one eviction domain sharing the budget.

Invariant: the filter reads only the session's budgets and the candidates' labels; it keeps
the candidates' order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.api.objects import PodDisruptionBudget
from pyvolcano.api.task import TaskInfo
from pyvolcano.diagnosis.model import LimitFigure, PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import EvictionContext, Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "ENABLE_GANG_EVICTION", "NAME", "Pdb", "budgets_by_namespace", "filter_victims", "new"]

NAME: Final = "pdb"
ENABLE_GANG_EVICTION: Final = "enableGangEviction"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(ENABLE_GANG_EVICTION, note="pyvolcano's own: upstream does not filter gangpreempt/gangreclaim victims"),
))


def budgets_by_namespace(budgets: Mapping[str, PodDisruptionBudget]) -> dict[str, list[PodDisruptionBudget]]:
    """The budgets that can select a pod (a non-empty selector), by namespace, in name order."""
    out: dict[str, list[PodDisruptionBudget]] = {}
    for _key, pdb in sorted(budgets.items()):
        if pdb.selector.is_nothing or pdb.selector.is_everything:
            continue  # upstream: a nil or empty selector matches nothing
        out.setdefault(pdb.namespace, []).append(pdb)
    return out


def filter_victims(by_namespace: Mapping[str, Sequence[PodDisruptionBudget]],
                   tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
    """The candidates that no budget protects, in their order (see the module docstring)."""
    allowed: dict[str, int] = {}
    victims: list[TaskInfo] = []
    for task in tasks:
        pod = task.pod
        if not pod.labels:
            continue  # upstream: a pod without labels is skipped, so never a victim
        violated = False
        for pdb in by_namespace.get(pod.namespace, ()):
            if not pdb.selector.matches(pod.labels) or pod.name in pdb.disrupted_pods:
                continue
            left = allowed.get(pdb.key, pdb.disruptions_allowed) - 1
            allowed[pdb.key] = left
            if left < 0:
                violated = True
        if not violated:
            victims.append(task)
    return victims


class Pdb:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.gang_eviction = args.get_bool(ENABLE_GANG_EVICTION, False)
        self.by_namespace: dict[str, list[PodDisruptionBudget]] = {}

    def keep_victims(self, ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The filter of one call, for the pending diagnosis."""
        return filter_victims(self.by_namespace, candidates)

    def explain_victims(self, ssn: Session, action: str, dropped: list[TaskInfo]) -> PluginBlock:
        """Which budgets keep ``dropped`` (the candidates the filter left out) from ``action``."""
        figures: list[LimitFigure] = []
        seen: set[str] = set()
        for task in dropped:
            for pdb in self.by_namespace.get(task.namespace, ()):
                if pdb.key in seen or not pdb.selector.matches(task.pod.labels):
                    continue
                seen.add(pdb.key)
                # The filter drops a pod only once the budget's allowance is used up.
                n = sum(1 for t in dropped if t.namespace == pdb.namespace and pdb.selector.matches(t.pod.labels))
                allowed = float(pdb.disruptions_allowed)
                figures.append(LimitFigure(NAME, f"PodDisruptionBudget {pdb.key}", "disruptionsAllowed", allowed, None,
                                           allowed + n))
        unlabelled = [t for t in dropped if not t.pod.labels]
        if figures:
            first = figures[0]
            hint = (f"{first.object} allows {first.limit:g} disruption(s) but making room would evict "
                    f"{first.requested:g} of its pods: {action} waits until it allows more (more of its pods healthy), "
                    f"or raise its maxUnavailable / lower its minAvailable")
        else:
            hint = (f"{len(unlabelled)} pod(s) holding the room have no labels, and the pdb plugin never evicts "
                    f"a pod without labels")
        message = f"the pdb plugin keeps {len(dropped)} of the pods that hold the room: " + (
            "their PodDisruptionBudgets allow no more disruptions" if figures else "they have no labels")
        return PluginBlock(Reason.PREEMPTION_DISRUPTION_BUDGET, message, hint, limits=tuple(figures))

    def on_session_open(self, ssn: Session) -> None:
        by_namespace = self.by_namespace = budgets_by_namespace(ssn.pod_disruption_budgets)

        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            return filter_victims(by_namespace, tasks)

        def evictable(_evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return filter_victims(by_namespace, candidates), Vote.PERMIT

        ssn.add_victim_tasks_fn(NAME, victim_tasks)
        ssn.add_reclaimable_fn(NAME, evictable)
        ssn.add_preemptable_fn(NAME, evictable)
        if self.gang_eviction:
            def gang_evictable(_ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
                return filter_victims(by_namespace, candidates), Vote.PERMIT

            ssn.add_unified_evictable_fn(NAME, gang_evictable)

    def on_session_close(self, ssn: Session) -> None:
        self.by_namespace = {}


def new(arguments: Mapping[str, Any]) -> Pdb:
    return Pdb(arguments)
