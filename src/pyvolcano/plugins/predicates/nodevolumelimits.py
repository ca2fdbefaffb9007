"""NodeVolumeLimits (CSI) in the predicates plugin (kube-scheduler ``nodevolumelimits/csi.go``).

A node's CSINode publishes, per CSI driver, how many volumes it can attach. The pod's CSI
volumes (a bound claim's PV's driver and handle; an unbound claim's class provisioner, with a
handle of its own) that are not attached there already are added to the unique volumes the
node's pods use, per driver; more than the limit fails with "node(s) exceed max volume count"
(Unschedulable: preemption can free a slot). Drivers whose CSIDriver says attachRequired:
false, and the provisioners given to ``--ignored-provisioners`` (upstream Volcano's: host-path
provisioners publish no CSINode drivers), are not counted. A node without a CSINode, or a
driver without a published count, has no limit.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyvolcano.api.objects import Pod
from pyvolcano.cache.volumes import VolumeState

__all__ = ["REASON_MAX_VOLUME_COUNT", "csi_volumes", "exceeds_limits"]

REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


def csi_volumes(pod: Pod, volumes: VolumeState, ignored: frozenset[str]) -> set[tuple[str, str]]:
    """(driver, volume handle) of the pod's attachable CSI volumes."""
    out: set[tuple[str, str]] = set()
    for name in pod.claims:
        pvc = volumes.pvcs.get(f"{pod.namespace}/{name}")
        if pvc is None:
            continue
        pv = volumes.pvs.get(pvc.volume_name) if pvc.volume_name else None
        if pv is not None:
            driver, handle = pv.csi_driver, pv.csi_handle
        else:
            sc = volumes.classes.get(volumes.class_of(pvc))
            driver, handle = (sc.provisioner if sc is not None else ""), f"pvc/{pvc.key}"
        if not driver or driver in ignored:
            continue
        spec = volumes.csi_drivers.get(driver)
        if spec is not None and not spec.attach_required:
            continue
        out.add((driver, handle))
    return out


def exceeds_limits(new: set[tuple[str, str]], node: str, on_node: Iterable[Pod], volumes: VolumeState,
                   ignored: frozenset[str]) -> bool:
    csi = volumes.csi_nodes.get(node)
    if csi is None:
        return False
    limited = {d for d, _h in new if csi.limits.get(d) is not None}
    if not limited:
        return False
    attached: set[tuple[str, str]] = set()
    for pod in on_node:
        if pod.claims:
            attached |= {v for v in csi_volumes(pod, volumes, ignored) if v[0] in limited}
    for driver in limited:
        extra = sum(1 for d, h in new if d == driver and (d, h) not in attached)
        used = sum(1 for d, _h in attached if d == driver)
        limit = csi.limits[driver]
        if limit is not None and used + extra > limit:
            return True
    return False
