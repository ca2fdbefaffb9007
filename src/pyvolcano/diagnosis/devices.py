"""The device figures of a DRA diagnosis: each claim of the pod, and the devices its requests match.

When a pod waits for its ResourceClaims (``NodeFit.ClaimNotReady``, ``NodeFit.NoDevices``,
``NodeFit.ClaimInvalid``), :func:`device_diagnosis` lists, for each claim of the pod in
``spec.resourceClaims`` order, where the claim stands (not created yet, being deleted, allocated
on which nodes, not allocated) and, for each request of a claim that still needs devices (each
``firstAvailable`` alternative apart), how many devices of the cluster pass the DeviceClass's
and the request's selectors and are not tainted against the request, how many of those no claim
holds, and the node with the most free ones, against how many the request wants. A request
whose class does not exist or whose selector fails says so instead.

Pure (reads the cache's dynamic resource allocation state), deterministic (slices by name,
devices in slice order, ties between nodes by name). Selectors are evaluated with the state's
compiled selectors and match memo, as the allocator's are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyvolcano.api.dra.cel import CelError
from pyvolcano.api.dra.types import ALLOCATION_MODE_ALL, Device, DeviceSubRequest, ResourceClaim, ResourceSlice
from pyvolcano.api.matching.taints import toleration_tolerates_taint
from pyvolcano.api.task import TaskInfo
from pyvolcano.diagnosis.model import DeviceClaimFigure, DeviceRequestFigure

if TYPE_CHECKING:
    from pyvolcano.cache.dra import DraState

__all__ = ["device_diagnosis"]


def _claim_key(task: TaskInfo, name: str, direct: str, template: str) -> tuple[str, str]:
    """``(claim key or "", label)`` of one pod claim."""
    pod = task.pod
    if direct:
        return f"{pod.namespace}/{direct}", f"{pod.namespace}/{direct}"
    generated = pod.resource_claim_statuses.get(name, "")
    if generated:
        return f"{pod.namespace}/{generated}", f"{pod.namespace}/{generated}"
    return "", f"{name} (from template {template})"


def _nodes_of(claim: ResourceClaim) -> str:
    selector = claim.allocation.node_selector if claim.allocation is not None else None
    if not selector:
        return "any node"
    names = [str(v) for term in selector.get("nodeSelectorTerms") or ()
             for field in ("matchFields", "matchExpressions") for req in term.get(field) or ()
             for v in req.get("values") or ()]
    return ", ".join(names) if names else "the nodes its selector names"


def _status(claim: ResourceClaim | None) -> str:
    if claim is None:
        return "does not exist yet"
    if claim.deletion_timestamp is not None:
        return "being deleted"
    if claim.allocation is not None:
        reserved = len(claim.status.reserved_for)
        return f"allocated on {_nodes_of(claim)}, reserved for {reserved} pod(s)"
    return "not allocated"


def _tainted(device: Device, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return any(t.effect in ("NoSchedule", "NoExecute") and not any(
        toleration_tolerates_taint(tol, t.as_mapping()) for tol in tolerations) for t in device.taints)


def _devices(dra: DraState) -> Iterator[tuple[ResourceSlice, Device]]:
    for name in sorted(dra.slices):
        s = dra.slices[name]
        if s.per_device_node_selection:
            continue  # left out: such slices are never used
        for d in s.devices:
            if not (d.consumes_counters or d.binding_conditions):
                yield s, d


def _request_figure(dra: DraState, label: str, sub: DeviceSubRequest) -> DeviceRequestFigure:
    wants = "all" if sub.allocation_mode == ALLOCATION_MODE_ALL else str(sub.count)
    cls = dra.classes.get(sub.device_class_name)
    if cls is None:
        return DeviceRequestFigure(label, sub.device_class_name, wants, 0, 0, None, 0,
                                   note=f"DeviceClass {sub.device_class_name} does not exist")
    matching = free = 0
    free_by_node: Counter[str] = Counter()
    try:
        for s, device in _devices(dra):
            if not _matches(dra, (*cls.selectors, *sub.selectors), s.driver, device) or _tainted(
                    device, sub.tolerations):
                continue
            matching += 1
            if sub.admin_access or not dra.in_use((s.driver, s.pool, device.name)):
                free += 1
                if s.node_name:
                    free_by_node[s.node_name] += 1
    except CelError as e:
        return DeviceRequestFigure(label, sub.device_class_name, wants, 0, 0, None, 0, note=f"selector: {e}")
    best = min(free_by_node.items(), key=lambda kv: (-kv[1], kv[0]), default=None)
    return DeviceRequestFigure(label, sub.device_class_name, wants, matching, free,
                               best[0] if best else None, best[1] if best else 0)


def _matches(dra: DraState, selectors: Sequence[str], driver: str, device: Device) -> bool:
    for expression in selectors:
        key = (expression, id(device))
        got = dra.memo.get(key)
        if got is None:
            got = dra.selectors.get(expression).matches(driver, device)
            dra.memo[key] = got
        if not got:
            return False
    return True


def device_diagnosis(dra: DraState, task: TaskInfo) -> tuple[DeviceClaimFigure, ...]:
    """The figures of each claim of ``task``'s pod (see the module docstring)."""
    out = []
    for pc in task.pod.resource_claims:
        key, label = _claim_key(task, pc.name, pc.resource_claim_name, pc.resource_claim_template_name)
        claim = dra.claim(key) if key else None
        requests: list[DeviceRequestFigure] = []
        if claim is not None and claim.allocation is None and claim.deletion_timestamp is None:
            for r in claim.requests:
                if r.exactly is not None:
                    requests.append(_request_figure(dra, r.name, r.exactly))
                else:
                    requests += [_request_figure(dra, f"{r.name}/{sub.name}", sub) for sub in r.first_available]
        out.append(DeviceClaimFigure(label, _status(claim) if key else "not created yet", tuple(requests)))
    return tuple(out)
