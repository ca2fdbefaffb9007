"""Helpers shared by actions: the predicate error cache (upstream util/predicate_helper.go)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import FitErrors
from pyvolcano.framework.session import Session

__all__ = ["PredicateHelper"]

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
