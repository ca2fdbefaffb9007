"""Admission of ``scheduling.volcano.sh/v1beta1`` Queues.

Mutation on CREATE follows ``pkg/webhooks/admission/queues/mutate/mutate_queue.go``: hierarchy
annotations get the ``root`` prefix (and weight ``1``), ``reclaimable`` defaults to true and
``weight`` to 1.

Validation follows ``validate/validate_queue.go`` and the queue CRD schema:

* quantities of ``capability``, ``deserved`` and ``guarantee.resource`` are valid and ≥ 0, and
  per dimension ``guarantee ≤ deserved ≤ capability``; ``1 ≤ weight ≤ 65535``; ``priority ≥ 0``;
* ``status.state`` (as submitted on CREATE) is empty, Open or Closed;
* ``volcano.sh/hierarchy`` / ``volcano.sh/hierarchy-weights`` annotations: same length,
  positive weights, not a strict prefix path of another queue's hierarchy;
* ``spec.parent`` (on CREATE or when it changes): not itself, the parent exists, depth ≤
  ``--max-queue-depth``, no cycle (the ``root`` queue has no parent: any would close a cycle,
  which upstream does not detect), and a parent without children may not have allocated pods;
* hierarchical resources (on CREATE or when parent / capability / deserved / guarantee change):
  capability ≤ the nearest ancestor's, Σ siblings' guarantee and deserved ≤ the parent's, a
  parent's capability ≥ its descendants', Σ children's guarantee and deserved ≤ its own;
* with root protection (default on) the ``root`` queue's resources are immutable;
* DELETE: not ``default`` or ``root``, not a queue with child queues, and (with
  ``--enable-queue-allocated-pods-check``) not a queue with allocated pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Final

from pyvolcano.admission._common import AdmissionConfig, Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import dns1123_subdomain_errors, parse_quantity_or_none, validate_resource_list
from pyvolcano.api.names import GROUP_NAME_KEY, HIERARCHY_KEY, HIERARCHY_WEIGHTS_KEY
from pyvolcano.api.resource import PODS, Resource
from pyvolcano.store.base import Forbidden, NotFound, Store

__all__ = [
    "check_queue_delete",
    "check_shape",
    "mutate_queue",
    "validate_queue",
]

_VALID_SUBMITTED_STATES: Final = ("Open", "Closed")
_GO_FLOAT_RE: Final = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(?i:inf|infinity|nan)")


def check_shape(queue: Mapping[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = queue.get("spec")
    if spec is not None and not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    spec = spec or {}
    s.integer(spec, "weight", "spec.weight")
    s.integer(spec, "priority", "spec.priority")
    s.boolean(spec, "reclaimable", "spec.reclaimable")
    s.string(spec, "parent", "spec.parent")
    for key in ("capability", "deserved"):
        s.mapping(spec, key, f"spec.{key}")
    g = s.mapping(spec, "guarantee", "spec.guarantee")
    if g is not None:
        s.mapping(g, "resource", "spec.guarantee.resource")
    status = s.mapping(queue, "status", "status")
    if status is not None:
        s.string(status, "state", "status.state")


def mutate_queue(queue: dict[str, Any]) -> None:
    md = queue["metadata"]
    ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else None
    if ann is not None:
        hierarchy = ann.get(HIERARCHY_KEY) or ""
        weights = ann.get(HIERARCHY_WEIGHTS_KEY) or ""
        if hierarchy and weights and not hierarchy.startswith("root"):
            ann[HIERARCHY_KEY] = f"root/{hierarchy}"
            ann[HIERARCHY_WEIGHTS_KEY] = f"1/{weights}"
    spec = queue.get("spec")
    if not isinstance(spec, dict):
        spec = queue["spec"] = {}
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if not spec.get("weight"):
        spec["weight"] = 1


def _spec(queue: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = queue.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _parent(queue: Mapping[str, Any]) -> str:
    parent = _spec(queue).get("parent")
    return parent if isinstance(parent, str) else ""


def _resources(queue: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    spec = _spec(queue)
    if key == "guarantee":
        g = spec.get("guarantee")
        rl = g.get("resource") if isinstance(g, Mapping) else None
    else:
        rl = spec.get(key)
    return rl if isinstance(rl, Mapping) else {}


def validate_queue(op: str, queue: Mapping[str, Any], old: Mapping[str, Any] | None, store: Store,
                   cfg: AdmissionConfig, p: Problems) -> None:
    name = queue["metadata"]["name"]
    _validate_fields(queue, p)
    if op == "CREATE":
        status = sub(queue, "status")
        state = status.get("state") or ""
        if state and state not in _VALID_SUBMITTED_STATES:
            p.add("status.state", f"Invalid value: {quote(state)}: queue state must be in [Open Closed]")
    _validate_hierarchy_annotations(queue, store, p)
    if p:
        return
    if op == "CREATE" or (old is not None and _parent(old) != _parent(queue)):
        _validate_parent(queue, store, cfg, p)
        if p:
            return
    resources_changed = old is not None and any(_differs(_resources(old, k), _resources(queue, k))
                                                for k in ("capability", "deserved", "guarantee"))
    if cfg.enable_root_queue_protection and op == "UPDATE" and name == "root" and resources_changed:
        p.add("spec", "root queue's resource attributes (capability, deserved, guarantee) cannot be modified")
        return
    if name != "root" and (op == "CREATE" or old is None or _parent(old) != _parent(queue) or resources_changed):
        _validate_hierarchical_resources(queue, store, p)


def _differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if set(a) != set(b):
        return True
    return any(parse_quantity_or_none(a[k]) != parse_quantity_or_none(b[k]) for k in a)


def _validate_fields(queue: Mapping[str, Any], p: Problems) -> None:
    spec = _spec(queue)
    weight = spec.get("weight")
    if weight is not None and not 1 <= weight <= 65535:
        p.add("spec.weight", f"Invalid value: {weight}: queue weight must be between 1 and 65535, inclusive")
    priority = spec.get("priority")
    if priority is not None and priority < 0:
        p.add("spec.priority", f"Invalid value: {priority}: must be greater than or equal to 0")
    parent = spec.get("parent")
    if parent:
        for e in dns1123_subdomain_errors(parent):
            p.add("spec.parent", f"Invalid value: {quote(parent)}: {e}")
    validate_resource_list(spec.get("capability"), "spec.capability", p)
    validate_resource_list(spec.get("deserved"), "spec.deserved", p)
    g = sub(spec, "guarantee")
    validate_resource_list(g.get("resource"), "spec.guarantee.resource", p)
    raw_cap, raw_des, raw_gua = (_resources(queue, k) for k in ("capability", "deserved", "guarantee"))
    for rname, graw in raw_gua.items():
        gq = parse_quantity_or_none(graw)
        if gq is None:
            continue
        if rname not in raw_des:
            p.add(f"spec.deserved.{rname}",
                  f'Invalid value: "<nil>": deserved[{rname}] must be >= guarantee[{rname}]={graw}')
            continue
        dq = parse_quantity_or_none(raw_des[rname])
        if dq is not None and dq < gq:
            p.add(f"spec.deserved.{rname}", f"Invalid value: {quote(str(raw_des[rname]))}: deserved[{rname}]="
                                            f"{raw_des[rname]} must be >= guarantee[{rname}]={graw}")
    for rname, draw in raw_des.items():
        dq = parse_quantity_or_none(draw)
        cq = parse_quantity_or_none(raw_cap[rname]) if rname in raw_cap else None
        if dq is not None and cq is not None and dq > cq:
            p.add(f"spec.deserved.{rname}", f"Invalid value: {quote(str(draw))}: deserved[{rname}]="
                                            f"{draw} must be <= capability[{rname}]={raw_cap[rname]}")


def _validate_hierarchy_annotations(queue: Mapping[str, Any], store: Store, p: Problems) -> None:
    md = queue["metadata"]
    ann = sub(md, "annotations")
    hierarchy = ann.get(HIERARCHY_KEY) or ""
    weights = ann.get(HIERARCHY_WEIGHTS_KEY) or ""
    if not hierarchy and not weights:
        return
    path = "metadata.annotations"
    paths = hierarchy.split("/")
    weight_list = weights.split("/")
    if len(paths) != len(weight_list):
        p.add(path, f"Invalid value: {quote(hierarchy)}: {HIERARCHY_KEY} must have the same length with "
                    f"{HIERARCHY_WEIGHTS_KEY}")
        return
    for w in weight_list:
        if not _GO_FLOAT_RE.fullmatch(w):
            p.add(path, f"Invalid value: {quote(weights)}: {w} in the {weights} is invalid number: "
                        f'strconv.ParseFloat: parsing "{w}": invalid syntax')
            return
        if not float(w) > 0:
            p.add(path, f"Invalid value: {quote(weights)}: {w} in the {weights} must be larger than 0")
            return
    name = md["name"]
    for other in store.list("Queue"):
        if other["metadata"]["name"] == name:
            continue
        oann = other["metadata"].get("annotations") or {}
        in_tree = oann.get(HIERARCHY_KEY) or ""
        if in_tree and in_tree.startswith(hierarchy + "/"):
            p.add(path, f"Invalid value: {quote(hierarchy)}: {hierarchy} is not allowed to be in the sub path of "
                        f"{in_tree} of queue {other['metadata']['name']}")
            return


def _get_queue(store: Store, name: str) -> dict[str, Any] | None:
    try:
        return store.get("Queue", None, name)
    except NotFound:
        return None


def _children(store: Store, name: str) -> list[dict[str, Any]]:
    return [q for q in store.list("Queue") if _parent(q) == name]


def _validate_parent(queue: Mapping[str, Any], store: Store, cfg: AdmissionConfig, p: Problems) -> None:
    """``validateHierarchicalQueue`` + ``validateQueueDepth``, plus an explicit cycle check."""
    name = queue["metadata"]["name"]
    parent = _parent(queue)
    if parent in ("", "root"):
        return
    if parent == name:
        p.add("spec.parent", f"queue {name} cannot use itself as parent")
        return
    if name == "root":
        # Every queue descends from root (no parent means root), so any parent of root closes a
        # cycle. Upstream's webhook stops its parent walk at "root" and cannot see it.
        chain = ["root", parent]
        found = _get_queue(store, parent)
        while found is not None and _parent(found) not in ("", "root") and len(chain) <= cfg.max_queue_depth + 1:
            chain.append(_parent(found))
            found = _get_queue(store, chain[-1])
        p.add("spec.parent", f"the root queue cannot have a parent: queue {parent} descends from root, so the "
                             f"parent chain {' -> '.join([*chain, 'root'])} would be a cycle")
        return
    depth = 1
    chain = [name]
    current = parent
    while current not in ("", "root"):
        depth += 1
        if current == name:
            p.add("spec.parent", f"queue {name} cannot have parent {parent}: the parent chain "
                                 f"{' -> '.join([*chain, name])} is a cycle")
            return
        if depth > cfg.max_queue_depth:
            p.add("spec.parent", f"queue {name} exceeds the maximum allowed depth of {cfg.max_queue_depth}")
            return
        found = _get_queue(store, current)
        if found is None:
            if current == parent:
                p.add("spec.parent", f"failed to get parent queue of queue {name}: "
                                     f'queues.scheduling.volcano.sh "{parent}" not found')
            else:
                p.add("spec.parent", f"failed to get parent queue {current} of queue {name}: "
                                     f'queues.scheduling.volcano.sh "{current}" not found')
            return
        chain.append(current)
        current = _parent(found)
    if not _children(store, parent):
        allocated = _allocated_pods(store, parent)
        if allocated > 0:
            p.add("spec.parent", f"queue {parent} cannot be the parent queue of queue {name} because it has "
                                 f"allocated Pods: {allocated}")


def _allocated_pods(store: Store, queue_name: str) -> int:
    """Pods allocated to a queue: ``status.allocated.pods`` as the scheduler writes it, or, if
    larger, the bound, unfinished pods of the queue's PodGroups found in the store."""
    queue = _get_queue(store, queue_name) or {}
    status = sub(queue, "status")
    allocated = sub(status, "allocated")
    written = parse_quantity_or_none(allocated.get(PODS, 0)) or Fraction(0)
    groups = {(pg["metadata"].get("namespace", ""), pg["metadata"]["name"]) for pg in store.list("PodGroup")
              if isinstance(pg.get("spec"), Mapping) and pg["spec"].get("queue") == queue_name}
    counted = 0
    if groups:
        for pod in store.list("Pod"):
            md = pod["metadata"]
            group = (md.get("annotations") or {}).get(GROUP_NAME_KEY)
            if (md.get("namespace", ""), group) not in groups:
                continue
            spec = pod.get("spec") or {}
            phase = (pod.get("status") or {}).get("phase")
            if spec.get("nodeName") and phase not in ("Succeeded", "Failed"):
                counted += 1
    return max(int(written), counted)


# ----------------------------------------------------------------------------- hierarchical resources


def _resource(rl: Mapping[str, Any]) -> Resource:
    r = Resource.from_list({k: v for k, v in rl.items() if parse_quantity_or_none(v) is not None})
    r.scalars.pop(PODS, None)  # upstream keeps pods as MaxTaskNum, outside these comparisons
    return r


def _less_partly(r: Resource, rr: Resource) -> bool:
    """``Resource.LessPartly(rr, Zero)``: some dimension of ``r`` is below ``rr``'s."""
    if r.milli_cpu < rr.milli_cpu or r.memory < rr.memory:
        return True
    if any(n not in r.scalars for n in rr.scalars):
        return True
    return any(v < rr.scalars.get(n, 0.0) for n, v in r.scalars.items())


def _fmt(r: Resource) -> str:
    parts = [f"cpu {r.milli_cpu:.2f}", f"memory {r.memory:.2f}"]
    parts.extend(f"{n} {v:.2f}" for n, v in sorted(r.scalars.items()))
    return ", ".join(parts)


def _fmt_one(name: str, value: float) -> str:
    if name == "cpu":
        return f"{value / 1000:g}" if value % 1000 == 0 else f"{value:g}m"
    if name == "memory":
        for suffix, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
            unit = 1024**power
            if value and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
        return f"{value:g}"
    return f"{value:.2f}"


def _capability_names(r: Resource) -> list[str]:
    return r.resource_names()


def _nearest_ancestor_capability(store: Store, queue: Mapping[str, Any], rname: str) -> float | None:
    parent = _parent(queue)
    seen: set[str] = set()
    while parent not in ("", "root") and parent not in seen:
        seen.add(parent)
        pq = _get_queue(store, parent)
        if pq is None:
            return None
        cap = _resources(pq, "capability")
        if cap:
            v = _resource(cap).get(rname)
            if v > 0:
                return v
        parent = _parent(pq)
    return None


def _subtree_max_capability(store: Store, queue: Mapping[str, Any], rname: str, seen: set[str]) -> float:
    name = queue["metadata"]["name"]
    if name in seen:
        return 0.0
    seen.add(name)
    cap = _resources(queue, "capability")
    if cap:
        v = _resource(cap).get(rname)
        if v > 0:
            return v
    return max((_subtree_max_capability(store, c, rname, seen) for c in _children(store, name)), default=0.0)


def _validate_hierarchical_resources(queue: Mapping[str, Any], store: Store, p: Problems) -> None:
    name = queue["metadata"]["name"]
    parent_name = _parent(queue)
    if parent_name not in ("", "root"):
        parent = _get_queue(store, parent_name)
        if parent is None:
            p.add("spec.parent", f'parent queue {parent_name} not found: queues.scheduling.volcano.sh '
                                 f'"{parent_name}" not found')
            return
        cap = _resources(queue, "capability")
        if cap:
            mine = _resource(cap)
            for rname in _capability_names(mine):
                limit = _nearest_ancestor_capability(store, queue, rname)
                if limit is not None and mine.get(rname) > limit:
                    p.add(f"spec.capability.{rname}",
                          f"queue {name} capability[{rname}]={_fmt_one(rname, mine.get(rname))} exceeds its "
                          f"ancestor's capability={_fmt_one(rname, limit)}")
                    return
        siblings = [q for q in _children(store, parent_name) if q["metadata"]["name"] != name]
        if _sum_exceeds(parent, [*siblings, queue], f"parent queue {parent_name} validation failed", p):
            return
    children = _children(store, name)
    if children:
        cap = _resources(queue, "capability")
        if cap:
            mine = _resource(cap)
            for rname in _capability_names(mine):
                child_max = max(_subtree_max_capability(store, c, rname, {name}) for c in children)
                if mine.get(rname) < child_max:
                    p.add(f"spec.capability.{rname}",
                          f"queue {name} capability[{rname}]={_fmt_one(rname, mine.get(rname))} is smaller than "
                          f"its descendants' max capability={_fmt_one(rname, child_max)}")
                    return
        _sum_exceeds(queue, children, f"queue {name} validation failed", p)


def _sum_exceeds(parent: Mapping[str, Any], children: Sequence[Mapping[str, Any]], prefix: str,
                 p: Problems) -> bool:
    """Σ children's guarantee / deserved must fit the parent's (``LessPartly`` with Zero default)."""
    parent_guarantee = _resource(_resources(parent, "guarantee"))
    parent_deserved = _resource(_resources(parent, "deserved"))
    total_guarantee = Resource()
    total_deserved = Resource()
    for child in children:
        total_guarantee.add(_resource(_resources(child, "guarantee")))
        if _less_partly(parent_guarantee, total_guarantee):
            p.add("spec.guarantee.resource", f"{prefix}: sum of children's guarantee ({_fmt(total_guarantee)}) "
                                             f"exceeds parent's guarantee limit ({_fmt(parent_guarantee)})")
            return True
        total_deserved.add(_resource(_resources(child, "deserved")))
        if _less_partly(parent_deserved, total_deserved):
            p.add("spec.deserved", f"{prefix}: sum of children's deserved ({_fmt(total_deserved)}) "
                                   f"exceeds parent's deserved limit ({_fmt(parent_deserved)})")
            return True
    return False


# ----------------------------------------------------------------------------- DELETE


def check_queue_delete(queue: Mapping[str, Any], store: Store, cfg: AdmissionConfig) -> None:
    """``validateQueueDeleting``: raises :class:`Forbidden`."""
    name = queue["metadata"]["name"]
    if name in ("default", "root"):
        raise Forbidden("Queue", name, f"`{name}` queue can not be deleted")
    if cfg.enable_queue_allocated_pods_check:
        allocated = _allocated_pods(store, name)
        if allocated > 0:
            raise Forbidden("Queue", name, f"queue {name} cannot be deleted because it has allocated Pods: {allocated}")
    children = sorted(q["metadata"]["name"] for q in _children(store, name))
    if children:
        raise Forbidden("Queue", name, f"queue {name} can not be deleted because it has {len(children)} child "
                                       f"queues: {', '.join(children)}")
