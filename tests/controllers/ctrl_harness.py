"""A tiny driver for controller tests: the real store and admission, a manual virtual clock.

``settle()`` feeds every new watch event to every controller and runs them until the store
stops changing, the way the simulation runtime does. ``advance(t)`` moves the clock forward,
stopping at each wake-up a controller asked for. Tests play the scheduler and the kubelet by
hand: ``set_pg_phase`` (e.g. Inqueue), ``set_pod_phase`` / ``bind`` / ``finalize``.
"""

from __future__ import annotations

import random
from typing import Any

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.controllers import GarbageCollector, JobController, PodGroupController, QueueController
from pyvolcano.controllers.hypernode import HyperNodeController
from pyvolcano.simulator.seeded_entropy import SeededEntropy
from pyvolcano.store.base import WatchEvent
from pyvolcano.store.memory import InMemoryStore


class Harness:
    def __init__(self, *, seed: int = 0, admission: bool = True, max_requeue: int = 15, hypernodes: bool = False,
                 sync_batch_period: float = 0.0):
        self.now = 0.0
        self.store = InMemoryStore(clock=lambda: self.now, admission=VolcanoAdmission() if admission else None)
        self.rng = random.Random(seed)
        self.queues = QueueController(store=self.store)
        self.jobs = JobController(store=self.store, entropy=SeededEntropy(self.rng), max_requeue=max_requeue,
                                  sync_batch_period=sync_batch_period)
        self.podgroups = PodGroupController(store=self.store)
        self.gc = GarbageCollector(store=self.store)
        self.controllers: list[Any] = [self.queues, self.jobs, self.podgroups, self.gc]
        self.hypernodes: HyperNodeController | None = None
        if hypernodes:
            self.hypernodes = HyperNodeController(store=self.store, entropy=SeededEntropy(self.rng))
            self.controllers.append(self.hypernodes)
        self.revision = 0
        self.events: list[WatchEvent] = []
        self.wakeups: dict[int, float] = {}

    # ------------------------------------------------------------------ loop
    def settle(self, rounds: int = 200) -> None:
        for _ in range(rounds):
            events = self.store.watch(self.revision)
            for ev in events:
                self.revision = ev.revision
                self.events.append(ev)
                for c in self.controllers:
                    c.on_event(ev)
            for i, c in enumerate(self.controllers):
                wake = c.run(self.now)
                if wake is not None and wake > self.now:
                    self.wakeups[i] = wake
                else:
                    self.wakeups.pop(i, None)
            if not events and self.store.revision == self.revision:
                return
        raise AssertionError("controllers did not settle")

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward, running controllers at every requested wake-up."""
        end = self.now + seconds
        self.settle()
        while True:
            due = [t for t in self.wakeups.values() if self.now < t <= end]
            if not due:
                break
            self.now = min(due)
            self.settle()
        self.now = end
        self.settle()

    # ------------------------------------------------------------------ objects
    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        created = self.store.create(obj)
        self.settle()
        return created

    def get(self, kind: str, ns: str | None, name: str) -> dict[str, Any]:
        return self.store.get(kind, ns, name)

    def job(self, name: str, ns: str = "default") -> dict[str, Any]:
        return self.store.get("Job", ns, name)

    def phase(self, name: str, ns: str = "default") -> str:
        return str(((self.job(name, ns).get("status") or {}).get("state") or {}).get("phase") or "")

    def phase_history(self, name: str, ns: str = "default") -> list[str]:
        """The job's phases as seen in the watch stream, consecutive repeats collapsed."""
        out: list[str] = []
        for e in self.events:
            md = e.object.get("metadata") or {}
            if e.kind != "Job" or md.get("name") != name or md.get("namespace") != ns:
                continue
            phase = ((e.object.get("status") or {}).get("state") or {}).get("phase") or ""
            if not out or out[-1] != phase:
                out.append(phase)
        return out

    def pods(self, ns: str = "default") -> list[dict[str, Any]]:
        return self.store.list("Pod", ns)

    def pod_names(self, ns: str = "default") -> list[str]:
        return [p["metadata"]["name"] for p in self.pods(ns)]

    def pg_of(self, job_name: str, ns: str = "default") -> dict[str, Any]:
        job = self.job(job_name, ns)
        return self.store.get("PodGroup", ns, f"{job_name}-{job['metadata']['uid']}")

    def set_pg_phase(self, job_name: str, phase: str, ns: str = "default") -> None:
        pg = self.pg_of(job_name, ns)
        self.store.patch("PodGroup", ns, pg["metadata"]["name"], {"status": {"phase": phase}}, subresource="status")
        self.settle()

    def set_pod_phase(self, name: str, phase: str, ns: str = "default", *, exit_code: int | None = None,
                      restart_count: int | None = None, ready: bool | None = None, settle: bool = True) -> None:
        status: dict[str, Any] = {"phase": phase}
        cs: dict[str, Any] = {"name": "main"}
        if exit_code is not None:
            cs["state"] = {"terminated": {"exitCode": exit_code}}
        if restart_count is not None:
            cs["restartCount"] = restart_count
        if ready is not None:
            cs["ready"] = ready
        if len(cs) > 1:
            status["containerStatuses"] = [cs]
        self.store.patch("Pod", ns, name, {"status": status}, subresource="status")
        if settle:
            self.settle()

    def bind(self, name: str, node: str = "n1", ns: str = "default") -> None:
        self.store.bind(ns, name, node)

    def finalize(self, ns: str = "default") -> None:
        """The kubelet finishing every pod that is being deleted."""
        for p in self.pods(ns):
            if p["metadata"].get("deletionTimestamp"):
                self.store.delete("Pod", ns, p["metadata"]["name"], grace_period_seconds=0)
        self.settle()

    def command(self, action: str, target_kind: str, target: str, ns: str = "default") -> None:
        api = "batch.volcano.sh/v1alpha1" if target_kind == "Job" else "scheduling.volcano.sh/v1beta1"
        ref: dict[str, Any] = {"apiVersion": api, "kind": target_kind, "name": target}
        if target_kind == "Job":
            ref["uid"] = self.job(target, ns)["metadata"]["uid"]
        self.create({
            "apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{target}-{action.lower()}-", "namespace": ns},
            "action": action, "target": ref,
        })


def container(name: str = "main", cpu: str = "1", memory: str = "1Gi", **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    c.update(extra)
    return c


def task(name: str, replicas: int, *, min_available: int | None = None, policies: list[dict[str, Any]] | None = None,
         cpu: str = "1", memory: str = "1Gi", priority_class: str | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(cpu=cpu, memory=memory)], "restartPolicy": "Never"}
    if priority_class:
        spec["priorityClassName"] = priority_class
    t: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if min_available is not None:
        t["minAvailable"] = min_available
    if policies is not None:
        t["policies"] = policies
    t.update(extra)
    return t


def vcjob(name: str, *tasks: dict[str, Any], ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"tasks": list(tasks), **spec},
    }
