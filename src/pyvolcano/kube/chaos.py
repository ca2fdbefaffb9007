"""What a fault under load must not break: a vcjob workload, an observer, and the invariants.

The chaos suites (the fake API server's faults in CI, a real control plane's restarts and
``kill -9`` s where one can be had) and ``benchmarks/chaos_recovery.py`` run the live components,
submit :func:`vcjob` s, inject a fault, and then ask :func:`check` whether the run lost anything.
The invariants are the ones a user relies on across an API server or etcd outage:

* every job reaches its final phase (``Completed`` for this workload);
* no job ever has more live pods than its replicas (a controller that lost track of a create
  would make one more);
* no pod is bound twice (a bind whose reply was lost must not land on a second node);
* no PodGroup or queue status is stale at the end: a PodGroup's ``running`` / ``succeeded`` /
  ``failed`` counts are those of its pods, and a queue's ``pending`` / ``running`` /
  ``inqueue`` / ``completed`` counts are those of its PodGroups' phases.

:class:`Observer` follows Pods and Jobs from its own informer (reconnecting within half a
second, so that it sees binding resume promptly): every pod's node, the largest number of live
pods each job had, the time each pod was first seen bound, from which
:meth:`Observer.recovery` measures the time from a fault's end to the first bind after it, and
the time each job was first seen finished. Nothing here decides
anything for the components; it only reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, JOB_NAME_KEY
from pyvolcano.store.base import Store

__all__ = ["FINAL_JOB_PHASES", "Observer", "Snapshot", "check", "snapshot", "vcjob"]

FINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
_QUEUE_FIELDS = {"Pending": "pending", "Running": "running", "Inqueue": "inqueue", "Completed": "completed"}


def vcjob(name: str, *, namespace: str = "default", replicas: int = 2, duration: str = "5s", cpu: str = "1",
          queue: str = "default") -> dict[str, Any]:
    """A gang vcjob of ``replicas`` pods that run for ``duration`` on fake nodes."""
    return {
        "apiVersion": JOB_API_VERSION, "kind": "Job", "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": queue,
                 "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                 "tasks": [{"name": "worker", "replicas": replicas, "template": {
                     "metadata": {"annotations": {"pyvolcano.io/duration": duration}},
                     "spec": {"restartPolicy": "Never", "containers": [{
                         "name": "c", "image": "busybox",
                         "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}}]},
    }


def _md(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}


def _st(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    st = obj.get("status")
    return st if isinstance(st, Mapping) else {}


def _job_of(pod: Mapping[str, Any]) -> str | None:
    labels = _md(pod).get("labels") or {}
    name = labels.get(JOB_NAME_KEY)
    return None if not name else f"{_md(pod).get('namespace')}/{name}"


def _alive(pod: Mapping[str, Any]) -> bool:
    return not _md(pod).get("deletionTimestamp") and _st(pod).get("phase") not in ("Succeeded", "Failed")


@dataclass(slots=True)
class Snapshot:
    """The objects :func:`check` reads, as plain dicts: the Jobs and Pods of ``namespace`` (all
    namespaces when None), and every PodGroup and Queue (a queue counts PodGroups of every
    namespace); only the PodGroups of ``namespace`` are checked against their pods."""

    jobs: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    podgroups: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    namespace: str | None = None


def snapshot(store: Store, namespace: str | None = None) -> Snapshot:
    """The objects :func:`check` needs, read from ``store``."""
    return Snapshot(store.list("Job", namespace), store.list("Pod", namespace), store.list("PodGroup"),
                    store.list("Queue"), namespace)


def check(snap: Snapshot, *, expect_phase: str | None = "Completed", max_live_pods: Mapping[str, int] | None = None,
          double_binds: Iterable[str] = ()) -> list[str]:
    """Every broken invariant, one sentence each (empty: the run lost nothing)."""
    problems: list[str] = []
    replicas: dict[str, int] = {}
    for job in snap.jobs:
        key = f"{_md(job).get('namespace')}/{_md(job).get('name')}"
        replicas[key] = sum(int(t.get("replicas") or 0) for t in (job.get("spec") or {}).get("tasks") or ())
        phase = ((_st(job).get("state") or {}).get("phase")) or "Pending"
        if phase not in FINAL_JOB_PHASES:
            problems.append(f"job {key} is {phase}, not finished")
        elif expect_phase is not None and phase != expect_phase:
            problems.append(f"job {key} ended {phase}, expected {expect_phase}")
    live: dict[str, int] = {}
    for pod in snap.pods:
        owner = _job_of(pod)
        if owner is not None and _alive(pod):
            live[owner] = live.get(owner, 0) + 1
    for key, most in sorted({**live, **(max_live_pods or {})}.items()):
        most = max(most, live.get(key, 0))
        if key in replicas and most > replicas[key]:
            problems.append(f"job {key} had {most} live pods, more than its {replicas[key]} replicas")
    problems += [f"pod {uid} was bound twice" for uid in double_binds]
    problems += _stale_podgroups(snap)
    problems += _stale_queues(snap)
    return problems


def _stale_podgroups(snap: Snapshot) -> list[str]:
    counts: dict[str, dict[str, int]] = {}
    for pod in snap.pods:
        group = (_md(pod).get("annotations") or {}).get("scheduling.k8s.io/group-name")
        if not group:
            continue
        phase = str(_st(pod).get("phase") or "Pending")
        c = counts.setdefault(f"{_md(pod).get('namespace')}/{group}", {"running": 0, "succeeded": 0, "failed": 0})
        if phase == "Running" and not _md(pod).get("deletionTimestamp"):
            c["running"] += 1
        elif phase == "Succeeded":
            c["succeeded"] += 1
        elif phase == "Failed":
            c["failed"] += 1
    out = []
    for pg in snap.podgroups:
        if snap.namespace is not None and _md(pg).get("namespace") != snap.namespace:
            continue
        key = f"{_md(pg).get('namespace')}/{_md(pg).get('name')}"
        want = counts.get(key, {"running": 0, "succeeded": 0, "failed": 0})
        got = {k: int(_st(pg).get(k) or 0) for k in want}
        if got != want:
            out.append(f"PodGroup {key} status says {got}, its pods {want}")
    return out


def _stale_queues(snap: Snapshot) -> list[str]:
    counts: dict[str, dict[str, int]] = {}
    for pg in snap.podgroups:
        queue = str((pg.get("spec") or {}).get("queue") or "default")
        field_ = _QUEUE_FIELDS.get(str(_st(pg).get("phase") or ""))
        if field_ is not None:
            c = counts.setdefault(queue, {})
            c[field_] = c.get(field_, 0) + 1
    out = []
    for q in snap.queues:
        name = str(_md(q).get("name"))
        want = {f: counts.get(name, {}).get(f, 0) for f in _QUEUE_FIELDS.values()}
        got = {f: int(_st(q).get(f) or 0) for f in _QUEUE_FIELDS.values()}
        if got != want:
            out.append(f"queue {name} status says {got}, its PodGroups {want}")
    return out


@dataclass(slots=True)
class _Seen:
    node: str = ""
    job: str | None = None
    alive: bool = True


@dataclass
class Observer:
    """Follows the Pods and Jobs of a store (a :class:`~pyvolcano.kube.store.KubeStore` of its
    own) on a thread: the first time each pod is seen bound, double binds, live pods per job,
    the first time each job is seen finished."""

    store: Store
    clock: Callable[[], float] = time.monotonic
    bound_at: dict[str, float] = field(default_factory=dict)     # pod uid -> first seen bound
    double_binds: list[str] = field(default_factory=list)
    max_live_pods: dict[str, int] = field(default_factory=dict)  # job key -> most live pods at once
    completed_at: dict[str, float] = field(default_factory=dict)  # job key -> first seen finished
    _pods: dict[str, _Seen] = field(default_factory=dict)
    _live: dict[str, set[str]] = field(default_factory=dict)
    _revision: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Observer:
        self._thread = threading.Thread(target=self._run, name="chaos-observer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        wait = getattr(self.store, "wait", None)
        while not self._stop.is_set():
            self.step()
            if wait is not None:
                wait(self._revision, 0.1)
            else:
                self._stop.wait(0.05)

    def step(self) -> None:
        events = self.store.watch(self._revision, ("Pod", "Job"))
        now = self.clock()
        with self._lock:
            for ev in events:
                self._revision = ev.revision
                if ev.kind == "Pod":
                    self._observe(ev.type, ev.object, now)
                    continue
                key = f"{_md(ev.object).get('namespace')}/{_md(ev.object).get('name')}"
                phase = (_st(ev.object).get("state") or {}).get("phase")
                if phase in FINAL_JOB_PHASES and key not in self.completed_at:
                    self.completed_at[key] = now

    def _observe(self, typ: str, pod: Mapping[str, Any], now: float) -> None:
        uid = str(_md(pod).get("uid") or "")
        seen = self._pods.setdefault(uid, _Seen(job=_job_of(pod)))
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and not seen.node:
            seen.node = node
            self.bound_at[uid] = now
        elif node and node != seen.node and uid not in self.double_binds:
            self.double_binds.append(uid)
        if seen.job is None:
            return
        live = self._live.setdefault(seen.job, set())
        if typ != "DELETED" and _alive(pod):
            live.add(uid)
        else:
            live.discard(uid)
        self.max_live_pods[seen.job] = max(self.max_live_pods.get(seen.job, 0), len(live))

    def binds_between(self, start: float, end: float) -> int:
        """Pods first seen bound in [start, end)."""
        with self._lock:
            return sum(1 for t in self.bound_at.values() if start <= t < end)

    def recovery(self, fault_end: float) -> float | None:
        """Seconds from ``fault_end`` to the first pod seen bound after it (None: none yet)."""
        with self._lock:
            after = [t for t in self.bound_at.values() if t >= fault_end]
        return None if not after else min(after) - fault_end
