"""nodegroup plugin: queues pinned to groups of nodes (upstream pkg/scheduler/plugins/nodegroup/nodegroup.go).

Design. A node's group is its label ``volcano.sh/nodegroup-name``; a queue says where its
jobs may and should run in ``spec.affinity`` (``nodeGroupAffinity`` / ``nodeGroupAntiAffinity``,
each with required and preferred lists of group names). With ``enableHierarchy`` a queue
without ``spec.affinity`` takes that of its nearest ancestor that has one (a queue without
``spec.parent`` hangs under ``root``; a missing parent or a cycle ends the walk).

Predicate (every failure is UnschedulableAndUnresolvable, with upstream's texts):

* the queue's ``volcano.sh/nodegroup-resource-limits`` annotation is not a JSON map of group to
  ResourceList: every node fails ("node group resource limit annotation invalid");
* a node without the label passes only with ``strict: false`` and a queue without any rule
  ("node group label not found"); a labelled node fails when the queue has no rule
  ("node group affinity not specified");
* otherwise the group passes if it is required or preferred, is refused if it is in required
  anti-affinity, and passes again if it is in preferred anti-affinity (so anti-preferred
  overrides anti-required, as upstream) ("node does not satisfy the node group affinity");
* a group the queue limits fails when the queue's tasks already on the group's nodes
  (Allocated, Binding, Bound, Running at session open, plus this session's allocations)
  plus the task's request exceed the limit on a resource it names, by at least the ε of
  resource comparisons ("node group resource limit exceeded").

Score of a labelled node: 100 if the group is required, plus 50 if preferred (with
``enablePreferredOrder``, 50·(n−i)/n for the i-th of the n preferred groups), replaced by −1
when the group is in preferred anti-affinity; 0 for unlabelled nodes and queues without rules.

Arguments (upstream's): ``strict`` (true), ``enablePreferredOrder`` (false).

Invariants: node groups are read once per node-label generation (memoised across sessions);
verdicts and scores depend on the task's queue and the node's label only, except the resource
limits, so they are cached per effective affinity unless the queue has limits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import NODEGROUP_NAME_KEY, NODEGROUP_RESOURCE_LIMITS_KEY
from pyvolcano.api.objects import Queue
from pyvolcano.api.quantity import QuantityError
from pyvolcano.api.resource import CPU, MEMORY, MIN_RESOURCE, Resource
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.cache.memo import NODE_GROUPS
from pyvolcano.diagnosis.diagnose import user_amount
from pyvolcano.diagnosis.model import LimitFigure, PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = [
    "ARGUMENTS",
    "ENABLE_PREFERRED_ORDER",
    "ERR_AFFINITY_NOT_FOUND",
    "ERR_LABEL_NOT_FOUND",
    "ERR_LIMIT_EXCEEDED",
    "ERR_LIMIT_INVALID",
    "ERR_UNSATISFIED",
    "NAME",
    "STRICT",
    "GroupAffinity",
    "NodeGroup",
    "QueueAttr",
    "new",
]

logger = logging.getLogger(__name__)

NAME: Final = "nodegroup"
STRICT: Final = "strict"
ENABLE_PREFERRED_ORDER: Final = "enablePreferredOrder"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (honoured(STRICT), honoured(ENABLE_PREFERRED_ORDER)))
ROOT_QUEUE: Final = "root"
BASE_SCORE: Final = 100.0

# Upstream errors.go.
ERR_AFFINITY_NOT_FOUND: Final = "node group affinity not specified"
ERR_LABEL_NOT_FOUND: Final = "node group label not found"
ERR_UNSATISFIED: Final = "node does not satisfy the node group affinity"
ERR_LIMIT_INVALID: Final = "node group resource limit annotation invalid"
ERR_LIMIT_EXCEEDED: Final = "node group resource limit exceeded"
REASONS: Final = (ERR_AFFINITY_NOT_FOUND, ERR_LABEL_NOT_FOUND, ERR_UNSATISFIED, ERR_LIMIT_INVALID, ERR_LIMIT_EXCEEDED)


@dataclass(frozen=True, slots=True)
class GroupAffinity:
    """A queue's node-group rules as sets (upstream ``queueGroupAffinity``); hashable, so that it
    can key the cached verdicts and scores."""

    required: frozenset[str] = frozenset()
    preferred: frozenset[str] = frozenset()
    anti_required: frozenset[str] = frozenset()
    anti_preferred: frozenset[str] = frozenset()
    preferred_order: tuple[str, ...] = ()  # the preferred list as written (for enablePreferredOrder)

    @classmethod
    def of(cls, queue: Queue) -> GroupAffinity | None:
        a = queue.node_groups
        if a is None:
            return None
        pos, neg = a.node_group_affinity, a.node_group_anti_affinity
        return cls(
            required=frozenset(pos.required) if pos else frozenset(),
            preferred=frozenset(pos.preferred) if pos else frozenset(),
            anti_required=frozenset(neg.required) if neg else frozenset(),
            anti_preferred=frozenset(neg.preferred) if neg else frozenset(),
            preferred_order=pos.preferred if pos else (),
        )

    @property
    def unset(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def admits(self, group: str) -> bool:
        """Upstream ``queueGroupAffinity.predicate``."""
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True
        return ok

    def score(self, group: str, preferred_order: bool) -> float:
        """Upstream ``queueGroupAffinity.score``."""
        s = BASE_SCORE if group in self.required else 0.0
        if preferred_order:
            # Upstream keeps the index of a group's last occurrence and counts distinct groups.
            index = {g: i for i, g in enumerate(self.preferred_order)}
            if group in index:
                n = len(index)
                s += 0.5 * BASE_SCORE * float(n - index[group]) / float(n)
        elif group in self.preferred:
            s += 0.5 * BASE_SCORE
        if group in self.anti_preferred:
            s = -1.0
        return s


@dataclass(slots=True)
class GroupLimit:
    resource: Resource
    names: frozenset[str]


@dataclass(slots=True)
class QueueAttr:
    """One queue's rules this session: its effective affinity, its per-group limits (or the
    reason its annotation is invalid) and what its tasks use on each group."""

    affinity: GroupAffinity | None
    limits: dict[str, GroupLimit] | None = None
    limit_error: str | None = None
    allocated: dict[str, Resource] = field(default_factory=dict)


def parse_limits(queue: Queue) -> tuple[dict[str, GroupLimit] | None, str | None]:
    """The queue's ``volcano.sh/nodegroup-resource-limits``: per group, the limit and the resource
    names it sets; or the reason the annotation cannot be read."""
    raw = queue.annotations.get(NODEGROUP_RESOURCE_LIMITS_KEY, "")
    if not raw:
        return None, None
    problem = f"parse annotation {NODEGROUP_RESOURCE_LIMITS_KEY}"
    try:
        data = json.loads(raw)
    except ValueError as e:
        return None, f"{problem}: {e}"
    if not isinstance(data, dict):
        return None, f"{problem}: expected a JSON object of node group to resource list"
    limits: dict[str, GroupLimit] = {}
    for group, rl in data.items():
        if rl is None:
            rl = {}
        if not isinstance(rl, dict) or not all(isinstance(q, (str, int, float)) and not isinstance(q, bool)
                                               for q in rl.values()):
            return None, f"{problem}: group {group!r}: expected a resource list such as {{\"cpu\": \"4\"}}"
        try:
            limits[group] = GroupLimit(Resource.from_list(rl), frozenset(rl))
        except QuantityError as e:
            return None, f"{problem}: group {group!r}: {e}"
    return limits, None


def exceeded_names(used: Resource, limit: GroupLimit) -> list[str]:
    """Upstream ``limitedResourceExceededNames``: cpu, memory, then the other named resources."""

    def greater(u: float, lim: float) -> bool:
        return u > lim and u - lim >= MIN_RESOURCE

    out = []
    if CPU in limit.names and greater(used.milli_cpu, limit.resource.milli_cpu):
        out.append(CPU)
    if MEMORY in limit.names and greater(used.memory, limit.resource.memory):
        out.append(MEMORY)
    for name in sorted(limit.names - {CPU, MEMORY}):
        if greater(used.get(name), limit.resource.get(name)):
            out.append(name)
    return out


def _hierarchy_enabled(ssn: Session) -> bool:
    """Upstream ``ssn.HierarchyEnabled``: the flag of the first entry of the plugin."""
    for tier in ssn.config.tiers:
        for opt in tier.plugins:
            if opt.name == NAME:
                return opt.enabled("enableHierarchy")
    return False


def _node_groups(ssn: Session) -> tuple[np.ndarray, list[str]]:
    """Each node's group as an index into the returned names (-1: no label), memoised across
    sessions until a node's labels change or a node is added."""
    key = (ssn.cache.node_generation, len(ssn.node_list))
    kept = ssn.memo.kept(NODE_GROUPS, key)
    if kept is None:
        names: dict[str, int] = {}
        codes = np.full(len(ssn.node_list), -1, dtype=np.int64)
        for i, node in enumerate(ssn.node_list):
            group = node.labels.get(NODEGROUP_NAME_KEY)
            if group is not None:
                codes[i] = names.setdefault(group, len(names))
        kept = ssn.memo.keep(NODE_GROUPS, key, (codes, list(names)))
    return kept


class NodeGroup:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.strict = args.get_bool(STRICT, True)
        self.preferred_order = args.get_bool(ENABLE_PREFERRED_ORDER, False)
        self.attrs: dict[str, QueueAttr] = {}

    # ------------------------------------------------------------------ session state
    def _init_attrs(self, ssn: Session) -> None:
        own = {name: GroupAffinity.of(q.queue) for name, q in ssn.queues.items()}
        hierarchy = _hierarchy_enabled(ssn)
        attrs: dict[str, QueueAttr] = {}
        for name, info in ssn.queues.items():
            affinity = own[name]
            if affinity is None and hierarchy:
                affinity = self._inherited(ssn, name, own)
            limits, error = parse_limits(info.queue)
            if error is not None:
                logger.error("queue <%s> has invalid %s annotation: %s", name, NODEGROUP_RESOURCE_LIMITS_KEY, error)
            attrs[name] = QueueAttr(affinity, limits, error)
        self.attrs = attrs

    @staticmethod
    def _inherited(ssn: Session, name: str, own: Mapping[str, GroupAffinity | None]) -> GroupAffinity | None:
        """The affinity of the nearest ancestor that has one (upstream ``updateAffinityFromAncestor``)."""
        seen = {name}
        current = name
        while current != ROOT_QUEUE:
            q = ssn.queues[current].queue
            parent = q.parent or ROOT_QUEUE
            if parent not in ssn.queues or parent in seen:
                return None
            if own[parent] is not None:
                return own[parent]
            seen.add(parent)
            current = parent
        return None

    def _group_of_node(self, ssn: Session, node_name: str) -> str | None:
        node = ssn.nodes.get(node_name) if node_name else None
        return node.labels.get(NODEGROUP_NAME_KEY) if node is not None else None

    def _add_allocated(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        attr = self.attrs.get(job.queue) if job is not None else None
        if attr is None or not attr.limits:
            return
        group = self._group_of_node(ssn, task.node_name)
        if group is None:
            return
        used = attr.allocated.get(group)
        if used is None:
            if sign < 0:
                return
            used = attr.allocated[group] = Resource()
        if sign > 0:
            used.add(task.resreq)
        else:
            used.sub_without_assert(task.resreq)

    def attr_of(self, ssn: Session, task: TaskInfo) -> QueueAttr | None:
        job = ssn.jobs.get(task.job)
        return self.attrs.get(job.queue) if job is not None else None

    # ------------------------------------------------------------------ verdicts
    def verdict(self, attr: QueueAttr | None, group: str | None, task: TaskInfo) -> str | None:
        """Why the node of ``group`` fails ``task`` (an upstream error text), or None if it passes."""
        if attr is not None and attr.limit_error is not None:
            return ERR_LIMIT_INVALID
        affinity = attr.affinity if attr is not None else None
        unset = affinity is None or affinity.unset
        if group is None:
            return None if not self.strict and unset else ERR_LABEL_NOT_FOUND
        if unset:
            return ERR_AFFINITY_NOT_FOUND
        assert affinity is not None and attr is not None
        if not affinity.admits(group):
            return ERR_UNSATISFIED
        if attr.limits:
            limit = attr.limits.get(group)
            if limit is not None:
                used = attr.allocated.get(group) or Resource()
                if exceeded_names(used.clone().add(task.resreq), limit):
                    return ERR_LIMIT_EXCEEDED
        return None

    def on_session_open(self, ssn: Session) -> None:
        self._init_attrs(ssn)
        codes, names = _node_groups(ssn)
        if any(a.limits for a in self.attrs.values()):
            for job in ssn.jobs.values():
                attr = self.attrs.get(job.queue)
                if attr is None or not attr.limits:
                    continue
                for task in job.tasks.values():
                    if task.status & ALLOCATED_STATUS:
                        self._add_allocated(ssn, task, +1)

            def on_allocate_many(tasks: list[TaskInfo]) -> None:
                for t in tasks:
                    self._add_allocated(ssn, t, +1)

            ssn.add_event_handler(EventHandler(allocate=lambda ev: self._add_allocated(ssn, ev.task, +1),
                                               deallocate=lambda ev: self._deallocate(ssn, ev),
                                               allocate_many=on_allocate_many))

        def predicate(task: TaskInfo, idx: np.ndarray) -> list[tuple[Status, np.ndarray]]:
            job = ssn.jobs.get(task.job)
            if job is None:
                return [(Status(Code.Error, f"job {task.job} not found in session"), np.ones(len(idx), dtype=bool))]
            attr = self.attrs.get(job.queue)
            node_codes = codes[idx]
            failing: dict[str, np.ndarray] = {}
            for code in np.unique(node_codes):
                reason = self.verdict(attr, names[code] if code >= 0 else None, task)
                if reason is not None:
                    mask = node_codes == code
                    failing[reason] = failing[reason] | mask if reason in failing else mask
            return [(Status(Code.UnschedulableAndUnresolvable, r), m) for r, m in failing.items()]

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            scores = np.zeros(len(idx), dtype=np.float64)
            attr = self.attr_of(ssn, task)
            if attr is None or attr.affinity is None:
                return scores
            node_codes = codes[idx]
            for code in np.unique(node_codes):
                if code >= 0:
                    scores[node_codes == code] = attr.affinity.score(names[code], self.preferred_order)
            return scores

        def predicate_key(task: TaskInfo) -> Hashable | None:
            attr = self.attr_of(ssn, task)
            if attr is None:
                return None if task.job not in ssn.jobs else ("no-queue", self.strict)
            if attr.limits and attr.limit_error is None:
                return None  # the verdict depends on what the queue uses on the node's group
            return (attr.affinity, self.strict, attr.limit_error is not None)

        def score_key(task: TaskInfo) -> Hashable | None:
            attr = self.attr_of(ssn, task)
            return None if attr is None else (attr.affinity, self.preferred_order)

        ssn.add_predicate_fn(NAME, predicate, cache_key=predicate_key,
                             projectable=lambda t: predicate_key(t) is not None)
        ssn.add_node_order_fn(NAME, node_order, cache_key=score_key, projectable=lambda t: score_key(t) is not None)

    # ------------------------------------------------------------------ pending diagnosis
    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           failures: Mapping[str, int]) -> PluginBlock | None:
        """Why no node passes ``task`` when nodegroup's reasons are the most common failure."""
        top = max(failures.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if top not in REASONS:
            return None
        queue = job.queue
        attr = self.attrs.get(queue)
        if attr is not None and attr.limit_error is not None:
            return PluginBlock(
                Reason.NODE_GROUP_RESOURCE_LIMITS_INVALID, ERR_LIMIT_INVALID,
                f"queue {queue}'s annotation {NODEGROUP_RESOURCE_LIMITS_KEY} cannot be read ({attr.limit_error}); "
                f"every node refuses its pods until it is a JSON map of node group to resource list, such as "
                f'{{"group1": {{"cpu": "8"}}}}')
        if top == ERR_LIMIT_EXCEEDED and attr is not None and attr.limits:
            return self._explain_limits(queue, attr, task)
        counts: dict[str, int] = {}
        unlabelled = 0
        for node in ssn.node_list:
            group = node.labels.get(NODEGROUP_NAME_KEY)
            if group is None:
                unlabelled += 1 if not node.unschedulable else 0
            else:
                counts[group] = counts.get(group, 0) + 1
        present = ", ".join(f"{g} ({n})" for g, n in sorted(counts.items())) or "none"
        bare = f"{unlabelled} node(s) have no {NODEGROUP_NAME_KEY} label" if unlabelled else "every node is labelled"
        affinity = attr.affinity if attr is not None else None
        if affinity is None or affinity.unset:
            hint = (f"queue {queue} has no node-group rules (spec.affinity), and nodegroup admits no labelled node "
                    f"for such a queue" + (" and, with strict: true, no unlabelled one" if self.strict else "") +
                    f": give the queue spec.affinity.nodeGroupAffinity naming the groups it may use (node groups: "
                    f"{present}; {bare})")
        else:
            admitted = sorted(g for g in counts if affinity.admits(g))
            listed = sorted(affinity.required | affinity.preferred)
            hint = (f"queue {queue}'s spec.affinity admits node groups {', '.join(listed) or 'none'} "
                    f"(present among the nodes: {', '.join(admitted) or 'none'}); the nodes' groups are {present} "
                    f"and {bare}: label nodes {NODEGROUP_NAME_KEY}=<an admitted group> or change the queue's "
                    f"spec.affinity")
        return PluginBlock(Reason.NODE_GROUP_AFFINITY_UNSATISFIED,
                           f"queue {queue}'s node-group affinity admits none of the nodes", hint)

    def _explain_limits(self, queue: str, attr: QueueAttr, task: TaskInfo) -> PluginBlock:
        assert attr.limits is not None and attr.affinity is not None
        figures: list[LimitFigure] = []
        worst: tuple[str, str, float, float, float] | None = None
        for group, limit in sorted(attr.limits.items()):
            if not attr.affinity.admits(group):
                continue
            used = attr.allocated.get(group) or Resource()
            for name in exceeded_names(used.clone().add(task.resreq), limit) or sorted(limit.names):
                fig = LimitFigure(NAME, f"Queue {queue}: node group {group}", name,
                                  user_amount(name, limit.resource.get(name)), user_amount(name, used.get(name)),
                                  user_amount(name, task.resreq.get(name)))
                figures.append(fig)
                if worst is None and fig.used is not None and fig.used + fig.requested > fig.limit:
                    worst = (group, name, fig.limit, fig.used, fig.requested)
        if worst is None:
            hint = f"queue {queue}'s node groups are at their {NODEGROUP_RESOURCE_LIMITS_KEY} limits"
        else:
            group, name, lim, used_now, asked = worst
            hint = (f"queue {queue} may use {lim:g} {name} on node group {group} ({NODEGROUP_RESOURCE_LIMITS_KEY}) "
                    f"and its pods there use {used_now:g}; {task.name} asks {asked:g}: raise the limit, or admit "
                    f"another node group in the queue's spec.affinity")
        return PluginBlock(Reason.NODE_GROUP_RESOURCE_LIMIT_EXCEEDED, ERR_LIMIT_EXCEEDED, hint, limits=tuple(figures))

    def _deallocate(self, ssn: Session, ev: Event) -> None:
        self._add_allocated(ssn, ev.task, -1)

    def on_session_close(self, ssn: Session) -> None:
        self.attrs = {}


def new(arguments: Mapping[str, Any]) -> NodeGroup:
    return NodeGroup(arguments)
