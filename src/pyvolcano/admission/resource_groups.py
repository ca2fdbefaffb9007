"""Resource groups of the ``/pods/mutate`` webhook (upstream ``pkg/webhooks/admission/pods/mutate``,
``pkg/webhooks/config``): the ``--admission-conf`` file.

The file (upstream's ``volcano-admission.conf``) lists ``resourceGroups``; each names a group
(``resourceGroup``), which pods belong to it (``object``) and what a new pod of the group gets:

* ``object.key: namespace`` — pods of the namespaces in ``object.value``;
* ``object.key: annotation`` — pods with one of the annotations of ``object.value``, each
  written ``"<key>: <value>"`` (a YAML mapping; where two entries name one key, the first wins);
* no ``object`` (or an empty key) — the annotation entries if any, or pods annotated
  ``volcano.sh/resource-group: <resourceGroup>``;
* ``labels`` are merged into the pod's ``nodeSelector`` (the group's win), ``tolerations`` are
  appended to the pod's, ``affinity`` (JSON text of a ``v1.Affinity``) is set when the pod has
  none (text that does not decode is skipped, as upstream), and ``schedulerName`` replaces the
  pod's.

Only the first group a pod belongs to applies, on CREATE. An ``object.key`` other than
``namespace`` and ``annotation`` matches no pod upstream; here it is refused when the file is
read (as is anything else that cannot work: tolerations and labels of the wrong shape, an
annotation entry that is not ``key: value``), with the field that is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.api import matching
from pyvolcano.util import safe_yaml

__all__ = ["DEFAULT_GROUP_ANNOTATION", "AdmissionConfiguration", "ResourceGroup", "apply_resource_groups",
           "load_admission_conf"]

DEFAULT_GROUP_ANNOTATION: Final = "volcano.sh/resource-group"
_KEYS: Final = ("", "namespace", "annotation")


class AdmissionConfError(ValueError):
    """The admission configuration cannot be used; the message names the source and the field."""


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    name: str
    key: str = ""
    values: tuple[str, ...] = ()
    scheduler_name: str = ""
    tolerations: tuple[dict[str, Any], ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    affinity: str = ""
    # object.value entries read as annotations (for key "annotation" or ""), first key wins.
    annotations: dict[str, str] = field(default_factory=dict)

    def has(self, pod: Mapping[str, Any]) -> bool:
        """``IsBelongResGroup`` of the group's kind."""
        md = pod.get("metadata") or {}
        if self.key == "namespace":
            return md.get("namespace") in self.values
        ann = md.get("annotations") or {}
        for k, v in self.annotations.items():
            if ann.get(k, "") == v:
                return True
        return self.key == "" and ann.get(DEFAULT_GROUP_ANNOTATION, "") == self.name


@dataclass(frozen=True, slots=True)
class AdmissionConfiguration:
    groups: tuple[ResourceGroup, ...] = ()


def _fail(source: str, path: str, problem: str) -> AdmissionConfError:
    return AdmissionConfError(f"{source}: {path}: {problem}")


def load_admission_conf(text: str, source: str) -> AdmissionConfiguration:
    """The resource groups of an admission configuration; raises :class:`AdmissionConfError`."""
    try:
        docs = [d for _i, d in safe_yaml.load_all(text, source)]
    except safe_yaml.InputError as e:
        raise AdmissionConfError(f"{source}: not valid YAML: {e}") from None
    doc = next((d for d in docs if d is not None), None)
    if doc is None:
        return AdmissionConfiguration()
    if not isinstance(doc, Mapping):
        raise _fail(source, "<top level>", f"got {doc!r}; expected a mapping with resourceGroups")
    _known(source, "", doc, ("resourceGroups",))
    raw = doc.get("resourceGroups") or []
    if not isinstance(raw, list):
        raise _fail(source, "resourceGroups", f"got {raw!r}; expected a list")
    return AdmissionConfiguration(tuple(_group(source, f"resourceGroups[{i}]", g) for i, g in enumerate(raw)))


def _known(source: str, prefix: str, doc: Mapping[Any, Any], fields: tuple[str, ...]) -> None:
    """Refuse a field upstream's type does not have (its YAML decoding would drop it: a typo)."""
    for k in doc:
        if k not in fields:
            raise _fail(source, f"{prefix}{k}", f"unknown field; expected one of {', '.join(fields)}")


def _group(source: str, path: str, g: Any) -> ResourceGroup:
    if not isinstance(g, Mapping):
        raise _fail(source, path, f"got {g!r}; expected a mapping")
    _known(source, f"{path}.", g, ("resourceGroup", "object", "schedulerName", "tolerations", "labels", "affinity"))
    name = g.get("resourceGroup", "")
    if not isinstance(name, str):
        raise _fail(source, f"{path}.resourceGroup", f"got {name!r}; expected a string")
    obj = g.get("object") or {}
    if not isinstance(obj, Mapping):
        raise _fail(source, f"{path}.object", f"got {obj!r}; expected {{key, value}}")
    _known(source, f"{path}.object.", obj, ("key", "value"))
    key = obj.get("key") or ""
    if key not in _KEYS:
        raise _fail(source, f"{path}.object.key", f"got {key!r}; expected namespace or annotation (or none)")
    values = obj.get("value") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise _fail(source, f"{path}.object.value", f"got {values!r}; expected a list of strings")
    annotations: dict[str, str] = {}
    if key in ("", "annotation"):
        for j, v in enumerate(values):
            try:
                parsed = [d for _i, d in safe_yaml.load_all(v, source)]
            except safe_yaml.InputError:
                parsed = [None]
            entry = parsed[0] if parsed else None
            if not isinstance(entry, Mapping):
                raise _fail(source, f"{path}.object.value[{j}]", f"got {v!r}; expected '<annotation>: <value>'")
            for k, x in entry.items():
                annotations.setdefault(str(k), "" if x is None else str(x))
    labels = g.get("labels") or {}
    if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
        raise _fail(source, f"{path}.labels", f"got {labels!r}; expected a mapping of label to value")
    tolerations = g.get("tolerations") or []
    try:
        matching.validate_tolerations(tolerations, f"{path}.tolerations")
    except matching.SelectorError as e:
        raise AdmissionConfError(f"{source}: {e}") from None
    scheduler = g.get("schedulerName") or ""
    affinity = g.get("affinity") or ""
    for what, value in (("schedulerName", scheduler), ("affinity", affinity)):
        if not isinstance(value, str):
            raise _fail(source, f"{path}.{what}", f"got {value!r}; expected a string")
    return ResourceGroup(name=name, key=key, values=tuple(values), scheduler_name=scheduler,
                         tolerations=tuple(dict(t) for t in tolerations), labels=dict(labels), affinity=affinity,
                         annotations=annotations)


def apply_resource_groups(conf: AdmissionConfiguration, pod: dict[str, Any]) -> str | None:
    """``createPatch``: apply the first group ``pod`` belongs to, in place; its name, or None."""
    for group in conf.groups:
        if not group.has(pod):
            continue
        spec = pod.setdefault("spec", {})
        if group.labels:
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **group.labels}
        if group.affinity and spec.get("affinity") is None:
            try:
                affinity = json.loads(group.affinity)
            except ValueError:
                affinity = None  # upstream logs "Failed to unmarshal JSON" and goes on
            if isinstance(affinity, dict):
                spec["affinity"] = affinity
        if group.tolerations:
            spec["tolerations"] = [*(spec.get("tolerations") or []), *(dict(t) for t in group.tolerations)]
        if group.scheduler_name:
            spec["schedulerName"] = group.scheduler_name
        return group.name
    return None
