"""Simulated kubelets for a real control plane (what KWOK does for Volcano's benchmarks).

``pyvolcano fake-nodes`` registers Nodes (from manifests, or ``--count`` identical ones),
keeps them Ready — a ``coordination.k8s.io`` Lease per node in ``kube-node-lease`` renewed
every ``lease_renew`` seconds, and the node's ``Ready`` condition heartbeat — and moves the
pods bound to them through Pending → Running → Succeeded/Failed with the simulator's
:class:`~pyvolcano.runtime.kubelet.Kubelets` and its annotations (``pyvolcano.io/duration``,
``pyvolcano.io/exit-code``, ``pyvolcano.io/failing-attempts``), on a wall clock scaled by
``speed``. A pod being deleted terminates after its own grace period (also scaled) and is
then removed (a delete with grace 0, as the kubelet does). Pods on other nodes are ignored.
Nodes with a NUMA layout (``numa_layout``, or their ``pyvolcano.io/numa-nodes`` annotation) get
a Numatopology from a simulated resource exporter (:mod:`pyvolcano.runtime.numa_exporter`).
With ``dra`` (``--dra``) each GPU node's devices are published as a ResourceSlice
(:mod:`pyvolcano.runtime.dra_driver`) when it is registered.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from pyvolcano.api.duration import parse_duration
from pyvolcano.runtime.clock import WallLoop, wall_seconds
from pyvolcano.runtime.dra_driver import GpuDriver
from pyvolcano.runtime.kubelet import DURATION, Kubelets, retry_delay
from pyvolcano.runtime.numa_exporter import NumaExporter, NumaLayout
from pyvolcano.store.base import (
    AlreadyExists,
    Compactable,
    Conflict,
    NotFound,
    Store,
    StoreError,
    Waitable,
    WatchEvent,
    from_rfc3339,
    to_rfc3339,
)

__all__ = ["FakeKubelets", "FakeNodes", "make_nodes"]

logger = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
FAKE_NODE_LABEL = "pyvolcano.io/fake-node"


def make_nodes(count: int, *, cpu: str = "32", memory: str = "256Gi", gpus: int = 0, pods: int = 110,
               prefix: str = "fake-node-") -> list[dict[str, Any]]:
    """``count`` identical Node manifests (``--count --cpu --memory --gpus``)."""
    if not 0 < count <= 100_000:
        raise ValueError(f"--count: got {count}; expected 1..100000")
    width = max(len(str(count - 1)), 1)
    nodes = []
    for i in range(count):
        name = f"{prefix}{i:0{width}d}"
        capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
        if gpus:
            capacity["nvidia.com/gpu"] = str(gpus)
        nodes.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "type": "kwok", FAKE_NODE_LABEL: "true"}},
            "spec": {},
            "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
        })
    return nodes


class FakeKubelets(Kubelets):
    """The simulator's kubelets, limited to our nodes, with per-pod grace periods.

    ``default_duration`` (``--default-duration``) is the runtime of pods without a
    ``pyvolcano.io/duration`` annotation (None: they run until deleted). Pods found Running
    at start (a restarted fake-nodes) are adopted: they exit when their duration, counted from
    their ``status.startTime``, is over.
    """

    def __init__(self, store: Store, loop: WallLoop, nodes: Iterable[str], *, default_duration: str | None = None):
        super().__init__(store, loop, termination_seconds=0.0,
                         default_duration=None if default_duration is None else parse_duration(default_duration))
        self.wall = loop
        self.nodes = set(nodes)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind != "Pod":
            return
        spec = ev.object.get("spec") or {}
        if spec.get("nodeName") not in self.nodes:
            return
        md = ev.object.get("metadata") or {}
        if md.get("deletionTimestamp") and ev.type != "DELETED":
            grace = md.get("deletionGracePeriodSeconds")
            self.termination_seconds = float(grace) if isinstance(grace, int | float) else 30.0
        elif ev.type != "DELETED" and (ev.object.get("status") or {}).get("phase") == "Running":
            self._adopt(ev.object)
        super().on_event(ev)

    def _adopt(self, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        uid = str(md.get("uid", ""))
        if uid in self._started:
            return
        self._started.add(uid)
        ann = md.get("annotations") or {}
        duration = parse_duration(str(ann[DURATION])) if DURATION in ann else self.default_duration
        started = (pod.get("status") or {}).get("startTime")
        if duration is None or not isinstance(started, str):
            return
        try:
            elapsed = (self.wall.clock() - from_rfc3339(started)) * self.wall.speed
        except ValueError:
            elapsed = 0.0
        ns, name = md.get("namespace", "default"), str(md.get("name"))
        self.loop.after(max(0.0, duration - elapsed), lambda: self._exit(ns, name, uid), f"exit {ns}/{name}")


class FakeNodes:
    def __init__(self, store: Store, nodes: list[dict[str, Any]], *, speed: float = 1.0,
                 lease_duration: int = 40, lease_renew: float = 10.0, clock: Callable[[], float] = wall_seconds,
                 default_duration: str | None = None, numa_layout: NumaLayout | None = None, dra: bool = False):
        self.store = store
        self.manifests = nodes
        self.names = [str(n["metadata"]["name"]) for n in nodes]
        self.loop = WallLoop(speed=speed, clock=clock)
        self.kubelets = FakeKubelets(store, self.loop, self.names, default_duration=default_duration)
        mine = set(self.names)
        self.numa = NumaExporter(store, default=numa_layout, nodes=mine.__contains__)
        # --dra: each GPU node's ResourceSlice, as a DRA driver would publish it.
        self.dra = GpuDriver(store=store) if dra else None
        self.lease_duration = lease_duration
        self.lease_renew = lease_renew
        self.clock = clock
        self.revision = 0
        self._last_heartbeat = -1e18

    # ------------------------------------------------------------------ registration
    def register(self) -> None:
        for manifest in self.manifests:
            if self.dra is not None:
                self.dra.publish(str(manifest["metadata"]["name"]), manifest)
            node = {**manifest, "status": dict(manifest.get("status") or {})}
            name = node["metadata"]["name"]
            try:
                self.store.create(node)
            except AlreadyExists:
                logger.info("node %s exists; adopting it", name)
            self._write_node_status(name, manifest)
            self.numa.add_node(manifest)
        self.heartbeat(force=True)

    def _ready_status(self, manifest: dict[str, Any]) -> dict[str, Any]:
        now = to_rfc3339(self.clock())
        st = manifest.get("status") or {}
        capacity = st.get("capacity") or st.get("allocatable") or {}
        return {
            "capacity": capacity,
            "allocatable": st.get("allocatable") or capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "fake kubelet is posting ready status",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "nodeInfo": {"kubeletVersion": "fake", "architecture": "amd64", "operatingSystem": "linux",
                         "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
                         "containerRuntimeVersion": "", "kubeProxyVersion": ""},
            "phase": "Running",
        }

    def _write_node_status(self, name: str, manifest: dict[str, Any], attempts: int = 0) -> None:
        """The node's whole status (capacity, allocatable, Ready); re-sent with back-off until
        accepted, since the heartbeats that follow only refresh the Ready condition."""
        try:
            self.store.patch("Node", None, name, {"status": self._ready_status(manifest)}, subresource="status")
        except StoreError as e:
            delay = retry_delay(attempts)
            logger.warning("node %s status: %s; again in %.1fs", name, e, delay)
            self.loop.after(delay, lambda: self._write_node_status(name, manifest, attempts + 1),
                            f"node status {name} (retry)")

    def heartbeat(self, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._last_heartbeat < self.lease_renew:
            return
        self._last_heartbeat = now
        stamp = _micro_time(now)
        for manifest in self.manifests:
            name = manifest["metadata"]["name"]
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE},
                     "spec": {"holderIdentity": name, "leaseDurationSeconds": self.lease_duration,
                              "renewTime": stamp}}
            try:
                self.store.patch("Lease", NODE_LEASE_NAMESPACE, name, {"spec": lease["spec"]})
            except NotFound:
                with contextlib.suppress(AlreadyExists, Conflict):
                    self.store.create(lease)
            except StoreError as e:
                logger.warning("node lease %s: %s", name, e)
            if force:
                continue
            with contextlib.suppress(StoreError):
                self.store.patch("Node", None, name, {"status": {"conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "message": "fake kubelet is posting ready status", "lastHeartbeatTime": to_rfc3339(now)}]}},
                    subresource="status")

    # ------------------------------------------------------------------ the loop
    def step(self) -> None:
        for ev in self.store.watch(self.revision, ("Pod",), copy=False):
            self.revision = ev.revision
            self.kubelets.on_event(ev)
            self.numa.on_event(ev)
        if isinstance(self.store, Compactable):
            self.store.compact(self.revision)
        self.loop.fire_due()
        self.heartbeat()

    def run(self, stop: threading.Event) -> None:
        wait = self.store.wait if isinstance(self.store, Waitable) else None
        while not stop.is_set():
            self.step()
            nxt = self.loop.next_time()
            timeout = 1.0 if nxt is None else min(1.0, max(0.0, nxt - self.clock()))
            if wait is not None:
                wait(self.revision, timeout)
            else:
                stop.wait(timeout)


def _micro_time(seconds: float) -> str:
    text = to_rfc3339(seconds)
    if "." not in text:
        text = text[:-1] + ".000000Z"
    else:
        whole, frac = text[:-1].split(".")
        text = f"{whole}.{frac:0<6}Z"
    return text
