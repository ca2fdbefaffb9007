"""cdp plugin: cooldown protection of just-started pods (upstream pkg/scheduler/plugins/cdp/cdp.go).

Design. An elastic job's pods can be preempted soon after they start and come back, over and
over; a pod that carries ``volcano.sh/cooldown-time`` (the label, else the annotation of that
name; a Go duration such as ``10m``) is not a victim for that long after it was scheduled. The
filter is registered as Preemptable and Reclaimable (both always Permit, with the candidates it
keeps):

* a candidate without the key, or whose value is not a Go duration, stays a victim;
* a candidate whose pod phase is ``Running`` and whose first ``PodScheduled`` condition with
  status True has ``lastTransitionTime + cooldown`` after now is dropped;
* every other candidate stays a victim (a pod not yet Running, or without that condition).

"Now" is the session's clock (``Session.now``), never the wall clock. When the filter keeps a
pod, it asks the session to be revisited when that pod's cooldown ends
(``Session.revisit_at``), so that a loop which runs sessions only after a change (the
simulator) runs one then.

Upstream registers no UnifiedEvictable callback, so gangpreempt and gangreclaim ignore the
cooldown; ``enableGangEviction: true`` (a pyvolcano argument, off by default) registers the
filter there too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.manifest import parse_time
from pyvolcano.api.names import COOLDOWN_KEY
from pyvolcano.api.objects import Pod
from pyvolcano.api.task import TaskInfo
from pyvolcano.diagnosis.model import LimitFigure, PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import EvictionContext, Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "ENABLE_GANG_EVICTION", "NAME", "CooldownProtection", "cooldown_of", "new", "protected_until"]

NAME: Final = "cdp"
ENABLE_GANG_EVICTION: Final = "enableGangEviction"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(ENABLE_GANG_EVICTION, note="pyvolcano's own: upstream does not filter gangpreempt/gangreclaim victims"),
))


def cooldown_of(pod: Pod) -> float | None:
    """The pod's cooldown in seconds (label first, then annotation); None without one or when it
    is not a Go duration (upstream logs a warning and leaves the pod unprotected)."""
    text = pod.labels.get(COOLDOWN_KEY)
    if text is None:
        text = pod.annotations.get(COOLDOWN_KEY)
        if text is None:
            return None
    if text != text.strip():
        return None  # Go's ParseDuration takes no surrounding blanks
    return parse_duration(text)


def protected_until(pod: Pod) -> float | None:
    """When the pod's cooldown ends (seconds since the epoch), or None when it has none that
    applies: no valid cooldown, not Running, or no ``PodScheduled=True`` condition with a time."""
    cooldown = cooldown_of(pod)
    if cooldown is None or pod.phase != "Running":
        return None
    for c in pod.conditions:
        if c.get("type") == "PodScheduled" and c.get("status") == "True":
            since = parse_time(c.get("lastTransitionTime"))
            return None if since is None else since + cooldown
    return None


class CooldownProtection:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.gang_eviction = args.get_bool(ENABLE_GANG_EVICTION, False)

    def keep_victims(self, ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates out of their cooldown at the session's time; the session is asked to
        come back when the first protected one's cooldown ends."""
        out = []
        for task in candidates:
            until = protected_until(task.pod)
            if until is None or not until > ssn.now:
                out.append(task)
            else:
                ssn.revisit_at(until)
        return out

    def explain_victims(self, ssn: Session, action: str, dropped: list[TaskInfo]) -> PluginBlock:
        """The cooldowns that keep ``dropped`` from ``action``: figures in seconds (``limit`` the
        cooldown, ``used`` the time since the pod was scheduled, ``requested`` the time left)."""
        figures = []
        for task in sorted(dropped, key=lambda t: t.key):
            until, cooldown = protected_until(task.pod), cooldown_of(task.pod)
            if until is None or cooldown is None:
                continue
            figures.append(LimitFigure(NAME, f"Pod {task.key}", "cooldown seconds", cooldown,
                                       round(ssn.now - (until - cooldown), 3), round(until - ssn.now, 3)))
        soonest = min(figures, key=lambda f: f.requested, default=None)
        hint = (f"{len(dropped)} pod(s) holding the room are in their cooldown ({COOLDOWN_KEY})"
                + (f"; the first to come out is {soonest.object.removeprefix('Pod ')}, in {soonest.requested:g}s"
                   if soonest is not None else "") + f": {action} can take them after that")
        return PluginBlock(Reason.PREEMPTION_COOLDOWN,
                           f"the cdp plugin keeps {len(dropped)} pod(s) that hold the room: they started too recently",
                           hint, limits=tuple(figures))

    def on_session_open(self, ssn: Session) -> None:
        def keep(candidates: list[TaskInfo]) -> list[TaskInfo]:
            return self.keep_victims(ssn, candidates)

        def evictable(_evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return keep(candidates), Vote.PERMIT

        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)
        if self.gang_eviction:
            def gang_evictable(_ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
                return keep(candidates), Vote.PERMIT

            ssn.add_unified_evictable_fn(NAME, gang_evictable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(arguments: Mapping[str, Any]) -> CooldownProtection:
    return CooldownProtection(arguments)
