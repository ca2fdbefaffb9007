"""Object fields that change placement upstream and that pyvolcano's scheduler does not act on.

Upstream acts on some fields only through one plugin (a Queue's ``spec.affinity`` only through
``nodegroup``; a pod's ``volcano.sh/revocable-zone`` only through ``tdm``); a configuration
without that plugin places the job as if the field were absent, upstream and here alike, and
pyvolcano does not have every such plugin yet. Other fields pyvolcano does not act on at all
(a pod's inline CSI volume against the node's attach limits; a ResourceClaim's
consumable-capacity request). Each is declared once in :data:`PLUGIN_FIELDS`: the kind, where the
field is (a ``spec`` field, an annotation, a label, or a ``path`` from the object's root in which
``[]`` stands for every item of a list), and the plugin that acts on it (``None``: pyvolcano does
not act on it whatever the configuration). ``validate`` warns about every such field it admits
(it has no configuration); ``job why`` adds one note per field of the job's queue, PodGroup,
pods and ResourceClaims whose plugin the configuration in use does not enable.

A field is *present* when its value is a non-empty mapping, list or string, or ``true`` (an
annotation or label with any value). :meth:`PluginField.in_document` reads a manifest mapping;
:meth:`PluginField.in_object` reads the typed objects of :mod:`pyvolcano.api.objects` (whose
``spec`` fields of interest are kept as given for this; a ``path`` field is looked up in the
object's ``unmodelled`` paths, which its reader fills from this table). Pure data and lookups:
no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pyvolcano.api.names import (
    COOLDOWN_KEY,
    NODEGROUP_RESOURCE_LIMITS_KEY,
    NUMA_POLICY_KEY,
    REVOCABLE_ZONE_KEY,
    TASK_TOPOLOGY_AFFINITY_KEY,
    TASK_TOPOLOGY_ANTI_AFFINITY_KEY,
    TASK_TOPOLOGY_TASK_ORDER_KEY,
)

__all__ = ["PLUGIN_FIELDS", "PluginField", "fields_of", "job_fields", "message", "placement_notes",
           "unmodelled_paths"]

Where = Literal["spec", "annotation", "label", "path"]

TASK_TOPOLOGY_KEYS: Final = (TASK_TOPOLOGY_AFFINITY_KEY, TASK_TOPOLOGY_ANTI_AFFINITY_KEY, TASK_TOPOLOGY_TASK_ORDER_KEY)


@dataclass(frozen=True, slots=True)
class PluginField:
    """One field: ``kind`` (``Queue``, ``PodGroup``, ``Pod``, a ``resource.k8s.io`` kind), where
    it is, ``key`` (the spec field's name, the annotation's/label's key, or the path), what it
    is, and the plugin that acts on it (or, for none, ``effect``: what pyvolcano does instead)."""

    kind: str
    where: Where
    key: str
    what: str
    plugin: str | None
    effect: str = ""  # what pyvolcano does instead (plugin None); default: placed as if it were absent

    @property
    def path(self) -> str:
        if self.where == "spec":
            return f"spec.{self.key}"
        if self.where == "path":
            return self.key
        return f"metadata.{self.where}s[{self.key}]"

    def in_document(self, doc: Mapping[str, Any]) -> bool:
        """Whether a manifest mapping of this kind sets the field."""
        if self.where == "spec":
            spec = doc.get("spec")
            return isinstance(spec, Mapping) and _present(spec.get(self.key))
        if self.where == "path":
            return _found(doc, tuple(self.key.split(".")))
        md = doc.get("metadata")
        values = md.get(f"{self.where}s") if isinstance(md, Mapping) else None
        return isinstance(values, Mapping) and self.key in values

    def in_object(self, obj: Any) -> bool:
        """Whether a typed object of this kind sets the field."""
        if self.where == "spec":
            return _present(getattr(obj, self.key, None))
        if self.where == "path":
            return self.key in (getattr(obj, "unmodelled", None) or ())
        values = getattr(obj, f"{self.where}s", None)
        return isinstance(values, Mapping) and self.key in values


def _present(value: Any) -> bool:
    return value is True or (isinstance(value, Mapping | str | list) and bool(value))


def _found(value: Any, parts: tuple[str, ...]) -> bool:
    if not parts:
        return _present(value)
    head, rest = parts[0], parts[1:]
    if head.endswith("[]"):
        items = value.get(head[:-2]) if isinstance(value, Mapping) else None
        return isinstance(items, list) and any(_found(item, rest) for item in items)
    return _found(value.get(head) if isinstance(value, Mapping) else None, rest)


def unmodelled_paths(kind: str, doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``path`` fields of ``kind`` a manifest mapping sets (what a reader keeps as ``unmodelled``)."""
    return tuple(f.key for f in PLUGIN_FIELDS if f.kind == kind and f.where == "path" and f.in_document(doc))


_NODEGROUP: Final = "node-group affinity"
_CAPACITY: Final = "a consumable-capacity request"
_WHOLE: Final = "devices are allocated whole, as if it were absent"
_DERIVED: Final = "derived attributes"
_NO_DEVICE: Final = "a constraint naming one is met by no device"

PLUGIN_FIELDS: Final[tuple[PluginField, ...]] = (
    PluginField("Queue", "spec", "affinity", _NODEGROUP, "nodegroup"),
    PluginField("Queue", "annotation", NODEGROUP_RESOURCE_LIMITS_KEY, "per node-group resource limits", "nodegroup"),
    *(PluginField("PodGroup", "annotation", key, "task topology", "task-topology") for key in TASK_TOPOLOGY_KEYS),
    PluginField("PodGroup", "annotation", REVOCABLE_ZONE_KEY, "a revocable zone", "tdm"),
    PluginField("Pod", "annotation", REVOCABLE_ZONE_KEY, "a revocable zone", "tdm"),
    PluginField("Pod", "label", REVOCABLE_ZONE_KEY, "a revocable zone", "tdm"),
    PluginField("Pod", "annotation", COOLDOWN_KEY, "a cooldown before preemption", "cdp"),
    PluginField("Pod", "label", COOLDOWN_KEY, "a cooldown before preemption", "cdp"),
    PluginField("Pod", "annotation", NUMA_POLICY_KEY, "a NUMA topology policy", "numa-aware"),
    PluginField("Pod", "path", "spec.volumes[].csi", "an inline CSI volume", None,
                "it is not counted against the node's CSI attach limit"),
    *(PluginField(kind, "path", f"{root}.devices.requests[].{part}", what, None, effect)
      for kind, root in (("ResourceClaim", "spec"), ("ResourceClaimTemplate", "spec.spec"))
      for part, what, effect in (
          ("exactly.capacity", _CAPACITY, _WHOLE), ("firstAvailable[].capacity", _CAPACITY, _WHOLE),
          ("exactly.derivedAttributes", _DERIVED, _NO_DEVICE), ("firstAvailable[].derivedAttributes", _DERIVED,
                                                                _NO_DEVICE))),
    *(PluginField(kind, "path", f"{root}.devices.constraints[].distinctAttribute", "a distinctAttribute "
                  "constraint", None, "the pod is refused when it is scheduled (NodeFit.ClaimInvalid)")
      for kind, root in (("ResourceClaim", "spec"), ("ResourceClaimTemplate", "spec.spec"))),
    PluginField("DeviceClass", "path", "spec.extendedResourceName", "an extended resource backed by the class's "
                "devices", None, "pods that request it by name are not given these devices"),
    PluginField("ResourceSlice", "path", "spec.perDeviceNodeSelection", "per-device node selection", None,
                "the slice's devices are never picked"),
    *(PluginField("ResourceSlice", "path", f"spec.devices[].{key}", what, None, effect) for key, what, effect in (
        ("consumesCounters", "a partitionable device", "it is never picked"),
        ("bindingConditions", "binding conditions", "the device is never picked"),
        ("allowMultipleAllocations", "a device shared by several allocations",
         "it is allocated to one claim at a time"))),
)
"""Every such field, by kind. A Volcano Job's fields reach these through its PodGroup and pods
(``spec.tasks[].topologyPolicy`` becomes the pods' NUMA policy annotation)."""


def fields_of(kind: str, obj: Any, enabled: Collection[str] | None = None) -> Iterator[PluginField]:
    """The fields ``obj`` (a manifest mapping or a typed object of ``kind``) sets whose plugin is
    not in ``enabled`` (``None``: no configuration, every such field)."""
    document = isinstance(obj, Mapping)
    for f in PLUGIN_FIELDS:
        if f.kind != kind or (enabled is not None and f.plugin is not None and f.plugin in enabled):
            continue
        if f.in_document(obj) if document else f.in_object(obj):
            yield f


def job_fields(job: Mapping[str, Any]) -> Iterator[tuple[str, PluginField]]:
    """``(path in the Job, field)`` for a Volcano Job manifest: its annotations and labels reach
    its PodGroup and pods, each task's template its pods, ``topologyPolicy`` the pods' NUMA
    policy annotation. Each field once, at its first path."""
    seen: set[tuple[str, str]] = set()
    md = job.get("metadata")
    found: list[tuple[str, PluginField]] = []
    for kind in ("PodGroup", "Pod"):
        found += [(f.path, f) for f in fields_of(kind, {"metadata": md} if isinstance(md, Mapping) else {})]
    spec = job.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, Mapping) else None
    numa = next(f for f in PLUGIN_FIELDS if f.key == NUMA_POLICY_KEY)
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        if not isinstance(task, Mapping):
            continue
        if _present(task.get("topologyPolicy")):
            found.append((f"spec.tasks[{i}].topologyPolicy", numa))
        template = task.get("template")
        found += [(f"spec.tasks[{i}].template.{f.path}", f)
                  for f in fields_of("Pod", template if isinstance(template, Mapping) else {})]
    for path, f in found:
        if (path, f.what) not in seen and (f.key, f.what) not in seen:
            seen.update({(path, f.what), (f.key, f.what)})
            yield path, f


def placement_notes(queue: Any, podgroup: Any, pods: Iterable[Any], enabled: Collection[str],
                    claims: Iterable[Any] = ()) -> list[str]:
    """``job why``'s notes for one job: each field of its queue, PodGroup, pods and their
    ResourceClaims (typed objects; ``None`` for one it lacks) that the configuration's plugins
    (``enabled``) do not act on, the pods' fields once each with how many pods set them."""
    notes: list[str] = []
    if queue is not None:
        notes += [f"Queue {queue.name}: {message(f, with_configuration=True)}"
                  for f in fields_of("Queue", queue, enabled)]
    if podgroup is not None:
        notes += [f"PodGroup {podgroup.namespace}/{podgroup.name}: {message(f, with_configuration=True)}"
                  for f in fields_of("PodGroup", podgroup, enabled)]
    by_field: dict[PluginField, list[Any]] = {}
    for pod in pods:
        for f in fields_of("Pod", pod, enabled):
            by_field.setdefault(f, []).append(pod)
    for f, with_it in by_field.items():
        first = with_it[0]
        more = f" and {len(with_it) - 1} more pods" if len(with_it) > 1 else ""
        notes.append(f"Pod {first.namespace}/{first.name}{more}: {message(f, with_configuration=True)}")
    for claim in claims:
        notes += [f"ResourceClaim {claim.namespace}/{claim.name}: {message(f, with_configuration=True)}"
                  for f in fields_of("ResourceClaim", claim, enabled)]
    return notes


def message(f: PluginField, *, with_configuration: bool, path: str | None = None) -> str:
    """What to tell about ``f`` (at ``path``, default its own): who acts on it and, when a
    configuration is in use (``with_configuration``; it does not enable the plugin), that it
    is not."""
    where = f"{path or f.path} ({f.what})"
    if f.plugin is None:
        return f"{where} is not acted on by pyvolcano yet; {f.effect or 'the job is placed as if it were absent'}"
    if not with_configuration:
        return f"{where} is honoured only by the {f.plugin} plugin"
    return (f"{where} is honoured only by the {f.plugin} plugin, which the scheduler configuration does not "
            "enable; the job is placed as if it were absent")
