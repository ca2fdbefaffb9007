"""Admission of Pods (``pkg/webhooks/admission/pods/validate/admit_pod.go``).

On CREATE of a pod whose ``schedulerName`` is one of Volcano's, the job-disruption-budget
annotations are checked: ``volcano.sh/jdb-min-available`` and ``volcano.sh/jdb-max-unavailable``
each hold a positive integer or a percentage between 1% and 99%, and at most one is present.

Upstream no longer checks the queue state for pods (moved to the PodGroup webhook in commit
0f57b1bd3), and ``scheduling.volcano.sh/group-min-member`` is read leniently by the PodGroup
controller (a bad value means 1), so neither is an admission rule here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import AdmissionConfig, Problems, quote, sub
from pyvolcano.api.names import JDB_MAX_UNAVAILABLE_KEY, JDB_MIN_AVAILABLE_KEY

__all__ = ["validate_pod"]

_GO_INT_RE: Final = re.compile(r"[+-]?[0-9]+")


def validate_pod(pod: Mapping[str, Any], cfg: AdmissionConfig, p: Problems) -> None:
    spec = sub(pod, "spec")
    if spec.get("schedulerName") not in cfg.scheduler_names:
        return
    annotations = pod["metadata"].get("annotations")
    if not isinstance(annotations, Mapping) or not annotations:
        return
    keys = (JDB_MIN_AVAILABLE_KEY, JDB_MAX_UNAVAILABLE_KEY)
    present = 0
    for key in keys:
        if key not in annotations:
            continue
        present += 1
        problem = _int_or_percentage_problem(key, annotations[key])
        if problem:
            p.add(f"metadata.annotations[{key}]", problem)
            return
    if present > 1:
        p.add("metadata.annotations", f"not allow configure multiple annotations <[{' '.join(keys)}]> at same time")


def _int_or_percentage_problem(key: str, value: Any) -> str | None:
    """``validateIntPercentageStr`` (``intstr.Parse`` then the range checks)."""
    text = value if isinstance(value, str) else str(value)
    if _GO_INT_RE.fullmatch(text):
        if int(text) <= 0:
            return f"invalid value <{quote(text)}> for {key}, it must be a positive integer"
        return None
    digits = text.replace("%", "")
    if not _GO_INT_RE.fullmatch(digits):
        return f'invalid value strconv.Atoi: parsing {quote(digits)}: invalid syntax for {key}'
    n = int(digits)
    if n <= 0 or n >= 100:
        return f"invalid value <{quote(text)}> for {key}, it must be a valid percentage which between 1% ~ 99%"
    return None
