"""Helpers shared by actions: the predicate error cache (upstream util/predicate_helper.go) and
the task worksheet.

A worksheet pops tasks in ``Session.task_order_fn`` order. When the session can express that
order as a sort key (:meth:`Session.task_sort_key`) it is a sorted list; otherwise a heap
that calls the comparator, as upstream's priority queue does. Both pop the same sequence: the
order is total (UIDs break every tie), and a heap under a total order always pops its minimum.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import FitErrors
from pyvolcano.framework.session import Session
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = ["PREDICATE_ERROR_CACHE_ENABLE", "PredicateHelper", "SortedTasks", "TaskQueue", "task_queue"]

PREDICATE_ERROR_CACHE_ENABLE = "predicateErrorCacheEnable"
"""The argument of allocate, backfill, reclaim and preempt that switches :class:`PredicateHelper`'s
error cache (upstream ``conf.EnablePredicateErrCacheKey``, default true)."""


class TaskQueue(Protocol):
    def push(self, item: TaskInfo) -> None: ...

    def pop(self) -> TaskInfo: ...

    def clone(self) -> TaskQueue: ...

    def __len__(self) -> int: ...

    def __bool__(self) -> bool: ...


class SortedTasks:
    """Tasks popped in ascending ``key`` order (a sorted list and a head position)."""

    __slots__ = ("_head", "_items", "_key")

    def __init__(self, key: Callable[[TaskInfo], Any], items: list[TaskInfo]):
        self._key = key
        self._items = sorted(items, key=key)
        self._head = 0

    def push(self, item: TaskInfo) -> None:
        bisect.insort(self._items, item, lo=self._head, key=self._key)

    def clone(self) -> SortedTasks:
        out = SortedTasks.__new__(SortedTasks)
        out._key = self._key
        out._items = self._items[self._head:]
        out._head = 0
        return out

    def pop(self) -> TaskInfo:
        item = self._items[self._head]
        self._head += 1
        return item

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __bool__(self) -> bool:
        return self._head < len(self._items)


def task_queue(ssn: Session, tasks: list[TaskInfo]) -> TaskQueue:
    """A worksheet of ``tasks`` (see module doc); ``tasks`` in the order upstream pushes them."""
    key = ssn.task_sort_key(tasks)
    if key is not None:
        return SortedTasks(key, tasks)
    return PriorityQueue(ssn.task_order_fn, tasks)

Predicate = Callable[[TaskInfo, np.ndarray], tuple[np.ndarray, FitErrors]]


class PredicateHelper:
    """Remembers, per job and task role, the nodes that failed predicates.

    A node that failed for one task of a role is failed again for the next task of the
    same role without running predicates. Tasks with an empty role never use the cache
    (upstream issue #3527).
    """

    def __init__(self, ssn: Session, *, enable_error_cache: bool = True):
        self.ssn = ssn
        self.enabled = enable_error_cache
        self._cache: dict[tuple[str, str], tuple[np.ndarray, FitErrors]] = {}

    def has_failures(self, task: TaskInfo) -> bool:
        return self.enabled and bool(task.role) and (task.job, task.role) in self._cache

    def predicate_nodes(self, task: TaskInfo, idx: np.ndarray, fn: Predicate) -> tuple[np.ndarray, FitErrors]:
        use_cache = self.enabled and bool(task.role)
        key = (task.job, task.role)
        cached = self._cache.get(key) if use_cache else None

        def predicate(t: TaskInfo, order: np.ndarray) -> tuple[np.ndarray, FitErrors]:
            if cached is None:
                ok, fe = fn(t, order)
            else:
                failed_before, old_fe = cached
                skip = np.isin(order, failed_before)
                ok = np.zeros(len(order), dtype=bool)
                fe = FitErrors()
                for g in old_fe.groups:
                    fe.add(g.reason, g.code, g.nodes[np.isin(g.nodes, order[skip])])
                rest = np.flatnonzero(~skip)
                if len(rest):
                    ok2, fe2 = fn(t, order[rest])
                    ok[rest] = ok2
                    for g in fe2.groups:
                        fe.add(g.reason, g.code, g.nodes)
            return ok, fe

        nodes, errors = self.ssn.predicate_nodes(task, idx, predicate)
        if use_cache and not errors.is_empty():
            prev = self._cache.get(key)
            failed = errors.failed_nodes()
            if prev is not None:
                failed = np.union1d(prev[0], failed)
                merged = FitErrors()
                for g in prev[1].groups + errors.groups:
                    merged.add(g.reason, g.code, g.nodes)
                self._cache[key] = (failed, merged)
            else:
                self._cache[key] = (failed, errors)
        return nodes, errors
