"""The API server's validation of PodDisruptionBudgets (``policy/v1``) and ResourceQuotas
(``v1``), the two core kinds the pdb and resourcequota plugins read
(``k8s.io/kubernetes/pkg/apis/policy/validation``, ``.../core/validation``
``ValidateResourceQuota``), reduced to what a scheduler input needs to be well formed.

* PodDisruptionBudget: ``spec.minAvailable`` / ``spec.maxUnavailable`` a non-negative integer
  or a percentage (not both), ``spec.selector`` a label selector; the status counts
  non-negative integers.
* ResourceQuota: ``spec.hard``, ``status.hard`` and ``status.used`` non-negative quantities.

Problems are appended to a :class:`~pyvolcano.admission._common.Problems`; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, quote
from pyvolcano.admission.k8s import validate_object_meta, validate_resource_list
from pyvolcano.api import matching

__all__ = ["validate_pod_disruption_budget", "validate_resource_quota"]

_PERCENT: Final = re.compile(r"[0-9]+%")


def _mapping(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = obj.get(key)
    return v if isinstance(v, Mapping) else {}


def _int_or_percent(value: Any, path: str, p: Problems) -> None:
    if value is None:
        return
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            p.add(path, f"Invalid value: {value}: must be greater than or equal to 0")
        return
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        if int(value[:-1]) > 100:
            p.add(path, f"Invalid value: {quote(value)}: must not be greater than 100%")
        return
    p.add(path, f"Invalid value: {quote(value)}: a valid percent string must be a numeric string followed by an "
                "ending '%' (e.g. '1%',  or '93%')")


def validate_pod_disruption_budget(obj: Mapping[str, Any], p: Problems) -> None:
    validate_object_meta(obj, p)
    spec = _mapping(obj, "spec")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        p.add("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")
    _int_or_percent(spec.get("minAvailable"), "spec.minAvailable", p)
    _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable", p)
    if spec.get("selector") is not None:
        try:
            matching.compile_label_selector(spec["selector"], "spec.selector")
        except matching.SelectorError as e:
            p.add("spec.selector", f"Invalid value: {quote(spec['selector'])}: {e}")
    status = _mapping(obj, "status")
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        v = status.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            p.add(f"status.{key}", f"Invalid value: {quote(v)}: must be a non-negative integer")
    disrupted = status.get("disruptedPods")
    if disrupted is not None and not isinstance(disrupted, Mapping):
        p.add("status.disruptedPods", f"Invalid value: {quote(disrupted)}: expected a mapping of pod name to time")


def validate_resource_quota(obj: Mapping[str, Any], p: Problems) -> None:
    validate_object_meta(obj, p)
    validate_resource_list(_mapping(obj, "spec").get("hard"), "spec.hard", p)
    status = _mapping(obj, "status")
    validate_resource_list(status.get("hard"), "status.hard", p)
    validate_resource_list(status.get("used"), "status.used", p)
