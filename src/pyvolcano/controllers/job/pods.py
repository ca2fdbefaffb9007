"""Pods of a vcjob: naming, construction and counting (``createJobPod`` and friends).

A task's pod ``i`` is ``<job>-<task>-<i>``, built from the task template with: a controller
owner reference to the job; ``schedulerName`` and ``priorityClassName`` defaulted from the
job; the job's volumes mounted; the annotations ``volcano.sh/task-index``,
``volcano.sh/task-spec``, ``scheduling.k8s.io/group-name`` (``<job>-<job uid>``),
``volcano.sh/job-name``, ``volcano.sh/queue-name``, ``volcano.sh/job-version``,
``volcano.sh/template-uid`` (``<job>-<task>``), ``volcano.sh/job-retry-count``, the NUMA
policy and the job's preemptable / cooldown / revocable-zone / JDB annotations; and the
labels task index, job name, task spec, job namespace, queue, partition id and the job's
preemptable / cooldown labels.

Pods the controller wants gone are first annotated ``volcano.sh/controller-out-of-sync`` so
that their later events are recognised as its own doing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.api.names import (
    COOLDOWN_KEY,
    GROUP_NAME_KEY,
    JDB_MAX_UNAVAILABLE_KEY,
    JDB_MIN_AVAILABLE_KEY,
    JOB_API_VERSION,
    JOB_FORWARDING_KEY,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_VERSION_KEY,
    NUMA_POLICY_KEY,
    OUT_OF_SYNC_KEY,
    PARTITION_ID_KEY,
    PREEMPTABLE_KEY,
    QUEUE_NAME_KEY,
    RETRY_COUNT_KEY,
    REVOCABLE_ZONE_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
)
from pyvolcano.controllers._common import annotations_of, controller_ref, labels_of, name_of, namespace_of, spec, uid_of
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.controllers.job.plugins.base import make_pod_name
from pyvolcano.store.base import clone

__all__ = [
    "TaskPods",
    "classify",
    "count_task_status",
    "create_job_pod",
    "is_out_of_sync",
    "pod_phase",
]

DEFAULT_TASK_SPEC = "default"



def pod_group_name(job: Mapping[str, Any]) -> str:
    return f"{name_of(job)}-{uid_of(job)}"


def is_out_of_sync(pod: Mapping[str, Any]) -> bool:
    return OUT_OF_SYNC_KEY in annotations_of(pod)


def pod_phase(pod: Mapping[str, Any]) -> str:
    st = pod.get("status")
    return str((st or {}).get("phase") or "") if isinstance(st, dict) else ""


def classify(pod: Mapping[str, Any], counts: dict[str, int]) -> None:
    """``classifyAndAddUpPodBaseOnPhase``: count the pod under its phase (unknown otherwise)."""
    key = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}.get(
        pod_phase(pod), "unknown"
    )
    counts[key] = counts.get(key, 0) + 1


def count_task_status(pod: Mapping[str, Any], task_counts: dict[str, dict[str, Any]]) -> None:
    """``calcPodStatus``: per-task phase histogram keyed by ``volcano.sh/task-spec``."""
    task = annotations_of(pod).get(TASK_SPEC_KEY)
    if task is None:
        return
    phase = pod_phase(pod)
    if phase not in ("Pending", "Running", "Succeeded", "Failed"):
        phase = "Unknown"
    hist = task_counts.setdefault(task, {"phase": {}})["phase"]
    hist[phase] = hist.get(phase, 0) + 1


def create_job_pod(
    job: Mapping[str, Any],
    task: Mapping[str, Any],
    index: int,
    *,
    forwarding: bool,
    entropy: Entropy,
) -> dict[str, Any]:
    """Build pod ``index`` of ``task`` (the template name is the task name)."""
    return TaskPods(job, task, forwarding=forwarding, entropy=entropy).pod(index)


class TaskPods:
    """The pods of one task of one job version: what does not depend on the replica index (the
    template's copy, the job's defaults, annotations and labels) is built once, and each
    :meth:`pod` is a copy of that prototype with its name, task index and partition id.

    Key order matches a pod built field by field. A job with volumes gets a random volume name
    per pod and per claim (upstream's ``GenRandomStr`` in ``createJobPod``), so its pods are
    built one by one, in the same order of draws from ``entropy``."""

    def __init__(self, job: Mapping[str, Any], task: Mapping[str, Any], *, forwarding: bool, entropy: Entropy):
        self.job, self.task, self.forwarding, self.entropy = job, task, forwarding, entropy
        self.job_name, self.task_name = name_of(job), str(task.get("name", ""))
        partition = task.get("partitionPolicy")
        self.partition_size: int | None = None
        if isinstance(partition, dict):
            self.partition_size = int(partition.get("partitionSize") or 0)
        self.per_pod = any(isinstance(v, dict) for v in spec(job).get("volumes") or [])
        self.prototype = None if self.per_pod else self._build(0)

    def pod(self, index: int) -> dict[str, Any]:
        if self.prototype is None:
            return self._build(index)
        pod: dict[str, Any] = clone(self.prototype)
        md = pod["metadata"]
        md["name"] = make_pod_name(self.job_name, self.task_name, index)
        md["annotations"][TASK_INDEX_KEY] = md["labels"][TASK_INDEX_KEY] = str(index)
        size = self.partition_size
        if size is not None:
            md["labels"][PARTITION_ID_KEY] = str(index // size if size > 0 else 0)
        return pod

    def _build(self, index: int) -> dict[str, Any]:
        job, task, entropy = self.job, self.task, self.entropy
        template = clone(task.get("template") or {})
        tmeta: dict[str, Any] = template["metadata"] if isinstance(template.get("metadata"), dict) else {}
        task_name = self.task_name
        job_spec, job_name, ns = spec(job), self.job_name, namespace_of(job)
        pod_spec: dict[str, Any] = template["spec"] if isinstance(template.get("spec"), dict) else {}
        pod_meta: dict[str, Any] = {
            "name": make_pod_name(job_name, task_name, index),
            "namespace": ns,
            "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
        }
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}
        if not pod_spec.get("schedulerName") and job_spec.get("schedulerName"):
            pod_spec["schedulerName"] = job_spec["schedulerName"]
        if not pod_spec.get("priorityClassName") and job_spec.get("priorityClassName"):
            pod_spec["priorityClassName"] = job_spec["priorityClassName"]

        mounted: dict[str, str] = {}
        for volume in job_spec.get("volumes") or []:
            if not isinstance(volume, dict):
                continue
            claim = str(volume.get("volumeClaimName") or "")
            vol_name = f"{job_name}-{entropy.name_suffix()}"
            if claim in mounted:
                continue
            pod_spec["volumes"] = [
                *(pod_spec.get("volumes") or []),
                {"name": vol_name, "persistentVolumeClaim": {"claimName": claim}},
            ]
            mounted[claim] = vol_name
            for c in pod_spec.get("containers") or []:
                mount = {"mountPath": volume.get("mountPath"), "name": vol_name}
                c["volumeMounts"] = [*(c.get("volumeMounts") or []), mount]

        ann = dict(tmeta.get("annotations") or {})
        ts_key = task_name or DEFAULT_TASK_SPEC
        ann[TASK_INDEX_KEY] = str(index)
        ann[TASK_SPEC_KEY] = ts_key
        ann[GROUP_NAME_KEY] = pod_group_name(job)
        ann[JOB_NAME_KEY] = job_name
        ann[QUEUE_NAME_KEY] = str(job_spec.get("queue") or "")
        ann[JOB_VERSION_KEY] = str(int(((job.get("status") or {}).get("version")) or 0))
        ann[TEMPLATE_UID_KEY] = f"{job_name}-{task_name}"
        ann[RETRY_COUNT_KEY] = str(int(((job.get("status") or {}).get("retryCount")) or 0))
        if task.get("topologyPolicy"):
            ann[NUMA_POLICY_KEY] = str(task["topologyPolicy"])
        job_ann = annotations_of(job)
        for key in (PREEMPTABLE_KEY, COOLDOWN_KEY, REVOCABLE_ZONE_KEY):
            if key in job_ann:
                ann[key] = job_ann[key]
        if JDB_MIN_AVAILABLE_KEY in job_ann:
            ann[JDB_MIN_AVAILABLE_KEY] = job_ann[JDB_MIN_AVAILABLE_KEY]
        elif JDB_MAX_UNAVAILABLE_KEY in job_ann:
            ann[JDB_MAX_UNAVAILABLE_KEY] = job_ann[JDB_MAX_UNAVAILABLE_KEY]

        lbl = dict(tmeta.get("labels") or {})
        lbl[TASK_INDEX_KEY] = str(index)
        lbl[JOB_NAME_KEY] = job_name
        lbl[TASK_SPEC_KEY] = ts_key
        lbl[JOB_NAMESPACE_KEY] = ns
        lbl[QUEUE_NAME_KEY] = str(job_spec.get("queue") or "")
        job_lbl = labels_of(job)
        for key in (PREEMPTABLE_KEY, COOLDOWN_KEY):
            if key in job_lbl:
                lbl[key] = job_lbl[key]
        if self.forwarding:
            ann[JOB_FORWARDING_KEY] = "true"
            lbl[JOB_FORWARDING_KEY] = "true"
        size = self.partition_size
        if size is not None:
            lbl[PARTITION_ID_KEY] = str(index // size if size > 0 else 0)

        pod_meta["labels"] = lbl
        pod_meta["annotations"] = ann
        # kube-apiserver's pod strategy starts every new pod in phase Pending.
        pod["status"] = {"phase": "Pending"}
        return pod
