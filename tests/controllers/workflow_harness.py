"""A driver for the workflow controllers' tests: the real store and admission, a manual clock,
and the job controller played by hand (``set_job_phase``), so a test says exactly when a job
runs, completes or fails."""

from __future__ import annotations

from typing import Any

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.controllers import CronJobController, JobFlowController, JobTemplateController, ensure_default_queues
from pyvolcano.store.base import EPOCH, to_rfc3339
from pyvolcano.store.memory import InMemoryStore

UNIX0 = EPOCH.timestamp()
"""Virtual time 0 in Unix seconds (2024-01-01T00:00:00Z, a Monday)."""


def task_template(name: str = "main", replicas: int = 1) -> dict[str, Any]:
    return {"name": name, "replicas": replicas,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}


def cronjob(name: str = "nightly", schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    template = spec.pop("jobTemplate", {"metadata": {"labels": {"team": "ml"}},
                                        "spec": {"minAvailable": 1, "tasks": [task_template()]}})
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": template, **spec}}


def jobtemplate(name: str, *tasks: str) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "tasks": [task_template(t) for t in tasks or ("main",)]}}


def jobflow(name: str, *flows: tuple[str, list[str]], policy: str = "retain", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobRetainPolicy": policy,
                     "flows": [{"name": n, **({"dependsOn": {"targets": t, **extra.get(n, {})}} if t else {})}
                               for n, t in flows]}}


class WorkflowHarness:
    def __init__(self, *, now: float = 0.0):
        self.now = now
        self.store = InMemoryStore(clock=lambda: self.now, admission=VolcanoAdmission())
        ensure_default_queues(self.store)
        self.cron = CronJobController(store=self.store)
        self.flows = JobFlowController(store=self.store)
        self.templates = JobTemplateController(store=self.store)
        self.controllers: list[Any] = [self.flows, self.templates, self.cron]
        self.revision = 0
        self.wakeups: dict[int, float] = {}

    def settle(self) -> None:
        for _ in range(200):
            events = self.store.watch(self.revision)
            for ev in events:
                self.revision = ev.revision
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

    def advance_to(self, t: float) -> None:
        """Move the clock to ``t``, stopping at every wake-up a controller asked for on the way."""
        self.settle()
        while True:
            due = [w for w in self.wakeups.values() if self.now < w <= t]
            if not due:
                break
            self.now = min(due)
            self.settle()
        self.now = t
        self.settle()

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        created = self.store.create(obj)
        self.settle()
        return created

    def jobs(self) -> list[str]:
        return sorted(j["metadata"]["name"] for j in self.store.list("Job"))

    def job(self, name: str) -> dict[str, Any]:
        return self.store.get("Job", "default", name)

    def set_job_phase(self, name: str, phase: str, **status: Any) -> None:
        """What the job controller would write: the phase, its transition time, the rest given."""
        job = self.job(name)
        job["status"] = {**(job.get("status") or {}), **status,
                         "state": {"phase": phase, "lastTransitionTime": to_rfc3339(self.now)}}
        self.store.update_status(job)
        self.settle()

    def status(self, kind: str, name: str) -> dict[str, Any]:
        st: dict[str, Any] = self.store.get(kind, "default", name).get("status") or {}
        return st
