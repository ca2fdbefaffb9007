"""Admission of ``scheduling.volcano.sh/v1beta1`` PodGroups.

CREATE: ``spec.queue`` defaults to ``default`` (CRD default); a PodGroup in the ``default`` queue
takes its namespace's ``scheduling.volcano.sh/queue-name`` annotation instead
(``podgroups/mutate/mutate_podgroup.go``). It is then admitted only into an existing, Open
queue, and ``highestTierAllowed`` / ``highestTierName`` are mutually exclusive in its network
topology and in every subgroup policy (``podgroups/validate/validate_podgroup.go``).

CREATE and UPDATE: the CRD schema's rules (``minMember ≥ 0``, quantities in ``minResources``,
``subGroupSize ≥ 1``, ``minSubGroups ≥ 0``, queue name syntax, a network topology's ``mode``
and ``highestTierAllowed ≥ 0``); on CREATE a network topology's ``mode`` defaults to ``hard``
(:mod:`.network_topology`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import dns1123_subdomain_errors, validate_resource_list
from pyvolcano.admission.network_topology import default_mode, validate_bounds
from pyvolcano.api.names import QUEUE_NAME_ANNOTATION
from pyvolcano.store.base import NotFound, Store

__all__ = ["check_shape", "mutate_podgroup", "validate_podgroup"]

_DEFAULT_QUEUE: Final = "default"


def check_shape(pg: Mapping[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = pg.get("spec")
    if spec is not None and not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    spec = spec or {}
    s.integer(spec, "minMember", "spec.minMember")
    s.string(spec, "queue", "spec.queue")
    s.string(spec, "priorityClassName", "spec.priorityClassName")
    mtm = s.mapping(spec, "minTaskMember", "spec.minTaskMember")
    for k in mtm or {}:
        s.integer(mtm or {}, k, f"spec.minTaskMember.{k}")
    s.mapping(spec, "minResources", "spec.minResources")
    _shape_topology(s, spec, "spec.networkTopology")
    for i, sg in enumerate(s.mappings(spec, "subGroupPolicy", "spec.subGroupPolicy")):
        sp = f"spec.subGroupPolicy[{i}]"
        s.string(sg, "name", f"{sp}.name")
        s.integer(sg, "subGroupSize", f"{sp}.subGroupSize")
        s.integer(sg, "minSubGroups", f"{sp}.minSubGroups")
        _shape_topology(s, sg, f"{sp}.networkTopology")


def _shape_topology(s: ShapeChecker, parent: Mapping[str, Any], path: str) -> None:
    nt = s.mapping(parent, "networkTopology", path)
    if nt is not None:
        s.integer(nt, "highestTierAllowed", f"{path}.highestTierAllowed")
        s.string(nt, "highestTierName", f"{path}.highestTierName")
        s.string(nt, "mode", f"{path}.mode")


def mutate_podgroup(pg: dict[str, Any], store: Store) -> None:
    spec = pg.get("spec")
    if not isinstance(spec, dict):
        spec = pg["spec"] = {}
    default_mode(spec.get("networkTopology"))
    for sg in spec.get("subGroupPolicy") or []:
        if isinstance(sg, dict):
            default_mode(sg.get("networkTopology"))
    if not spec.get("queue"):
        spec["queue"] = _DEFAULT_QUEUE
    if spec["queue"] != _DEFAULT_QUEUE:
        return
    ns_name = pg["metadata"].get("namespace") or "default"
    try:
        ns = store.get("Namespace", None, ns_name)
    except NotFound:
        return
    annotations = ns.get("metadata", {}).get("annotations") or {}
    queue = annotations.get(QUEUE_NAME_ANNOTATION)
    if isinstance(queue, str) and queue:
        spec["queue"] = queue


def validate_podgroup(op: str, pg: Mapping[str, Any], store: Store, p: Problems) -> None:
    spec = sub(pg, "spec")
    min_member = spec.get("minMember")
    if min_member is not None and min_member < 0:
        p.add("spec.minMember", f"Invalid value: {min_member}: must be greater than or equal to 0")
    queue = spec.get("queue") or ""
    if queue:
        for e in dns1123_subdomain_errors(queue):
            p.add("spec.queue", f"Invalid value: {quote(queue)}: {e}")
    validate_resource_list(spec.get("minResources"), "spec.minResources", p)
    validate_bounds(spec.get("networkTopology"), "spec.networkTopology", p)
    for i, sg in enumerate(spec.get("subGroupPolicy") or []):
        if not isinstance(sg, Mapping):
            continue
        validate_bounds(sg.get("networkTopology"), f"spec.subGroupPolicy[{i}].networkTopology", p)
        size = sg.get("subGroupSize")
        if size is not None and size < 1:
            p.add(f"spec.subGroupPolicy[{i}].subGroupSize",
                  f"Invalid value: {size}: must be greater than or equal to 1")
        min_groups = sg.get("minSubGroups")
        if min_groups is not None and min_groups < 0:
            p.add(f"spec.subGroupPolicy[{i}].minSubGroups",
                  f"Invalid value: {min_groups}: must be greater than or equal to 0")
    if op != "CREATE":
        return
    if queue:
        _check_queue_state(queue, store, p)
    nt = spec.get("networkTopology")
    if isinstance(nt, Mapping) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        p.add("spec.networkTopology",
              "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously.")
    for i, sg in enumerate(spec.get("subGroupPolicy") or []):
        if not isinstance(sg, Mapping):
            continue
        snt = sg.get("networkTopology")
        if isinstance(snt, Mapping) and snt.get("highestTierAllowed") is not None and snt.get("highestTierName"):
            p.add(f"spec.subGroupPolicy[{i}].networkTopology",
                  f"in subGroupPolicy '{sg.get('name') or ''}': must not specify 'highestTierAllowed' and "
                  "'highestTierName' in networkTopology simultaneously.")
            break


def _check_queue_state(queue_name: str, store: Store, p: Problems) -> None:
    try:
        queue = store.get("Queue", None, queue_name)
    except NotFound:
        p.add("spec.queue", f'unable to find queue: queues.scheduling.volcano.sh "{queue_name}" not found')
        return
    status = sub(queue, "status")
    state = status.get("state") or ""
    # An empty state has not been written by the queue controller yet and means Open.
    if state and state != "Open":
        p.add("spec.queue", f"can only submit PodGroup to queue with state `Open`, queue `{queue_name}` status is "
                            f"`{state}`.")
