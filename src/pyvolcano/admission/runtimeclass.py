"""The API server's RuntimeClass admission plugin and RuntimeClass validation.

``plugin/pkg/admission/runtimeclass/admission.go`` (on by default in every cluster), for a Pod
on CREATE with ``spec.runtimeClassName``:

* the RuntimeClass must exist, else the pod is refused (Forbidden) with ``pod rejected:
  RuntimeClass "<name>" not found``;
* its ``overhead.podFixed`` becomes the pod's ``spec.overhead`` (a pod that already sets a
  different overhead is refused: ``pod rejected: Pod's Overhead doesn't match RuntimeClass's
  defined Overhead``);
* its ``scheduling.nodeSelector`` is merged into the pod's ``nodeSelector`` (a key the pod sets
  to another value is refused: ``conflict: runtimeClass.scheduling.nodeSelector[k] = v;
  pod.spec.nodeSelector[k] = w``) and its ``scheduling.tolerations`` are added to the pod's
  (``tolerations.MergeTolerations``: one that an existing toleration covers is not added).

And, validating, a pod with ``spec.overhead`` but no RuntimeClass overhead is refused: ``pod
rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead``. So the
scheduler sees the overhead, node selector and tolerations a RuntimeClass implies: on a real
cluster the API server applies them; in the simulator and ``validate`` the store's admission does.

RuntimeClass objects (``pkg/apis/node/validation``): ``handler`` a DNS label, ``overhead.podFixed``
quantities, ``scheduling.nodeSelector`` labels and ``scheduling.tolerations`` valid tolerations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import dns1123_label_errors, validate_labels, validate_resource_list
from pyvolcano.api import matching
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.store.base import Forbidden, NotFound, Store, object_key

__all__ = ["admit_pod_runtime_class", "validate_runtime_class"]

_POD_FIXED_NAMES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _same_resources(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``equality.Semantic.DeepEqual`` on ResourceLists: the same names with equal amounts."""
    if a.keys() != b.keys():
        return False
    try:
        return all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except (QuantityError, TypeError, ValueError):
        return False


def _is_superset(ss: Mapping[str, Any], t: Mapping[str, Any]) -> bool:
    """``isSuperset`` (``pkg/util/tolerations``): ``ss`` tolerates everything ``t`` does."""
    if ss == t:
        return True
    key, op = ss.get("key") or "", ss.get("operator") or ""
    if (t.get("key") or "") != key and (key != "" or op != "Exists"):
        return False
    effect = ss.get("effect") or ""
    if (t.get("effect") or "") != effect and effect != "":
        return False
    if effect == "NoExecute" and ss.get("tolerationSeconds") is not None:
        t_seconds = t.get("tolerationSeconds")
        if t_seconds is None or t_seconds > ss["tolerationSeconds"]:
            return False
    if op in ("Equal", ""):
        # Upstream compares the operator literally: an empty one is not "Equal" here.
        return t.get("operator") == "Equal" and (t.get("value") or "") == (ss.get("value") or "")
    return op == "Exists"


def _merge_tolerations(first: list[Any], second: list[Any]) -> list[Any]:
    """``tolerations.MergeTolerations``: every toleration of both lists that no other one covers
    (of two equal ones, the first)."""
    everything = [t for t in (*first, *second) if isinstance(t, Mapping)]
    merged: list[Mapping[str, Any]] = []
    for i, t in enumerate(everything):
        if any(_is_superset(m, t) for m in merged):
            continue
        if any(t2 != t and _is_superset(t2, t) for t2 in everything[i + 1:]):
            continue
        merged.append(t)
    return [dict(t) for t in merged]


def admit_pod_runtime_class(op: str, pod: dict[str, Any], store: Store) -> None:
    """Apply (on CREATE) and check the pod's RuntimeClass in place; raise :class:`Forbidden`."""
    if op != "CREATE":
        return
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    md = sub(pod, "metadata")
    key = object_key("Pod", md.get("namespace"), str(md.get("name") or "?"))
    name = spec.get("runtimeClassName")
    rc: Mapping[str, Any] | None = None
    if isinstance(name, str) and name:
        try:
            rc = store.get("RuntimeClass", None, name)
        except NotFound:
            raise Forbidden("Pod", key, f"pod rejected: RuntimeClass {quote(name)} not found") from None
    podfixed = sub(sub(rc or {}, "overhead"), "podFixed")
    overhead = spec.get("overhead")
    if rc is not None and sub(rc, "overhead"):
        if isinstance(overhead, Mapping) and overhead and not _same_resources(overhead, podfixed):
            raise Forbidden("Pod", key, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        spec["overhead"] = dict(podfixed)
    elif overhead is not None:
        raise Forbidden("Pod", key, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
                                    "Overhead")
    scheduling = sub(rc or {}, "scheduling")
    selector = sub(scheduling, "nodeSelector")
    if selector:
        merged = dict(sub(spec, "nodeSelector"))
        for k, v in selector.items():
            if k in merged and merged[k] != v:
                raise Forbidden("Pod", key, f"conflict: runtimeClass.scheduling.nodeSelector[{k}] = {v}; "
                                            f"pod.spec.nodeSelector[{k}] = {merged[k]}")
            merged[k] = v
        spec["nodeSelector"] = merged
    tolerations = scheduling.get("tolerations")
    if isinstance(tolerations, list) and tolerations:
        current = spec.get("tolerations")
        spec["tolerations"] = _merge_tolerations(current if isinstance(current, list) else [], tolerations)


def validate_runtime_class(obj: Mapping[str, Any], p: Problems) -> None:
    """``ValidateRuntimeClass``: the handler, the overhead and the scheduling constraints."""
    s = ShapeChecker(p)
    handler = s.string(obj, "handler", "handler")
    if handler is None and obj.get("handler") is None:
        p.add("handler", "Required value")
    elif handler is not None:
        for e in dns1123_label_errors(handler):
            p.add("handler", f"Invalid value: {quote(handler)}: {e}")
    overhead = s.mapping(obj, "overhead", "overhead")
    if overhead is not None:
        fixed = overhead.get("podFixed")
        for name in fixed if isinstance(fixed, Mapping) else {}:
            if isinstance(name, str) and "/" not in name and name not in _POD_FIXED_NAMES \
                    and not name.startswith("hugepages-"):
                # Upstream validates podFixed as container limits, under this path.
                p.add(f"overhead.limits[{name}]", f"Invalid value: {quote(name)}: must be a standard resource type "
                                                  "or fully qualified")
                p.add(f"overhead.limits[{name}]", f"Invalid value: {quote(name)}: must be a standard resource for "
                                                  "containers")
        validate_resource_list({k: v for k, v in (fixed if isinstance(fixed, Mapping) else {}).items()
                                if not isinstance(k, str) or "/" in k or k in _POD_FIXED_NAMES
                                or k.startswith("hugepages-")}, "overhead.podFixed", p)
    scheduling = s.mapping(obj, "scheduling", "scheduling")
    if scheduling is not None:
        validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector", p)
        if scheduling.get("tolerations") is not None:
            try:
                matching.validate_tolerations(scheduling["tolerations"], "scheduling.tolerations")
            except matching.SelectorError as e:
                where, _, msg = str(e).partition(": ")
                p.add(where, f"Invalid value: {msg}")
