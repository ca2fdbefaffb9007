"""Simulated kubelets: bound pods run for their declared duration, then exit.

A pod bound to a node becomes Running at once, or, when it mounts PersistentVolumeClaims, once
they are all bound (as the kubelet's volume manager waits for them: a claim the PV controller
binds later, after its provisioner's delay, starts the pod then). After ``pyvolcano.io/duration`` (a Go
duration such as ``90s`` or ``10m``; without it, the simulation's default duration, and
without that it runs until the end of the simulation) it exits
with ``pyvolcano.io/exit-code`` (default 0 → Succeeded, otherwise Failed; the code is written
to ``status.containerStatuses[0].state.terminated.exitCode`` where the job controller reads
it). ``pyvolcano.io/failing-attempts: "N"`` makes the pod exit with its exit code (default 1)
only while its job's retry count (``volcano.sh/job-retry-count``) is below N, then succeed.

A pod being deleted (evicted, or killed by its controller) terminates after
``termination_seconds`` and is then removed from the store. A node that goes down fails
every pod on it (exit code 137, reason ``NodeLost``) and is tainted
``node.kubernetes.io/unreachable:NoSchedule`` until it comes back up.

Writes are not lost, as a real kubelet's are not: the status a kubelet wants a pod to have is
kept until the store accepts it, and a write the store refuses for any reason but the pod's
absence (the API server or etcd unavailable, a timeout, 429, 5xx) is sent again after a
back-off that doubles from :data:`RETRY_FIRST` to :data:`RETRY_MAX` seconds; the same holds for
the final delete of a terminated pod. A watch event that shows the wanted phase already stored
ends the retries early. A pod's run ends on time even when its ``Running`` status is still
waiting to be accepted: the exit reads the kubelet's own wanted status before the store's, and
replaces it. The in-memory store of a simulation refuses no such write, so a simulation never
retries and its timeline is unchanged.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.names import RETRY_COUNT_KEY
from pyvolcano.runtime.event_loop import EventLoop
from pyvolcano.store.base import NotFound, Store, StoreError, WatchEvent, to_rfc3339
from pyvolcano.util.numbers import parse_int

__all__ = ["DURATION", "EXIT_CODE", "FAILING_ATTEMPTS", "Kubelets", "retry_delay"]

logger = logging.getLogger(__name__)

DURATION = "pyvolcano.io/duration"
EXIT_CODE = "pyvolcano.io/exit-code"
FAILING_ATTEMPTS = "pyvolcano.io/failing-attempts"
UNREACHABLE_TAINT = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
RETRY_FIRST = 0.5
RETRY_MAX = 30.0


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    return md if isinstance(md, dict) else {}


class Kubelets:
    def __init__(self, store: Store, loop: EventLoop, *, termination_seconds: float = 1.0,
                 default_duration: float | None = None):
        self.store = store
        self.loop = loop
        self.termination_seconds = termination_seconds
        self.default_duration = default_duration
        self._started: set[str] = set()
        self._terminating: set[str] = set()
        self._down: set[str] = set()
        self.finished_pods = 0
        # Statuses the store has not accepted yet, by pod uid: (namespace, name, status, attempts).
        self._unwritten: dict[str, tuple[str, str, dict[str, Any], int]] = {}
        # Terminated pods whose delete the store has not accepted yet, by uid: attempts so far.
        self._undeleted: dict[str, int] = {}
        self.write_retries = 0
        # Pods waiting for their claims to be bound, by claim key: {pod uid: (namespace, name)}.
        self._awaiting: dict[str, dict[str, tuple[str, str]]] = {}

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "PersistentVolumeClaim":
            self._claim_event(ev)
            return
        if ev.kind != "Pod":
            return
        pod = ev.object
        md = _meta(pod)
        uid = str(md.get("uid", ""))
        if ev.type == "DELETED":
            self._started.discard(uid)
            self._terminating.discard(uid)
            self._unwritten.pop(uid, None)
            self._undeleted.pop(uid, None)
            return
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase", "Pending")
        wanted = self._unwritten.get(uid)
        if wanted is not None and wanted[2].get("phase") == phase:
            del self._unwritten[uid]
        if md.get("deletionTimestamp"):
            if uid not in self._terminating:
                self._terminating.add(uid)
                ns, name = md.get("namespace", "default"), md["name"]
                self.loop.after(self.termination_seconds if spec.get("nodeName") else 0.0,
                                lambda: self._finalise(ns, name, uid), f"terminate {ns}/{name}")
            return
        node = spec.get("nodeName")
        if node and phase == "Pending" and uid not in self._started:
            self._started.add(uid)
            ns, name = md.get("namespace", "default"), md["name"]
            self.loop.after(0.0, lambda: self._start(ns, name, uid), f"start {ns}/{name}")

    def adopt_running(self, ns: str, name: str, uid: str, ends_at: float) -> None:
        """Take over a pod that was already Running when it was loaded: it exits at ``ends_at``."""
        self._started.add(uid)
        self.loop.at(max(ends_at, self.loop.now), lambda: self._exit(ns, name, uid), f"exit {ns}/{name}")

    # ------------------------------------------------------------------ pod lifecycle
    def _get(self, ns: str, name: str, uid: str) -> dict[str, Any] | None:
        try:
            pod = self.store.get("Pod", ns, name)
        except NotFound:
            return None
        return pod if _meta(pod).get("uid") == uid else None

    def _claim_event(self, ev: WatchEvent) -> None:
        md = _meta(ev.object)
        key = f"{md.get('namespace', 'default')}/{md.get('name')}"
        if ev.type == "DELETED" or key not in self._awaiting:
            return
        if (ev.object.get("status") or {}).get("phase") == "Bound":
            for uid, (ns, name) in sorted(self._awaiting.pop(key).items()):
                self.loop.after(0.0, functools.partial(self._start, ns, name, uid), f"start {ns}/{name}")

    def _unbound_claim(self, pod: dict[str, Any]) -> str | None:
        """The first claim the pod mounts that is not bound yet (the kubelet waits for it)."""
        ns = _meta(pod).get("namespace", "default")
        for v in (pod.get("spec") or {}).get("volumes") or []:
            if not isinstance(v, dict):
                continue
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(
                v.get("persistentVolumeClaim"), dict) else None
            if claim is None and v.get("ephemeral") is not None:
                claim = f"{_meta(pod).get('name')}-{v.get('name')}"
            if not claim:
                continue
            try:
                pvc = self.store.get("PersistentVolumeClaim", ns, claim)
            except NotFound:
                return f"{ns}/{claim}"
            if (pvc.get("status") or {}).get("phase") != "Bound":
                return f"{ns}/{claim}"
        return None

    def _start(self, ns: str, name: str, uid: str) -> None:
        pod = self._get(ns, name, uid)
        if pod is None or _meta(pod).get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName", "")
        if node in self._down:
            self._fail(pod, 137, "NodeLost")
            return
        if (pod.get("spec") or {}).get("volumes"):
            waiting = self._unbound_claim(pod)
            if waiting is not None:
                self._awaiting.setdefault(waiting, {})[uid] = (ns, name)
                return
        now = to_rfc3339(self.loop.now)
        containers = (pod.get("spec") or {}).get("containers") or [{"name": "main"}]
        status = dict(pod.get("status") or {})
        status.update({
            "phase": "Running",
            "startTime": now,
            "conditions": [_scheduled_condition(status), {"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": c.get("name", f"c{i}"), "ready": True, "restartCount": 0,
                 "state": {"running": {"startedAt": now}}}
                for i, c in enumerate(containers)
            ],
        })
        pod["status"] = status
        self._write_status(pod)
        ann = _meta(pod).get("annotations") or {}
        duration = parse_duration(str(ann[DURATION])) if DURATION in ann else self.default_duration
        if duration is not None:
            self.loop.after(duration, lambda: self._exit(ns, name, uid), f"exit {ns}/{name}")

    def _exit(self, ns: str, name: str, uid: str) -> None:
        pod = self._get(ns, name, uid)
        if pod is None or _meta(pod).get("deletionTimestamp"):
            return
        wanted = self._unwritten.get(uid)
        if wanted is not None:  # the kubelet's own status counts, not the one the store has yet
            pod["status"] = dict(wanted[2])
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        ann = _meta(pod).get("annotations") or {}
        code = _int(ann.get(EXIT_CODE), 0)
        attempts = _int(ann.get(FAILING_ATTEMPTS), -1)
        if attempts >= 0:
            retry = _int(ann.get(RETRY_COUNT_KEY), 0)
            code = (code or 1) if retry < attempts else 0
        if code == 0:
            self._terminate(pod, "Succeeded", 0, "Completed")
        else:
            self._terminate(pod, "Failed", code, "Error")

    def _fail(self, pod: dict[str, Any], code: int, reason: str) -> None:
        self._terminate(pod, "Failed", code, reason)

    def _terminate(self, pod: dict[str, Any], phase: str, code: int, reason: str) -> None:
        now = to_rfc3339(self.loop.now)
        containers = (pod.get("spec") or {}).get("containers") or [{"name": "main"}]
        status = dict(pod.get("status") or {})
        status["phase"] = phase
        status["reason"] = reason if phase == "Failed" else status.get("reason", "")
        status["containerStatuses"] = [
            {"name": c.get("name", f"c{i}"), "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": now}}}
            for i, c in enumerate(containers)
        ]
        status["conditions"] = [_scheduled_condition(status), {"type": "Ready", "status": "False"}]
        pod["status"] = status
        self._write_status(pod)
        self.finished_pods += 1

    def _finalise(self, ns: str, name: str, uid: str) -> None:
        if self._get(ns, name, uid) is None:
            self._undeleted.pop(uid, None)
            return
        try:
            self.store.delete("Pod", ns, name, grace_period_seconds=0)
        except NotFound:
            self._undeleted.pop(uid, None)
        except StoreError as e:
            attempts = self._undeleted.get(uid, 0)
            self._undeleted[uid] = attempts + 1
            self.write_retries += 1
            delay = retry_delay(attempts)
            logger.info("kubelet: deleting %s/%s failed (%s); again in %.1fs", ns, name, e, delay)
            self.loop.after(delay, lambda: self._finalise(ns, name, uid), f"terminate {ns}/{name} (retry)")
        else:
            self._undeleted.pop(uid, None)

    def _write_status(self, pod: dict[str, Any]) -> None:
        md = _meta(pod)
        uid = str(md.get("uid", ""))
        self._unwritten[uid] = (str(md.get("namespace", "default")), str(md["name"]), pod["status"], 0)
        self._send_status(uid)

    def _send_status(self, uid: str) -> None:
        wanted = self._unwritten.get(uid)
        if wanted is None:
            return
        ns, name, status, attempts = wanted
        try:
            self.store.patch("Pod", ns, name, {"status": status}, subresource="status")
        except NotFound:
            del self._unwritten[uid]
        except StoreError as e:
            if self._get(ns, name, uid) is None:  # deleted, or replaced by a pod of the same name
                del self._unwritten[uid]
                return
            self._unwritten[uid] = (ns, name, status, attempts + 1)
            self.write_retries += 1
            delay = retry_delay(attempts)
            logger.info("kubelet: status %s of %s/%s not written (%s); again in %.1fs",
                        status.get("phase"), ns, name, e, delay)
            self.loop.after(delay, lambda: self._send_status(uid), f"status {ns}/{name} (retry)")
        else:
            if self._unwritten.get(uid) == wanted:
                del self._unwritten[uid]

    def unwritten(self) -> int:
        """How many pod statuses and deletes still wait for the store to accept them."""
        return len(self._unwritten) + len(self._undeleted)

    # ------------------------------------------------------------------ nodes
    def node_down(self, node_name: str) -> None:
        self._down.add(node_name)
        try:
            node = self.store.get("Node", None, node_name)
        except NotFound:
            return
        spec = dict(node.get("spec") or {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") != UNREACHABLE_TAINT["key"]]
        spec["taints"] = [*taints, dict(UNREACHABLE_TAINT)]
        self.store.patch("Node", None, node_name, {"spec": spec})
        self.store.patch("Node", None, node_name,
                         {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeDown"}]}},
                         subresource="status")
        for pod in self.store.list("Pod"):
            if (pod.get("spec") or {}).get("nodeName") == node_name and (pod.get("status") or {}).get("phase") in (
                "Pending", "Running", None
            ):
                self._fail(pod, 137, "NodeLost")

    def node_up(self, node_name: str) -> None:
        self._down.discard(node_name)
        try:
            node = self.store.get("Node", None, node_name)
        except NotFound:
            return
        spec = dict(node.get("spec") or {})
        spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != UNREACHABLE_TAINT["key"]]
        self.store.patch("Node", None, node_name, {"spec": spec})
        self.store.patch("Node", None, node_name,
                         {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, subresource="status")


def retry_delay(attempts: int) -> float:
    """Seconds before the next try of a write refused ``attempts`` times before."""
    return min(RETRY_FIRST * 2.0 ** min(attempts, 16), RETRY_MAX)


def _int(text: object, default: int) -> int:
    if text is None:
        return default
    try:
        return parse_int(str(text).strip())
    except ValueError:
        return default


def _scheduled_condition(status: dict[str, Any]) -> dict[str, Any]:
    """The pod's ``PodScheduled=True`` condition as the binding wrote it (with the time the pod was
    bound, which the cdp plugin reads), kept as a kubelet keeps it."""
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "True":
            return dict(c)
    return {"type": "PodScheduled", "status": "True"}
