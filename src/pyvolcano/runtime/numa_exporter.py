"""A simulated resource exporter: each NUMA node's Numatopology, kept as the kubelet assigns CPUs.

Upstream's ``volcano-sh/resource-exporter`` runs on every node, reads the kubelet's
configuration and CPU manager state, and writes the node's ``Numatopology``
(``nodeinfo.volcano.sh/v1alpha1``, named after the node; :mod:`pyvolcano.api.numatopology`).
:class:`NumaExporter` does the same for simulated nodes, in the simulator and in
``pyvolcano fake-nodes``:

* A node gets a NUMA layout from its annotations (the simulation's own, not upstream's):
  ``pyvolcano.io/numa-nodes: "N"`` (its CPUs split evenly over N NUMA nodes, one socket per
  NUMA node, two hyperthreads per core), ``pyvolcano.io/topology-manager-policy`` (default
  ``best-effort``), ``pyvolcano.io/cpu-manager-policy`` (default ``static``) and
  ``pyvolcano.io/reserved-cpus`` (reserved for the system, default none). ``--numa-nodes`` and
  ``--topology-manager-policy`` of ``simulate`` and ``fake-nodes`` give the layout of nodes
  without the annotation. A node with a whole number of CPUs and ``numa-nodes`` >= 1 gets its
  Numatopology when it is first seen; a node without a layout gets none.
* A Guaranteed pod with a whole number of CPUs that starts on such a node with the ``static``
  CPU manager gets exclusive CPUs, per container, as the kubelet's topology manager and CPU
  manager would: the same hints, policy and ``takeByTopology`` as the numa-aware plugin
  (:mod:`pyvolcano.plugins.numa_aware`). The Numatopology then lists the pod in
  ``podAllocations`` and no longer offers its CPUs in ``numares.cpu.allocatable``; when the
  pod finishes or is deleted they are offered again. A pod the policy would refuse is still
  given CPUs (a real kubelet would fail it with ``TopologyAffinityError``).

Invariants: the exporter reads only watch events and its own Numatopologies, writes only
Numatopologies of its nodes, and derives everything from the events in order, so a simulation
stays deterministic; nodes without a layout cost one dictionary lookup per event.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.api.cpuset import format_cpuset
from pyvolcano.api.manifest import ManifestError, parse_object
from pyvolcano.api.numatopology import (
    CPU_MANAGER_POLICIES,
    NODEINFO_API_VERSION,
    TOPOLOGY_MANAGER_POLICIES,
    CpuInfo,
)
from pyvolcano.api.objects import Pod
from pyvolcano.api.qos import QOSClass, pod_qos
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.plugins.numa_aware import cpumanager, policy
from pyvolcano.store.base import AlreadyExists, Conflict, NotFound, Store, StoreError, WatchEvent

__all__ = ["CPU_MANAGER_POLICY_KEY", "NUMA_NODES_KEY", "RESERVED_CPUS_KEY", "TOPOLOGY_MANAGER_POLICY_KEY",
           "NumaExporter", "NumaLayout", "layout_error"]

logger = logging.getLogger(__name__)

NUMA_NODES_KEY: Final = "pyvolcano.io/numa-nodes"
TOPOLOGY_MANAGER_POLICY_KEY: Final = "pyvolcano.io/topology-manager-policy"
CPU_MANAGER_POLICY_KEY: Final = "pyvolcano.io/cpu-manager-policy"
RESERVED_CPUS_KEY: Final = "pyvolcano.io/reserved-cpus"
THREADS_PER_CORE: Final = 2


@dataclass(frozen=True, slots=True)
class NumaLayout:
    """What a node's kubelet runs: NUMA nodes, its two policies and the CPUs it reserves."""

    numa_nodes: int = 0
    topology_manager_policy: str = "best-effort"
    cpu_manager_policy: str = "static"
    reserved_cpus: int = 0


def layout_error(layout: NumaLayout) -> str | None:
    """Why ``layout`` cannot be a kubelet's, or None."""
    if layout.numa_nodes < 0:
        return f"numa nodes: got {layout.numa_nodes}; expected 0 (none) or more"
    if layout.topology_manager_policy not in TOPOLOGY_MANAGER_POLICIES:
        return (f"topology manager policy: got {layout.topology_manager_policy!r}; expected one of "
                f"{', '.join(TOPOLOGY_MANAGER_POLICIES)}")
    if layout.cpu_manager_policy not in CPU_MANAGER_POLICIES:
        return (f"cpu manager policy: got {layout.cpu_manager_policy!r}; expected one of "
                f"{', '.join(CPU_MANAGER_POLICIES)}")
    if layout.reserved_cpus < 0:
        return f"reserved cpus: got {layout.reserved_cpus}; expected 0 or more"
    return None


def node_layout(node: Mapping[str, Any], default: NumaLayout) -> NumaLayout | str:
    """The layout a Node's annotations ask for (``default`` for what they leave out), or why not."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    if not isinstance(ann, Mapping):
        return default
    try:
        layout = NumaLayout(
            numa_nodes=int(ann.get(NUMA_NODES_KEY, default.numa_nodes)),
            topology_manager_policy=str(ann.get(TOPOLOGY_MANAGER_POLICY_KEY, default.topology_manager_policy)),
            cpu_manager_policy=str(ann.get(CPU_MANAGER_POLICY_KEY, default.cpu_manager_policy)),
            reserved_cpus=int(ann.get(RESERVED_CPUS_KEY, default.reserved_cpus)),
        )
    except ValueError as e:
        return f"annotation is not an integer ({e})"
    err = layout_error(layout)
    return err if err is not None else layout


def cpu_detail(cpus: int, numa_nodes: int) -> dict[int, CpuInfo]:
    """CPU ids 0..cpus-1 split evenly (the last NUMA node takes the remainder), one socket per
    NUMA node, ``THREADS_PER_CORE`` hyperthreads per core."""
    per = max(cpus // numa_nodes, 1)
    return {c: CpuInfo(numa=min(c // per, numa_nodes - 1), socket=min(c // per, numa_nodes - 1),
                       core=c // THREADS_PER_CORE) for c in range(cpus)}


@dataclass(slots=True)
class _Node:
    layout: NumaLayout
    detail: dict[int, CpuInfo]
    free: set[int]
    # Pod uid -> (name, namespace, the CPUs it holds).
    pods: dict[str, tuple[str, str, frozenset[int]]]

    def reserved(self) -> dict[str, str]:
        return {"cpu": str(self.layout.reserved_cpus)} if self.layout.reserved_cpus else {}


class NumaExporter:
    """Keeps a Numatopology per node with a NUMA layout (see the module docstring)."""

    def __init__(self, store: Store, *, default: NumaLayout | None = None,
                 nodes: Callable[[str], bool] | None = None):
        self.store = store
        self.default = default or NumaLayout()
        self.mine = nodes or (lambda _name: True)
        self.nodes: dict[str, _Node] = {}

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Node":
            self._node_event(ev)
        elif ev.kind == "Pod" and self.nodes:
            self._pod_event(ev)

    def _node_event(self, ev: WatchEvent) -> None:
        name = str((ev.object.get("metadata") or {}).get("name", ""))
        if ev.type == "DELETED":
            if self.nodes.pop(name, None) is not None:
                self._delete(name)
            return
        self.add_node(ev.object)

    def add_node(self, manifest: Mapping[str, Any]) -> None:
        """Start exporting ``manifest``'s Numatopology, when it has a NUMA layout (once per node)."""
        name = str((manifest.get("metadata") or {}).get("name", ""))
        if name in self.nodes or not self.mine(name):
            return
        layout = node_layout(manifest, self.default)
        if isinstance(layout, str):
            logger.warning("numa exporter: node %s: %s; it gets no Numatopology", name, layout)
            return
        if layout.numa_nodes < 1:
            return
        cpus = _whole_cpus(manifest)
        if cpus is None or cpus < layout.numa_nodes:
            logger.warning("numa exporter: node %s: its cpu capacity is not a whole number of at least %d cpus",
                           name, layout.numa_nodes)
            return
        detail = cpu_detail(cpus, layout.numa_nodes)
        self.nodes[name] = _Node(layout, detail, set(detail), {})
        self._write(name)

    def _pod_event(self, ev: WatchEvent) -> None:
        md = ev.object.get("metadata") or {}
        uid = str(md.get("uid", ""))
        node_name = str((ev.object.get("spec") or {}).get("nodeName") or "")
        node = self.nodes.get(node_name)
        if node is None:
            return
        phase = (ev.object.get("status") or {}).get("phase", "Pending")
        gone = ev.type == "DELETED" or phase in ("Succeeded", "Failed")
        if gone:
            held = node.pods.pop(uid, None)
            if held is not None:
                node.free |= held[2]
                self._write(node_name)
            return
        if uid in node.pods or node.layout.cpu_manager_policy != "static":
            return
        try:
            pod = parse_object(ev.object, "numa exporter")
        except ManifestError:
            return
        if not isinstance(pod, Pod) or pod_qos(pod) is not QOSClass.GUARANTEED:
            return
        taken = self._assign(node, pod)
        if taken:
            node.pods[uid] = (pod.name, pod.namespace, taken)
            node.free -= taken
            self._write(node_name)

    def _assign(self, node: _Node, pod: Pod) -> frozenset[int]:
        """The kubelet's exclusive CPUs for ``pod``: per container, its topology manager's best
        hint, then the CPU manager's choice inside it (the numa-aware plugin's algorithms)."""
        topo = cpumanager.CpuTopology(node.detail)
        free = {"cpu": frozenset(node.free)}
        numa_nodes = cpumanager.numa_nodes(node.detail)
        taken: set[int] = set()
        for container in pod.containers:
            if cpumanager.guaranteed_cpus(container) == 0:
                continue
            hints = cpumanager.hints(container, topo, node.reserved(), free)
            best, _admit = policy.predicate(node.layout.topology_manager_policy, numa_nodes, [hints])
            got = cpumanager.allocate(container, best, topo, node.reserved(), free).get("cpu", frozenset())
            taken |= got
            free = {"cpu": free["cpu"] - got}
        return frozenset(taken)

    # ------------------------------------------------------------------ writes
    def manifest(self, name: str) -> dict[str, Any]:
        node = self.nodes[name]
        return {
            "apiVersion": NODEINFO_API_VERSION, "kind": "Numatopology", "metadata": {"name": name},
            "spec": {
                "policies": {"CPUManagerPolicy": node.layout.cpu_manager_policy,
                             "TopologyManagerPolicy": node.layout.topology_manager_policy},
                "resReserved": node.reserved(),
                "numares": {"cpu": {"allocatable": format_cpuset(node.free), "capacity": len(node.detail)}},
                "cpuDetail": {str(c): {"numa": i.numa, "socket": i.socket, "core": i.core}
                              for c, i in sorted(node.detail.items())},
                "podAllocations": [
                    {"uid": uid, "name": pod_name, "namespace": ns,
                     "containerAllocations": [{"name": "", "allocations": {"cpu": format_cpuset(cpus)}}]}
                    for uid, (pod_name, ns, cpus) in sorted(node.pods.items())
                ],
            },
        }

    def _write(self, name: str) -> None:
        doc = self.manifest(name)
        try:
            current = self.store.get("Numatopology", None, name)
        except NotFound:
            try:
                self.store.create(doc)
            except (AlreadyExists, StoreError) as e:
                logger.warning("numa exporter: creating Numatopology %s: %s", name, e)
            return
        except StoreError as e:
            logger.warning("numa exporter: reading Numatopology %s: %s", name, e)
            return
        doc["metadata"] = {**(current.get("metadata") or {}), "name": name}
        try:
            self.store.update(doc)
        except (Conflict, StoreError) as e:
            logger.warning("numa exporter: updating Numatopology %s: %s", name, e)

    def _delete(self, name: str) -> None:
        with contextlib.suppress(StoreError):
            self.store.delete("Numatopology", None, name)


def _whole_cpus(node: Mapping[str, Any]) -> int | None:
    status = node.get("status") or {}
    capacity = status.get("capacity") or status.get("allocatable") or {}
    raw = capacity.get("cpu") if isinstance(capacity, Mapping) else None
    if raw is None:
        return None
    try:
        q = parse_quantity(raw)
    except QuantityError:
        return None
    return int(q) if q.denominator == 1 else None
