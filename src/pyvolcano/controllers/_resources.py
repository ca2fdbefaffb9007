"""Kubernetes ResourceList arithmetic for the controllers (PodGroup ``minResources``).

Upstream computes a PodGroup's ``minResources`` with the resource-quota pod evaluator
(``k8s.io/kubernetes/pkg/quota/v1/evaluator/core.PodUsageFunc``) and then maps
``requests.<extended>`` back to ``<extended>`` (``pkg/controllers/util.GetPodQuotaUsage``).
So a PodGroup made from a pod asking for ``cpu: 1`` carries ``count/pods``, ``pods``,
``cpu``, ``requests.cpu`` and, if limits are set, ``limits.cpu`` — exactly what
``kubectl get pg -o yaml`` shows on a real cluster. This module reproduces that list.

Quantities are exact (:class:`fractions.Fraction`) and remember their format (DecimalSI,
BinarySI or DecimalExponent) the way ``resource.Quantity`` does, so that sums print in
Kubernetes' canonical form (``2``, ``1500m``, ``3Gi``, ``1k``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from pyvolcano.api.defaults import is_pod_level_resource
from pyvolcano.api.quantity import parse_quantity

__all__ = [
    "Quantity",
    "ResourceList",
    "add_lists",
    "format_list",
    "lists_equal",
    "pod_quota_usage",
    "pod_usage",
    "scale_list",
]

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

Quantity = tuple[Fraction, str]
ResourceList = dict[str, Quantity]

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}

# Native resource names the quota evaluator treats specially (k8s.io/api/core/v1).
_NATIVE_PREFIX = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."


def quantity(value: Any) -> Quantity:
    """Parse a manifest quantity; its format follows its suffix (``Ki`` ⇒ BinarySI, ``e3`` ⇒ exponent)."""
    amount = parse_quantity(value)
    fmt = DECIMAL_SI
    if isinstance(value, str):
        s = value.strip()
        if s.endswith(_BINARY_SUFFIXES):
            fmt = BINARY_SI
        else:
            tail = s.lstrip("+-0123456789.")
            if tail[:1] in ("e", "E") and len(tail) > 1:
                fmt = DECIMAL_EXPONENT
    return amount, fmt


def format_quantity(q: Quantity) -> str:
    """``resource.Quantity.String()``: canonical form in the quantity's format."""
    amount, fmt = q
    if amount == 0:
        return "0"
    # Quantities are held at nano precision at most; upstream rounds up on parse.
    if (amount * 10**9).denominator != 1:
        amount = Fraction(math.ceil(amount * 10**9), 10**9)
    if fmt == BINARY_SI and -1024 < amount < 1024:
        fmt = DECIMAL_SI
    if fmt == BINARY_SI and amount.denominator != 1:
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        n = int(amount)
        exp = 0
        while n % 1024 == 0 and exp < len(_BINARY_SUFFIXES):
            n //= 1024
            exp += 1
        return f"{n}{_BINARY_SUFFIXES[exp - 1] if exp else ''}"
    # Decimal: strip factors of ten, then lower the exponent to a multiple of three.
    exp = -9
    mantissa = int(amount * 10**9)
    while mantissa % 10 == 0:
        mantissa //= 10
        exp += 1
    shift = exp % 3
    mantissa *= 10**shift
    exp -= shift
    if fmt == DECIMAL_SI and exp in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exp]}"
    return f"{mantissa}e{exp}" if exp else str(mantissa)


def parse_list(rl: Mapping[str, Any] | None) -> ResourceList:
    out: ResourceList = {}
    for name, v in (rl or {}).items():
        out[str(name)] = quantity(v)
    return out


def format_list(rl: ResourceList) -> dict[str, str]:
    return {name: format_quantity(rl[name]) for name in sorted(rl)}


def add_lists(a: ResourceList, b: ResourceList) -> ResourceList:
    """``quotav1.Add``: the sum keeps the left operand's format for shared names."""
    out = dict(a)
    for name, (amount, fmt) in b.items():
        if name in out:
            out[name] = (out[name][0] + amount, out[name][1])
        else:
            out[name] = (amount, fmt)
    return out


def _max_lists(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, q in b.items():
        if name not in out or q[0] > out[name][0]:
            out[name] = q
    return out


def scale_list(rl: ResourceList, count: int) -> ResourceList:
    """``CalTaskRequests``: ``count`` copies of ``rl`` added together (empty for count ≤ 0)."""
    if count <= 0:
        return {}
    # Same values and formats as adding the list ``count`` times.
    return {name: (amount * count, fmt) for name, (amount, fmt) in rl.items()}


def lists_equal(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """``equality.Semantic.DeepEqual`` on ResourceLists: same names, equal values."""
    try:
        pa, pb = parse_list(a), parse_list(b)
    except ValueError:
        return False
    return pa.keys() == pb.keys() and all(pa[k][0] == pb[k][0] for k in pa)


# ---------------------------------------------------------------------- pod usage
def _container_list(c: Mapping[str, Any], which: str) -> ResourceList:
    res = c.get("resources") if isinstance(c, Mapping) else None
    if not isinstance(res, Mapping):
        return {}
    rl = res.get(which)
    return parse_list(rl) if isinstance(rl, Mapping) else {}


def _pod_totals(pod_spec: Mapping[str, Any], which: str) -> ResourceList:
    """``resourcehelper.PodRequests`` / ``PodLimits`` (sidecar-aware, pod-level resources, plus overhead)."""
    total: ResourceList = {}
    for c in pod_spec.get("containers") or []:
        total = add_lists(total, _container_list(c, which))
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for c in pod_spec.get("initContainers") or []:
        cl = _container_list(c, which)
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            # Sidecars run alongside the main containers for the pod's whole life.
            total = add_lists(total, cl)
            restartable = add_lists(restartable, cl)
            init_max = _max_lists(init_max, restartable)
        else:
            init_max = _max_lists(init_max, add_lists(cl, restartable))
    total = _max_lists(total, init_max)
    total = _with_pod_level(total, pod_spec, which)
    overhead = pod_spec.get("overhead")
    if isinstance(overhead, Mapping):
        ov = parse_list(overhead)
        if which == "requests":
            total = add_lists(total, ov)
        else:
            total = {k: (v[0] + ov[k][0], v[1]) if k in ov else v for k, v in total.items()}
    return total


def _with_pod_level(total: ResourceList, pod_spec: Mapping[str, Any], which: str) -> ResourceList:
    """``PodRequests`` / ``PodLimits`` with pod-level resources: the pod's ``spec.resources``
    amounts of cpu, memory and hugepages replace the containers' (requests when the pod sets a
    supported request, limits when it sets a supported request or limit)."""
    res = pod_spec.get("resources")
    if not isinstance(res, Mapping):
        return total
    own = {which: res.get(which), "other": res.get("limits" if which == "requests" else "requests")}
    lists = {k: parse_list(v) if isinstance(v, Mapping) else {} for k, v in own.items()}
    supported = [n for n in lists[which] if is_pod_level_resource(n)]
    applies = bool(supported) or (which == "limits" and any(is_pod_level_resource(n) for n in lists["other"]))
    if not applies:
        return total
    out = dict(total)
    for name in supported:
        out[name] = lists[which][name]
    return out


def _is_native(name: str) -> bool:
    return "/" not in name or name.startswith(_NATIVE_PREFIX)


def _is_extended(name: str) -> bool:
    return not _is_native(name) and not name.startswith(_REQUESTS_PREFIX)


def pod_usage(pod: Mapping[str, Any]) -> ResourceList:
    """The resource-quota pod evaluator's usage of one pod (``core.PodUsageFunc``): what a
    ResourceQuota of its namespace counts for it."""
    one = (Fraction(1), DECIMAL_SI)
    usage: ResourceList = {"count/pods": one}
    phase = ((pod.get("status") or {}) if isinstance(pod.get("status"), Mapping) else {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        # Terminal pods only count as objects.
        return usage
    pod_spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(pod_spec, Mapping)
    requests = _pod_totals(pod_spec, "requests")
    limits = _pod_totals(pod_spec, "limits")
    usage["pods"] = one
    for res in ("cpu", "memory", "ephemeral-storage"):
        if res in requests:
            usage[res] = requests[res]
            usage[f"requests.{res}"] = requests[res]
        if res in limits:
            usage[f"limits.{res}"] = limits[res]
    for name in sorted(requests):
        if name.startswith("hugepages-"):
            usage[name] = requests[name]
            usage[f"requests.{name}"] = requests[name]
        if _is_extended(name):
            usage[f"requests.{name}"] = requests[name]
    return usage


def pod_quota_usage(pod: Mapping[str, Any]) -> ResourceList:
    """``GetPodQuotaUsage``: the quota evaluator's usage of one pod, extended names unmasked."""
    usage = pod_usage(pod)
    # pkg/controllers/util: "requests.<extended>" is also recorded as "<extended>".
    for name in sorted(usage):
        if name.startswith(_REQUESTS_PREFIX) and not _is_native(name):
            usage[name[len(_REQUESTS_PREFIX):]] = usage[name]
    return usage
