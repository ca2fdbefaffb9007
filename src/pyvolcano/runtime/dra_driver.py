"""A simulated GPU driver for dynamic resource allocation: one ResourceSlice per GPU node.

A DRA driver's kubelet plugin publishes the devices of its node as ResourceSlices; the
simulator and ``pyvolcano fake-nodes --dra`` have no such driver, so this module publishes, for
every Node with ``nvidia.com/gpu`` capacity, the slice NVIDIA's DRA driver would
(driver ``gpu.nvidia.com``, one device ``gpu-<i>`` per GPU, pool named after the node):

* attributes ``type`` (``gpu``), ``index`` (int), ``productName`` (the node's
  ``nvidia.com/gpu.product`` label, as GPU feature discovery sets it, else ``unknown``) and
  ``uuid`` (``GPU-<node>-<i>``, the node name hashed when that would exceed 64 characters);
* capacity ``memory``, from the node's ``nvidia.com/gpu.memory`` label (MiB, GPU feature
  discovery's), when it has one.

:func:`gpu_slice` builds the slice of one node; :class:`GpuDriver` follows Node events and
creates, replaces or deletes the slices (the simulator runs it as a controller, *gated*: from
the moment the cluster has a DeviceClass; fake-nodes calls :meth:`GpuDriver.publish` for its
nodes with ``--dra``). Selecting these devices takes a DeviceClass such as
``device.driver == "gpu.nvidia.com"`` (docs/dra.md). The node keeps its ``nvidia.com/gpu``
capacity: a pod asking for GPUs both ways would be counted twice (docs/dra.md).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, WatchEvent

__all__ = ["DRIVER", "GpuDriver", "gpu_slice"]

logger = logging.getLogger(__name__)

DRIVER: Final = "gpu.nvidia.com"
GPU_RESOURCE: Final = "nvidia.com/gpu"
PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
MEMORY_LABEL: Final = "nvidia.com/gpu.memory"


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def _uuid(node: str, index: int) -> str:
    """``GPU-<node>-<i>``; a node name too long for an attribute value (64 bytes) is hashed."""
    text = f"GPU-{node}-{index}"
    if len(text) <= 64:
        return text
    return f"GPU-{hashlib.sha256(node.encode()).hexdigest()[:40]}-{index}"


def gpu_slice(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ResourceSlice of ``node`` (a Node object), or None when it has no GPUs."""
    md, status = node.get("metadata") or {}, node.get("status") or {}
    resources = status.get("capacity") or status.get("allocatable") or {}
    try:
        gpus = int(parse_quantity(resources.get(GPU_RESOURCE, 0)))
    except QuantityError:
        return None
    if gpus <= 0:
        return None
    name = str(md.get("name"))
    labels = md.get("labels") or {}
    product = str(labels.get(PRODUCT_LABEL) or "unknown")
    memory = labels.get(MEMORY_LABEL)
    devices = []
    for i in range(gpus):
        device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": {
            "type": {"string": "gpu"}, "index": {"int": i}, "productName": {"string": product},
            "uuid": {"string": _uuid(name, i)}}}
        if isinstance(memory, str) and memory.isdigit():
            device["capacity"] = {"memory": {"value": f"{memory}Mi"}}
        devices.append(device)
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": slice_name(name)},
        "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }


class GpuDriver:
    """Publishes :func:`gpu_slice` for the nodes it sees (a controller: ``on_event`` / ``run``)."""

    name = "gpu-dra-driver"

    def __init__(self, *, store: Store, gated: bool = False):
        self.store = store
        # gated: nothing is published until the cluster has a DeviceClass (the simulator's mode,
        # so that a cluster without DRA objects runs exactly as before).
        self.enabled = not gated
        self._nodes: dict[str, Mapping[str, Any]] = {}
        self._due: dict[str, Mapping[str, Any] | None] = {}  # node name -> node (None: deleted)
        self._published: dict[str, dict[str, Any]] = {}  # node name -> its slice's spec

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "DeviceClass" and not self.enabled and ev.type != "DELETED":
            self.enabled = True
            self._due.update(self._nodes)
            return
        if ev.kind != "Node":
            return
        name = str((ev.object.get("metadata") or {}).get("name"))
        if ev.type == "DELETED":
            self._nodes.pop(name, None)
            self._due[name] = None
        else:
            self._nodes[name] = ev.object
            self._due[name] = ev.object

    def run(self, now: float) -> float | None:
        if not self.enabled:
            self._due.clear()
            return None
        due, self._due = self._due, {}
        failed = False
        for name in sorted(due):
            node = due[name]
            if not self.publish(name, node):
                self._due[name] = node
                failed = True
        return now + 1.0 if failed else None

    def publish(self, name: str, node: Mapping[str, Any] | None) -> bool:
        """Create, replace or delete ``name``'s slice to match ``node``; False to retry."""
        want = gpu_slice(node) if node is not None else None
        have = self._published.get(name)
        try:
            if want is None:
                if have is not None:
                    self.store.delete("ResourceSlice", None, slice_name(name))
                    del self._published[name]
                return True
            if have == want["spec"]:
                return True
            try:
                self.store.create(want)
            except AlreadyExists:
                current = self.store.get("ResourceSlice", None, slice_name(name))
                if current.get("spec") != want["spec"]:
                    current["spec"] = want["spec"]
                    self.store.update(current)
            self._published[name] = want["spec"]
        except NotFound:
            self._published.pop(name, None)
        except StoreError as e:
            logger.warning("gpu driver: ResourceSlice of node %s not written: %s", name, e)
            return False
        return True
