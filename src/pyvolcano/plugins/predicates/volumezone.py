"""VolumeZone in the predicates plugin (kube-scheduler ``volumezone``).

A pod's bound PVs that carry a zone or region label (GA or beta) reach only nodes in one of
the label's zones (a value may list several, joined by ``__``). A node without any zone or
region label passes; a node missing the PV's label (its beta PV label is also looked up under
the GA key) or with another value fails with "node(s) had no available volume zone",
UnschedulableAndUnresolvable. Unbound claims are left to volume binding.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyvolcano.api.storage import PersistentVolume

__all__ = ["REASON_ZONE_CONFLICT", "volume_zones", "zone_conflict"]

REASON_ZONE_CONFLICT = "node(s) had no available volume zone"

_GA_ZONE = "topology.kubernetes.io/zone"
_GA_REGION = "topology.kubernetes.io/region"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
TOPOLOGY_LABELS = (_BETA_ZONE, _BETA_REGION, _GA_ZONE, _GA_REGION)
_TO_GA = {_BETA_ZONE: _GA_ZONE, _BETA_REGION: _GA_REGION}


def volume_zones(pvs: list[PersistentVolume | None]) -> tuple[tuple[str, frozenset[str]], ...]:
    """The (label, allowed values) the pod's bound PVs require."""
    out = []
    for pv in pvs:
        if pv is None:
            continue
        for key in TOPOLOGY_LABELS:
            value = pv.labels.get(key)
            if value:
                out.append((key, frozenset(value.split("__"))))
    return tuple(out)


def zone_conflict(zones: tuple[tuple[str, frozenset[str]], ...], labels: Mapping[str, str]) -> bool:
    if not zones or not any(k in labels for k in TOPOLOGY_LABELS):
        return False
    for key, values in zones:
        v = labels.get(key)
        if v is None:
            v = labels.get(_TO_GA.get(key, key))
        if v is None or v not in values:
            return True
    return False
