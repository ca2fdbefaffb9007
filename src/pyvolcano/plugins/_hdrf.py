"""Hierarchical DRF for the drf plugin's ``enableHierarchy`` mode (upstream plugins/drf/drf.go).

Design. Queues name their place in a tree with the annotation ``volcano.sh/hierarchy``
(``root/eng/dev``) and give per-level weights with ``volcano.sh/hierarchy-weights``
(``1/2/3``). The first path element is always the root; a weight below 1 (or one that is not
a number) counts as 1. Inner tree nodes are created on first use and keep the weight given
by the first job that created them (jobs are added in UID order). Every job is a leaf under
its queue's path, holding its allocation and its total request.

Each node carries ``allocated``, ``share`` (dominant share of ``allocated`` over the cluster
total) and ``saturated``:

* a leaf is saturated when, on some resource it holds, its allocation has reached its total
  request, or it holds a requested resource that is fully allocated cluster-wide
  ("demanding" resources are those whose cluster-wide allocation is below the total);
* an inner node rescales its children: with ``m`` = the smallest share among its non-empty,
  unsaturated children (at most 1), its allocation is the sum over non-empty children of the
  child's allocation, saturated children as is and the others scaled by ``m / share``; it is
  saturated iff all its children are.

QueueOrder walks both queues' paths from the root: an unsaturated node beats a saturated
one; otherwise the first level where ``share / weight`` differs decides (lower first).
Reclaimable evaluates each candidate on scratch state: add the reclaimer's request to its
job, take the candidate's request from the candidate's job, compare the two queues, put the
candidate back; the candidate is a victim iff the reclaimer's queue then ranks first.

Invariants. The tree state is a pure function of the leaves' (allocation, request) and the
set of demanding resources. So after a leaf changes only its ancestors are recomputed, unless
the demanding set changed (then everything is); scratch evaluations swap leaf allocations,
recompute, and then put the live allocations back and recompute, which restores the exact
previous state without copying the tree. Children are visited in name order, so float sums
do not depend on insertion order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.plugins.drf_share import dominant_share, share_dimensions

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["HierarchicalDrf"]

ROOT = "root"


class _Node:
    """A hierarchy node; a leaf (``children is None``) stands for one job."""

    __slots__ = (
        "_ordered",
        "allocated",
        "children",
        "depth",
        "name",
        "parent",
        "request",
        "saturated",
        "share",
        "weight",
    )

    def __init__(self, name: str, weight: float, parent: _Node | None, *, leaf: bool):
        self.name = name
        self.weight = weight
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.children: dict[str, _Node] | None = None if leaf else {}
        self._ordered: list[_Node] | None = None
        self.allocated = Resource()
        self.request = Resource()
        self.share = 0.0
        self.saturated = False

    def add_child(self, child: _Node) -> None:
        assert self.children is not None
        self.children[child.name] = child
        self._ordered = None

    def ordered_children(self) -> list[_Node]:
        if self._ordered is None:
            assert self.children is not None
            self._ordered = [self.children[k] for k in sorted(self.children)]
        return self._ordered


class HierarchicalDrf:
    """The HDRF tree of one session; see the module docstring for the rules."""

    def __init__(self, total_resource: Resource):
        self.total = total_resource.clone()
        self._dimensions = share_dimensions(self.total)
        self.total_allocated = Resource()
        self.root = _Node(ROOT, 1.0, None, leaf=False)
        self._leaves: dict[str, _Node] = {}
        # Live job allocations; a leaf's ``allocated`` is this object except during a
        # scratch evaluation in :meth:`reclaimable`.
        self._job_allocated: dict[str, Resource] = {}
        self._demanding: frozenset[str] = frozenset()
        self._stale = True

    # ------------------------------------------------------------------ building
    def add_job(self, job: JobInfo, allocated: Resource, queue: QueueInfo) -> None:
        """Add ``job`` as a leaf under ``queue``'s path; ``allocated`` is copied."""
        parent = self._ensure_path(queue)
        leaf = _Node(job.uid, 1.0, parent, leaf=True)
        live = allocated.clone()
        leaf.allocated = live
        leaf.request = job.total_request.clone()
        parent.add_child(leaf)
        self._leaves[job.uid] = leaf
        self._job_allocated[job.uid] = live
        self.total_allocated.add(live)
        self._stale = True

    def _ensure_path(self, queue: QueueInfo) -> _Node:
        paths = queue.hierarchy.split("/")
        weights = queue.weights.split("/")
        node = self.root
        for i in range(1, len(paths)):
            assert node.children is not None
            child = node.children.get(paths[i])
            if child is None:
                child = _Node(paths[i], _level_weight(weights, i), node, leaf=False)
                node.add_child(child)
            node = child
        return node

    # ------------------------------------------------------------------ events
    def task_added(self, ssn: Session, task: TaskInfo) -> None:
        self._on_task(ssn, task, added=True)

    def task_removed(self, ssn: Session, task: TaskInfo) -> None:
        self._on_task(ssn, task, added=False)

    def _on_task(self, ssn: Session, task: TaskInfo, *, added: bool) -> None:
        job = ssn.jobs.get(task.job)
        leaf = self._leaves.get(task.job)
        if job is None or leaf is None or job.queue not in ssn.queues:
            return
        live = self._job_allocated[job.uid]
        if added:
            live.add(task.resreq)
            self.total_allocated.add(task.resreq)
        else:
            live.sub(task.resreq)
            self.total_allocated.sub(task.resreq)
        leaf.request = job.total_request.clone()
        self._refresh([leaf], self.total_allocated)

    # ------------------------------------------------------------------ queue order
    def compare_queues(self, left: QueueInfo, right: QueueInfo) -> int:
        self._ensure_fresh()
        diff = self._compare(left, right)
        if diff < 0:
            return -1
        if diff > 0:
            return 1
        return 0

    def _compare(self, left: QueueInfo, right: QueueInfo) -> float:
        lpaths = left.hierarchy.split("/")
        rpaths = right.hierarchy.split("/")
        depth = min(len(lpaths), len(rpaths))
        lnode: _Node | None = self.root
        rnode: _Node | None = self.root
        for i in range(depth):
            if lnode is None or rnode is None:
                # Upstream dereferences a missing node (a path with no job); treat as a tie.
                return 0.0
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lvalue = lnode.share / lnode.weight
            rvalue = rnode.share / rnode.weight
            if lvalue != rvalue:
                return lvalue - rvalue
            if i < depth - 1:
                lnode = _child(lnode, lpaths[i + 1])
                rnode = _child(rnode, rpaths[i + 1])
        return 0.0

    # ------------------------------------------------------------------ reclaim
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        ljob = ssn.jobs.get(reclaimer.job)
        if ljob is None or reclaimer.job not in self._leaves:
            return []
        lqueue = ssn.queues.get(ljob.queue)
        if lqueue is None:
            return []
        self._ensure_fresh()
        total = self.total_allocated.clone()
        touched: dict[str, _Node] = {}

        def put(job: JobInfo, allocated: Resource) -> None:
            leaf = self._leaves[job.uid]
            touched[job.uid] = leaf
            leaf.allocated = allocated
            leaf.request = job.total_request.clone()
            self._refresh([leaf], total)

        victims: list[TaskInfo] = []
        try:
            total.add(reclaimer.resreq)
            put(ljob, self._job_allocated[ljob.uid].clone().add(reclaimer.resreq))
            for candidate in reclaimees:
                rjob = ssn.jobs.get(candidate.job)
                if rjob is None or rjob.uid not in self._leaves:
                    continue
                rqueue = ssn.queues.get(rjob.queue)
                if rqueue is None:
                    continue
                total.sub(candidate.resreq)
                # Upstream (plugins/drf/drf.go): every candidate starts from its job's live
                # allocation, so candidates of one job are not cumulative, and a candidate of
                # the reclaimer's own job drops the reclaimer's request for the rest of the scan.
                reduced = self._job_allocated[rjob.uid].clone().sub(candidate.resreq)
                put(rjob, reduced)
                diff = self._compare(lqueue, rqueue)
                total.add(candidate.resreq)
                put(rjob, reduced.add(candidate.resreq))
                if diff < 0:
                    victims.append(candidate)
        finally:
            self._restore(touched.values())
        return victims

    def _restore(self, leaves: Iterable[_Node]) -> None:
        changed = list(leaves)
        for leaf in changed:
            leaf.allocated = self._job_allocated[leaf.name]
        self._refresh(changed, self.total_allocated)

    # ------------------------------------------------------------------ recomputation
    def _ensure_fresh(self) -> None:
        if self._stale:
            self._refresh([], self.total_allocated)

    def _refresh(self, leaves: list[_Node], total_allocated: Resource) -> None:
        """Bring the tree up to date after ``leaves`` changed, for ``total_allocated``."""
        demanding = self._demanding_for(total_allocated)
        if self._stale or demanding != self._demanding:
            self._demanding = demanding
            self._stale = False
            self._update_subtree(self.root)
            return
        ancestors: dict[int, _Node] = {}
        for leaf in leaves:
            self._update_leaf(leaf)
            node = leaf.parent
            while node is not None:
                ancestors[id(node)] = node
                node = node.parent
        for node in sorted(ancestors.values(), key=lambda n: -n.depth):
            self._aggregate(node)

    def _demanding_for(self, total_allocated: Resource) -> frozenset[str]:
        total = self.total
        return frozenset(rn for rn in total.resource_names() if total_allocated.get(rn) < total.get(rn))

    def _update_subtree(self, node: _Node) -> None:
        if node.children is None:
            self._update_leaf(node)
            return
        for child in node.ordered_children():
            self._update_subtree(child)
        self._aggregate(node)

    def _update_leaf(self, leaf: _Node) -> None:
        _, leaf.share = dominant_share(leaf.allocated, self._dimensions)
        leaf.saturated = _leaf_saturated(leaf.allocated, leaf.request, self._demanding)

    def _aggregate(self, node: _Node) -> None:
        children = node.ordered_children()
        floor = 1.0
        for child in children:
            if child.share != 0 and not child.saturated and child.share < floor:
                floor = child.share
        allocated = Resource()
        for child in children:
            if child.share == 0:
                continue
            if child.saturated:
                allocated.add(child.allocated)
            else:
                allocated.add(child.allocated.clone().multi(floor / child.share))
        node.allocated = allocated
        _, node.share = dominant_share(allocated, self._dimensions)
        node.saturated = all(child.saturated for child in children)


def _leaf_saturated(allocated: Resource, request: Resource, demanding: frozenset[str]) -> bool:
    for rn in allocated.resource_names():
        requested = request.get(rn)
        if requested == 0:
            continue
        if allocated.get(rn) >= requested or rn not in demanding:
            return True
    return False


def _child(node: _Node, name: str) -> _Node | None:
    return None if node.children is None else node.children.get(name)


def _level_weight(weights: list[str], level: int) -> float:
    """The weight of a path level: Go ``ParseFloat`` of the matching element, at least 1."""
    text = weights[level] if level < len(weights) else ""
    value = _parse_float(text)
    if value < 1 and not math.isnan(value):
        return 1.0
    return value


def _parse_float(text: str) -> float:
    """Go ``strconv.ParseFloat`` for the usual spellings; 0 when it would fail."""
    if not text or text != text.strip() or "_" in text:
        return 0.0
    try:
        return float(text)
    except ValueError:
        return 0.0
