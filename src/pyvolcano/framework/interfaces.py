"""Protocols and small value types shared by the framework, actions and plugins.

Besides the :class:`Plugin` and :class:`Action` protocols every plugin and action implements,
some plugins export session state other components read (the simulator's deserved
resources, the pending diagnosis' quotas, the GPU state shared by the GPU plugins, the queue
metrics). Each export is a declared Protocol here, implemented by the plugins that export
it; the framework offers it as a session export (``Session.queue_quotas``,
``Session.hypernode_order_bounds``, ...) or readers test ``isinstance(plugin, Protocol)``,
instead of probing attributes by name or naming a plugin class, so the type checker sees both
sides.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.api.reservation import LoanTerm
    from pyvolcano.api.resource import Resource
    from pyvolcano.api.sub_job import SubJobInfo
    from pyvolcano.api.task import TaskInfo
    from pyvolcano.diagnosis.model import PluginBlock, QueueQuota
    from pyvolcano.framework.session import Session
    from pyvolcano.plugins.capacity.attrs import QueueAttr as CapacityQueueAttr
    from pyvolcano.plugins.gpu_session import SessionGpus

__all__ = [
    "Action",
    "ActionFactory",
    "CapacityStateExporter",
    "DeservedExporter",
    "DraQuotaExporter",
    "EnqueueExplainer",
    "EventHandler",
    "EvictionContext",
    "EvictionKind",
    "GpuSessionHolder",
    "HyperNodeScoreBounds",
    "Plugin",
    "PluginFactory",
    "PredicateExplainer",
    "ProportionStateExporter",
    "QuotaExporter",
    "TimedPlugin",
    "VictimExplainer",
    "Vote",
]


class Vote(enum.IntEnum):
    """A plugin's answer to a voting extension point (upstream util.Permit/Abstain/Reject)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


PluginFactory = Callable[[Mapping[str, Any]], Plugin]
"""A plugin module's ``new``: arguments (its tier entry's) → a plugin for one session."""


@runtime_checkable
class DeservedExporter(Protocol):
    """A plugin that computes each queue's deserved resources (proportion, capacity)."""

    def deserved_snapshot(self) -> dict[str, Resource]: ...


@runtime_checkable
class QuotaExporter(Protocol):
    """A plugin whose queue quotas allocate and enqueue check (read by the pending diagnosis)."""

    def quota_snapshot(self) -> dict[str, QueueQuota]: ...


@runtime_checkable
class AskedQuotaExporter(Protocol):
    """A quota plugin whose allocate limit follows what queues ask (proportion's deserved share
    is water-filled over each queue's request): the quota a queue would have if it asked
    ``extra`` more, as once a ``Pending`` gang, whose pods are not counted yet, is admitted."""

    def quota_if_asked(self, queue: str, extra: Resource) -> QueueQuota | None: ...


class ShareLender(Protocol):
    """A plugin that lets a queue's pods go above the queue's allocate limit for a while, out of
    other queues' idle share (the reservation plugin's ``reservation.lendShares``); read by
    proportion's Allocatable and Overused (``Session.share_lender``). Not an upstream
    extension point.

    ``lenders()`` are the queues whose idle share (deserved less allocated) may be lent now;
    ``loan_term(task)`` whether ``task`` would give a loan back before the lenders need their
    share (:class:`~pyvolcano.api.reservation.LoanTerm`); ``kept_back()`` what the lenders will
    need then, per resource: a task that would keep its loan past that time borrows only from the
    idle share less this."""

    def lenders(self) -> frozenset[str]: ...

    def loan_term(self, task: TaskInfo) -> LoanTerm: ...

    def kept_back(self) -> Mapping[str, float]: ...


class HyperNodeScoreBounds(Protocol):
    """A HyperNodeOrder scorer's scores known before any placement (network-topology-aware's),
    declared when it registers (``Session.add_hypernode_order_fn(bounds=...)``) and read by
    allocate's bounded HyperNode search (``Session.hypernode_order_bounds``).

    The scorer's score of a candidate is ``base_scores`` when no other candidate shares its
    score, else ``base_scores + tie_bonus × tie_bonus_bound``; neither depends on the
    placements a dry run makes."""

    @property
    def tie_bonus_bound(self) -> float: ...

    def base_scores(self, sub_job: SubJobInfo, candidates: list[str]) -> dict[str, float]: ...

    def tie_bonus(self, sub_job: SubJobInfo, hypernode: str) -> float: ...


@runtime_checkable
class DraQuotaExporter(Protocol):
    """A plugin with per-queue device quotas (capacity's ``deviceclass/<class>``), read by the
    pending diagnosis: the first class whose limit refuses ``task``, as (class, devices the task
    asks for, devices the queue holds, limit), or None."""

    def dra_shortfall(self, task: TaskInfo) -> tuple[str, int, int, int] | None: ...


@runtime_checkable
class GpuSessionHolder(Protocol):
    """A GPU plugin keeping the session's shared GPU state (the first one to ask creates it)."""

    session_gpus: SessionGpus | None


@runtime_checkable
class ProportionStateExporter(Protocol):
    """proportion's per-queue attributes this session (read by the queue metrics)."""

    queue_opts: Mapping[str, Any]


@runtime_checkable
class CapacityStateExporter(Protocol):
    """capacity's queue attributes this session and whether they form a hierarchy (read by
    the queue metrics); ``({}, False)`` outside a session."""

    def queue_attrs(self) -> tuple[Mapping[str, CapacityQueueAttr], bool]: ...


@runtime_checkable
class EnqueueExplainer(Protocol):
    """A JobEnqueueable plugin that can say why it kept a PodGroup Pending this session (read by
    the pending diagnosis; resourcequota, extender); None when its vote did not."""

    def explain_enqueue(self, ssn: Session, job: JobInfo) -> PluginBlock | None: ...


@runtime_checkable
class PredicateExplainer(Protocol):
    """A predicate plugin that refused the nodes of ``task`` and can say why in its own terms,
    given the fit errors' histogram of reasons by node count (read by the pending diagnosis;
    nodegroup, numa-aware, tdm, usage, extender); None when none of the reasons are its own."""

    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           hist: Mapping[str, int]) -> PluginBlock | None: ...


@runtime_checkable
class VictimExplainer(Protocol):
    """A Preemptable / Reclaimable plugin whose victim filter the pending diagnosis replays:
    ``keep_victims`` is the filter for one node's candidates, ``explain_victims`` says why the
    ones it dropped are protected (pdb, cdp)."""

    def keep_victims(self, ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]: ...

    def explain_victims(self, ssn: Session, action: str, dropped: list[TaskInfo]) -> PluginBlock: ...


@runtime_checkable
class TimedPlugin(Protocol):
    """A plugin that acts on a clock of its own (tdm's daily windows and evict period,
    rescheduling's interval): ``next_wakeup`` is the soonest time after ``ssn.now`` at which a
    session could decide differently with nothing else changing, or None. The simulator makes a
    session due then; the live scheduler runs every period anyway."""

    def next_wakeup(self, ssn: Session) -> float | None: ...


class Action(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...


ActionFactory = Callable[[Mapping[str, Any]], Action]
"""An action module's ``new``: arguments (its ``configurations`` entry) → the action."""


@dataclass(slots=True)
class Event:
    task: TaskInfo
    err: str | None = None


@dataclass(slots=True)
class EventHandler:
    """A plugin's bookkeeping hooks, fired by the statement's operations.

    ``allocate_many`` (optional) is the batch form of ``allocate``: called with replicas of
    one template of one job (api/task_template.py) that were all just allocated, it must
    leave the plugin's state exactly as calling ``allocate`` on each of them in order does
    (the same float operations in the same order), without reading the status of the tasks
    (when it runs, every task of the batch is already placed). Additive handlers (a queue's
    or job's allocated sum) declare it; a handler without it keeps the statement's batch
    allocation off (:meth:`Statement.allocate_many` then allocates one task at a time).
    """

    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None
    allocate_many: Callable[[list[TaskInfo]], None] | None = None


class EvictionKind(enum.Enum):
    """Who asks a UnifiedEvictable callback for victims (upstream ``api.EvictionKind``)."""

    GANG_PREEMPT = "gangpreempt"
    GANG_RECLAIM = "gangreclaim"


@dataclass(frozen=True, slots=True)
class EvictionContext:
    """The evictor of a UnifiedEvictable call: the action, the starving job and the domain
    (HyperNode) the candidates were taken from (upstream ``api.EvictionContext``)."""

    kind: EvictionKind
    job: JobInfo
    hypernode: str
