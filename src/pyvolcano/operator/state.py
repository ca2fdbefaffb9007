"""The cluster's current state as a forecast reads it: raw documents plus their typed objects.

:class:`ClusterState` holds the scheduler's inputs twice: the manifests (``docs``, what a
forward simulation loads into its store) and their parsed :class:`ClusterObjects` (what a
scheduler cache is built from), with the scheduler configuration a snapshot carries and the
instant the state was taken (``now``, virtual seconds). :func:`state_from_snapshot` reads
files as ``pyvolcano schedule`` does; :func:`state_from_store` reads a synced Kubernetes store
(read-only). ``now`` of a snapshot is its newest timestamp unless given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyvolcano.api.manifest import ClusterObjects, ManifestError, check_queue_parents, iter_documents, parse_objects
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.registry import Registry
from pyvolcano.store.base import from_rfc3339

__all__ = ["SCHEDULER_KINDS", "ClusterState", "newest_timestamp", "state_from_snapshot", "state_from_store"]

SCHEDULER_KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass")


@dataclass(slots=True)
class ClusterState:
    docs: list[dict[str, Any]]
    objects: ClusterObjects
    config: SchedulerConfiguration | None
    now: float
    source: str


def newest_timestamp(docs: Sequence[dict[str, Any]]) -> float:
    """The newest ``creationTimestamp`` or pod ``startTime`` in ``docs`` (0 without any)."""
    best = 0.0
    for d in docs:
        for text in ((d.get("metadata") or {}).get("creationTimestamp"), (d.get("status") or {}).get("startTime")):
            if isinstance(text, str):
                try:
                    best = max(best, from_rfc3339(text))
                except ValueError:
                    continue
    return best


def state_from_snapshot(sources: Sequence[str | Path], registry: Registry, now: float | None = None) -> ClusterState:
    """Read a snapshot (files, directories, ``-``); raises ManifestError or ConfigError."""
    from pyvolcano.cli.inputs import read_inputs
    from pyvolcano.cli.schedule import load_snapshot_and_config

    objs, config = load_snapshot_and_config(sources, registry)
    where = ", ".join(str(s) for s in sources)
    check_queue_parents(objs, where)
    docs: list[dict[str, Any]] = []
    for source, text in read_inputs(sources):
        if isinstance(text, ManifestError):
            raise text
        docs += [d for _i, d in iter_documents(text, source) if isinstance(d, dict) and d.get("kind") in SCHEDULER_KINDS
                 and d.get("apiVersion") != "batch.volcano.sh/v1alpha1"]
    return ClusterState(docs, objs, config, newest_timestamp(docs) if now is None else now, where)


def state_from_store(store: Any, timeout: float, source: str, now: float) -> ClusterState:
    """Every scheduler input a synced store lists (``store.list`` only: nothing is written)."""
    from pyvolcano.cli.job import LiveReadError

    if not store.wait_for_sync(timeout):
        raise LiveReadError(f"{source}: the objects were not listed within {timeout:g}s")
    docs = [obj for kind in SCHEDULER_KINDS for obj in store.list(kind)]
    objs = parse_objects(list(enumerate(docs)), source)
    check_queue_parents(objs, source)
    return ClusterState(docs, objs, None, now, source)
