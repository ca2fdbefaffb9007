"""The JobFlow controller (``pkg/controllers/jobflow``) on the virtual clock.

A ``flow.volcano.sh/v1alpha1`` JobFlow runs its flows as Volcano Jobs made from the JobTemplates
of its namespace (:mod:`pyvolcano.api.jobflow`). A sync, for a flow in phase Pending (or none),
Running or Succeed (Failed and Terminating do nothing), as upstream's ``syncJobFlow``:

1. with ``jobRetainPolicy: delete`` and phase Succeed, every job the flow created (label
   ``volcano.sh/createdByJobFlow: <ns>.<flow>``) is deleted, and that is all;
2. **deploy**: in flow order, each flow whose job ``<jobflow>-<flow>`` does not exist is created
   when it has no ``dependsOn.targets`` or when every target's job exists and is Completed
   (``judge``), and, beyond upstream, when its ``dependsOn.probe`` holds (below). The job takes
   the JobTemplate's ``spec`` (a flow's ``patch`` is not applied, as upstream), the labels and
   annotations ``volcano.sh/createdByJobTemplate`` / ``createdByJobFlow``, and a controller owner
   reference to the JobFlow. A missing JobTemplate or a refused job fails the sync, which is
   retried with back-off up to ``--max-requeue-num`` times;
3. **status**: the jobs it created, sorted by name, listed by phase (``pendingJobs``,
   ``runningJobs``, ``failedJobs``, ``completedJobs``, ``terminatedJobs``; any other phase in
   ``unKnowJobs``), ``conditions`` per job (phase, creation time, running duration, task counts),
   ``jobStatusList`` with each job's running history (a new entry whenever its phase changes,
   stamped with the controller's clock), then the phase: from Pending, Running once a job runs
   or completed and none failed, Failed once a job failed or was terminated; from Running,
   Succeed when as many jobs completed as there are flows, Failed as before.

Requests come from the JobFlow's creation, from an update that makes it Succeed with the delete
policy, and from updates of the jobs it controls, as upstream's handlers (job creations and
deletions, and JobTemplate changes, are not watched).

**Probes** (``dependsOn.probe``; upstream stores them but never evaluates them): every entry must
hold for some target's job. A ``taskStatusList`` entry ``{taskName, phase}`` holds when that
task of the job counts at least one pod in ``phase`` (``status.taskStatusCount``); an
``httpGetList`` or ``tcpSocketList`` entry holds when a pod of that task is Running with its
Ready condition True — the readiness a kubelet's probe on that port reports; the controller
opens no connection itself.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.jobflow import FlowStep, flow_job_name, flow_steps, object_string
from pyvolcano.api.names import (
    CREATED_BY_JOB_FLOW_KEY,
    CREATED_BY_JOB_TEMPLATE_KEY,
    FLOW_API_VERSION,
    JOB_API_VERSION,
    JOB_NAME_KEY,
    TASK_SPEC_KEY,
)
from pyvolcano.controllers._common import (
    WorkQueue,
    controller_of,
    controller_ref,
    labels_of,
    meta,
    name_of,
    namespace_of,
    peek,
    spec,
    status,
)
from pyvolcano.store.base import (
    AlreadyExists,
    NotFound,
    Store,
    StoreError,
    Unavailable,
    WatchEvent,
    clone,
    from_rfc3339,
    to_rfc3339,
)

__all__ = ["JobFlowController", "probe_holds"]

logger = logging.getLogger(__name__)

_LISTED: Final = {"Pending": "pendingJobs", "Running": "runningJobs", "Failed": "failedJobs",
                  "Completed": "completedJobs", "Terminated": "terminatedJobs"}
_KNOWN: Final = frozenset({*_LISTED, "Completing", "Terminating"})


class _FlowError(Exception):
    pass


def _job_phase(job: Mapping[str, Any]) -> str:
    return str((status(job).get("state") or {}).get("phase") or "")


def probe_holds(probe: Mapping[str, Any] | None, jobs: Sequence[Mapping[str, Any]],
                pods_of: Callable[[Mapping[str, Any], str], list[dict[str, Any]]] | None = None) -> bool:
    """Whether every probe entry holds for one of ``jobs`` (see the module docstring);
    ``pods_of(job, task)`` lists a job's pods of a task (needed by HTTP and TCP entries)."""
    if not probe:
        return True
    for entry in probe.get("taskStatusList") or []:
        task, phase = str(entry.get("taskName") or ""), str(entry.get("phase") or "")
        if not any(_task_count(job, task, phase) > 0 for job in jobs):
            return False
    for key in ("httpGetList", "tcpSocketList"):
        for entry in probe.get(key) or []:
            task = str(entry.get("taskName") or "")
            if pods_of is None or not any(_ready(pod) for job in jobs for pod in pods_of(job, task)):
                return False
    return True


def _task_count(job: Mapping[str, Any], task: str, phase: str) -> int:
    counts = ((status(job).get("taskStatusCount") or {}).get(task) or {}).get("phase") or {}
    value = counts.get(phase, 0)
    return value if isinstance(value, int) else 0


def _ready(pod: Mapping[str, Any]) -> bool:
    st = status(pod)
    return st.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])


class JobFlowController:
    """Runs the flows of ``flow.volcano.sh/v1alpha1`` JobFlows (see the module docstring).

    Args:
        store: the object store.
        max_requeue: ``--max-requeue-num`` (15; -1 = unlimited).
    """

    name = "jobflow-controller"
    watches = frozenset({"JobFlow", "JobTemplate", "Job"})

    def __init__(self, *, store: Store, max_requeue: int = 15):
        self.store = store
        self.max_requeue = -1 if max_requeue < 0 else max_requeue
        self.queue: WorkQueue[str] = WorkQueue(dedup=True, max_delay=1000.0)
        self._flows: dict[str, dict[str, Any]] = {}
        self._templates: dict[str, dict[str, Any]] = {}
        # Jobs labelled createdByJobFlow, by that label's value then job key.
        self._jobs: dict[str, dict[str, dict[str, Any]]] = {}
        self.now = 0.0

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        kind = ev.kind
        if kind == "JobFlow":
            self._on_flow(ev)
        elif kind == "JobTemplate":
            key = f"{namespace_of(ev.object)}/{name_of(ev.object)}"
            if ev.type == "DELETED":
                self._templates.pop(key, None)
            else:
                self._templates[key] = ev.object
        elif kind == "Job":
            self._on_job(ev)

    def _on_flow(self, ev: WatchEvent) -> None:
        obj = ev.object
        key = f"{namespace_of(obj)}/{name_of(obj)}"
        old = self._flows.get(key)
        if ev.type == "DELETED":
            self._flows.pop(key, None)
            return
        self._flows[key] = obj
        if ev.type == "ADDED":
            self.queue.add(key)
            return
        if old is not None and meta(old).get("resourceVersion") == meta(obj).get("resourceVersion"):
            return
        # updateJobFlow: only a flow that succeeded with the delete policy is synced again.
        if (status(obj).get("state") or {}).get("phase") == "Succeed" and spec(obj).get("jobRetainPolicy") == "delete":
            self.queue.add(key)

    def _on_job(self, ev: WatchEvent) -> None:
        job = ev.object
        label = labels_of(job).get(CREATED_BY_JOB_FLOW_KEY)
        job_key = f"{namespace_of(job)}/{name_of(job)}"
        if isinstance(label, str):
            if ev.type == "DELETED":
                self._jobs.get(label, {}).pop(job_key, None)
            else:
                self._jobs.setdefault(label, {})[job_key] = job
        if ev.type != "MODIFIED":
            return
        ref = controller_of(job)
        if ref is None or ref.get("apiVersion") != FLOW_API_VERSION or ref.get("kind") != "JobFlow":
            return
        # getJobFlowNameByJob: the first owner of kind JobFlow from a Volcano API group.
        flow = next((r.get("name") for r in meta(job).get("ownerReferences") or []
                     if r.get("kind") == "JobFlow" and "volcano" in str(r.get("apiVersion"))), None)
        if flow:
            self.queue.add(f"{namespace_of(job)}/{flow}")

    # ------------------------------------------------------------------ work
    def run(self, now: float) -> float | None:
        self.now = now
        if self.queue.idle():
            return None
        for key in self.queue.drain(now):
            try:
                self._sync(key)
            except (StoreError, _FlowError) as e:
                if isinstance(e, Unavailable):
                    self.queue.add_unavailable(key, now)
                elif self.max_requeue == -1 or self.queue.num_requeues(key) < self.max_requeue:
                    logger.info("Error syncing JobFlow %s: %s", key, e)
                    self.queue.add_rate_limited(key, now)
                else:
                    logger.warning("Dropping JobFlow %s out of the queue: SyncJobFlow JobFlow failed for %s", key, e)
                    self.queue.forget(key)
                continue
            self.queue.forget(key)
        return self.queue.next_wakeup()

    def jobs_of(self, flow: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The jobs labelled as created by ``flow``, sorted by name."""
        label = object_string(namespace_of(flow), name_of(flow))
        return sorted((j for j in self._jobs.get(label, {}).values() if namespace_of(j) == namespace_of(flow)),
                      key=name_of)

    def _sync(self, key: str) -> None:
        cached = self._flows.get(key)
        if cached is None:
            return
        phase = (status(cached).get("state") or {}).get("phase") or "Pending"
        if phase not in ("Pending", "Running", "Succeed"):
            return  # failedState and terminatingState do nothing
        flow = clone(cached)
        if spec(flow).get("jobRetainPolicy") == "delete" and phase == "Succeed":
            for job in self.jobs_of(flow):
                try:
                    self.store.delete("Job", namespace_of(job), name_of(job))
                except NotFound:
                    continue
            return
        self._deploy(flow)
        new_status = self._status(flow)
        total = len(spec(flow).get("flows") or [])
        counts = {k: len(new_status.get(k) or []) for k in _LISTED.values()}
        if phase == "Pending":
            if (counts["runningJobs"] or counts["completedJobs"]) and not counts["failedJobs"]:
                phase = "Running"
            elif counts["failedJobs"] or counts["terminatedJobs"]:
                phase = "Failed"
        elif phase == "Running":
            if counts["completedJobs"] == total:
                phase = "Succeed"
            elif counts["failedJobs"] or counts["terminatedJobs"]:
                phase = "Failed"
        new_status["state"] = {"phase": phase}
        flow["status"] = new_status
        self.store.update_status(flow)

    def _deploy(self, flow: dict[str, Any]) -> None:
        ns = namespace_of(flow)
        for step in flow_steps(flow):
            name = flow_job_name(name_of(flow), step.name)
            if self._job(ns, name) is not None:
                continue
            if step.targets and not self._ready(flow, step):
                continue
            self._create(flow, step, name)

    def _job(self, ns: str, name: str) -> dict[str, Any] | None:
        try:
            return peek(self.store, "Job", ns, name)
        except NotFound:
            return None

    def _ready(self, flow: Mapping[str, Any], step: FlowStep) -> bool:
        """``judge``: every target's job exists and is Completed; then the probe."""
        targets = []
        for target in step.targets:
            job = self._job(namespace_of(flow), flow_job_name(name_of(flow), target))
            if job is None or _job_phase(job) != "Completed":
                return False
            targets.append(job)
        return probe_holds(step.probe, targets, self._pods_of)

    def _pods_of(self, job: Mapping[str, Any], task: str) -> list[dict[str, Any]]:
        """The pods of ``job``'s task ``task`` (only an HTTP or TCP probe asks, so pods are read
        when needed instead of followed: the controller-manager's informer answers live)."""
        return self.store.list("Pod", namespace_of(job), label_selector={JOB_NAME_KEY: name_of(job),
                                                                        TASK_SPEC_KEY: task})

    def _create(self, flow: Mapping[str, Any], step: FlowStep, name: str) -> None:
        """``createJob`` from the JobTemplate named as the flow."""
        ns = namespace_of(flow)
        template = self._templates.get(f"{ns}/{step.name}")
        if template is None:
            raise _FlowError(f'jobtemplate.flow.volcano.sh "{step.name}" not found')
        marks = {CREATED_BY_JOB_TEMPLATE_KEY: object_string(ns, step.name),
                 CREATED_BY_JOB_FLOW_KEY: object_string(ns, name_of(flow))}
        job = {
            "apiVersion": JOB_API_VERSION, "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": dict(marks), "annotations": dict(marks),
                         "ownerReferences": [controller_ref(flow, FLOW_API_VERSION, "JobFlow")]},
            "spec": clone(spec(template)),
        }
        try:
            self.store.create(job)
        except AlreadyExists:
            return
        logger.info("JobFlow %s/%s: created job %s", ns, name_of(flow), name)

    def _status(self, flow: Mapping[str, Any]) -> dict[str, Any]:
        """``getAllJobStatus``: the status lists, conditions and histories of the flow's jobs."""
        jobs = self.jobs_of(flow)
        lists: dict[str, list[str]] = {k: [] for k in _LISTED.values()}
        unknown: list[str] = []
        conditions: dict[str, Any] = {}
        for job in jobs:
            phase = _job_phase(job)
            if phase in _LISTED:
                lists[_LISTED[phase]].append(name_of(job))
            elif phase not in _KNOWN:
                unknown.append(name_of(job))
            st = status(job)
            cond: dict[str, Any] = {"phase": phase, "createTime": meta(job).get("creationTimestamp")}
            if st.get("runningDuration"):
                cond["runningDuration"] = st["runningDuration"]
            if st.get("taskStatusCount"):
                cond["taskStatusCount"] = clone(st["taskStatusCount"])
            conditions[name_of(job)] = {k: v for k, v in cond.items() if v not in (None, "")}
        history = [clone(h) for h in status(flow).get("jobStatusList") or [] if isinstance(h, dict)]
        for job in jobs:
            entry = self._job_status(job, history)
            for i, h in enumerate(history):
                if h.get("name") == entry["name"]:
                    history[i] = entry
                    break
            else:
                history.append(entry)
        out: dict[str, Any] = {k: v for k, v in lists.items() if v}
        if unknown:
            out["unKnowJobs"] = unknown
        if history:
            out["jobStatusList"] = history
        if conditions:
            out["conditions"] = conditions
        return out

    def _job_status(self, job: Mapping[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
        phase = _job_phase(job)
        st = status(job)
        created = meta(job).get("creationTimestamp")
        entry: dict[str, Any] = {"name": name_of(job)}
        if phase:
            entry["state"] = phase
        if created:
            entry["startTimestamp"] = created
        duration = parse_duration(str(st.get("runningDuration"))) if st.get("runningDuration") else None
        if duration is not None and isinstance(created, str):
            with contextlib.suppress(ValueError):
                entry["endTimestamp"] = to_rfc3339(from_rfc3339(created) + duration)
        retries = st.get("retryCount")
        if isinstance(retries, int) and retries:
            entry["restartCount"] = retries
        runs = self._running_histories(job, phase, history)
        if runs:
            entry["runningHistories"] = runs
        return entry

    def _running_histories(self, job: Mapping[str, Any], phase: str,
                           history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``getRunningHistories``, stamped with the controller's clock."""
        stamp = to_rfc3339(self.now)
        previous = next((h for h in history if h.get("name") == name_of(job) and h.get("runningHistories")
                         is not None), None)
        if previous is None:
            return [{"startTimestamp": stamp, "state": phase}] if phase else []
        runs = [dict(r) for r in previous["runningHistories"]]
        if runs and runs[-1].get("state") != phase:
            runs[-1]["endTimestamp"] = stamp
            runs.append({"startTimestamp": stamp, "state": phase})
        return runs
