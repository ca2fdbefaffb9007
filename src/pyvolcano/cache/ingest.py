"""Feeding the scheduler cache from store watch events (upstream cache/event_handlers.go).

The scheduler never reads the store directly during a session: it consumes the store's
ordered watch stream and keeps its compact domain state up to date. Objects are converted
once, here, with the same validating parser as manifests.
"""

from __future__ import annotations

import logging
from typing import Any

from pyvolcano.api.manifest import ManifestError, parse_object
from pyvolcano.api.objects import Node, Pod, PodGroup, PriorityClass, Queue
from pyvolcano.cache.cache import SchedulerCache

__all__ = ["apply_event"]

logger = logging.getLogger(__name__)


def apply_event(cache: SchedulerCache, event_type: str, kind: str, obj: dict[str, Any]) -> None:
    """Apply one ADDED / MODIFIED / DELETED event for a scheduler-relevant kind."""
    if kind not in ("Pod", "Node", "PodGroup", "Queue", "PriorityClass"):
        return
    try:
        typed = parse_object(obj, "store")
    except ManifestError as e:  # admission guarantees shape; a bad object is skipped, not fatal
        logger.warning("ignoring malformed %s: %s", kind, e)
        return
    if typed is None:
        return
    if isinstance(typed, Pod):
        if event_type == "DELETED":
            cache.delete_pod(typed.uid)
        else:
            cache.upsert_pod(typed)
    elif isinstance(typed, Node):
        if event_type != "DELETED":
            cache.upsert_node(typed)
        else:
            # A deleted node keeps its row but can host nothing (upstream: not in snapshots).
            typed.unschedulable = True
            typed.allocatable = {}
            cache.upsert_node(typed)
    elif isinstance(typed, PodGroup):
        if event_type == "DELETED":
            cache.delete_podgroup(typed.namespace, typed.name)
        else:
            cache.add_podgroup(typed)
    elif isinstance(typed, Queue):
        if event_type == "DELETED":
            cache.delete_queue(typed.name)
        else:
            cache.upsert_queue(typed)
    elif isinstance(typed, PriorityClass):
        if event_type == "DELETED":
            cache.priority_classes.pop(typed.name, None)
        else:
            cache.upsert_priority_class(typed)
