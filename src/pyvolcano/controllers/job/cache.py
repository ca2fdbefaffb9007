"""The job controller's cache of jobs and their pods (``pkg/controllers/cache``, ``apis/job_info.go``).

Pods are grouped under ``<namespace>/<volcano.sh/job-name>`` and, inside, by task
(``volcano.sh/task-spec``). The cache is fed by watch events (pods) and by the controller's
own writes (jobs: after each status write the cache holds the returned object, like
upstream's ``cache.Update(newJob)``), so it can run ahead of the watch stream.

:meth:`JobCache.get` returns a :class:`JobInfo` whose ``job`` is the cached dict itself
(upstream's ``Clone`` shares the job pointer; ``KillJob`` bumps ``status.version`` on it in
place) and whose pod maps are copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.names import JOB_NAME_KEY, JOB_VERSION_KEY, PARTITION_ID_KEY, TASK_SPEC_KEY
from pyvolcano.controllers._common import annotations_of, labels_of, name_of, namespace_of, resource_version, spec

__all__ = ["JobCache", "JobInfo", "job_key"]


def job_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(slots=True)
class JobInfo:
    namespace: str
    name: str
    job: dict[str, Any] | None
    pods: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # Per task: Σ container restarts of its Running/Pending pods in ``pods`` (kept by JobCache).
    restarts: dict[str, int] = field(default_factory=dict)

    def partition_pods(self, task: str, partition: str) -> dict[str, dict[str, Any]]:
        """Pods of ``task`` labelled with ``volcano.sh/partition-id == partition``."""
        return {n: p for n, p in self.pods.get(task, {}).items() if labels_of(p).get(PARTITION_ID_KEY) == partition}

    def has_partition_policy(self, task: str) -> bool:
        if self.job is None:
            return False
        return any(t.get("name") == task and t.get("partitionPolicy") for t in spec(self.job).get("tasks") or [])


class JobCache:
    def __init__(self) -> None:
        self._jobs: dict[str, JobInfo] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._jobs

    def keys(self) -> list[str]:
        return sorted(self._jobs)

    def get(self, key: str) -> JobInfo | None:
        info = self._jobs.get(key)
        if info is None or info.job is None:
            return None
        return JobInfo(info.namespace, info.name, info.job, {t: dict(ps) for t, ps in info.pods.items()})

    def raw_job(self, key: str) -> dict[str, Any] | None:
        info = self._jobs.get(key)
        return None if info is None else info.job

    # ------------------------------------------------------------------ jobs
    def add(self, job: dict[str, Any]) -> None:
        key = job_key(namespace_of(job), name_of(job))
        info = self._jobs.get(key)
        if info is None:
            self._jobs[key] = JobInfo(namespace_of(job), name_of(job), job)
        elif info.job is None:
            info.namespace, info.name, info.job = namespace_of(job), name_of(job), job
        # else: upstream reports a duplicate and keeps the cached job.

    def update(self, job: dict[str, Any]) -> bool:
        """Replace the cached job unless the new one has an older resourceVersion."""
        key = job_key(namespace_of(job), name_of(job))
        info = self._jobs.get(key)
        if info is None:
            return False
        if info.job is not None and resource_version(job) < resource_version(info.job):
            return False
        info.job = job
        return True

    def delete(self, job: dict[str, Any]) -> None:
        key = job_key(namespace_of(job), name_of(job))
        info = self._jobs.get(key)
        if info is None:
            return
        info.job = None
        self._cleanup(key)

    def _cleanup(self, key: str) -> None:
        info = self._jobs.get(key)
        if info is not None and info.job is None and not info.pods:
            del self._jobs[key]

    # ------------------------------------------------------------------ pods
    @staticmethod
    def _pod_key(pod: dict[str, Any]) -> str | None:
        job_name = annotations_of(pod).get(JOB_NAME_KEY)
        if job_name is None:
            return None
        return job_key(namespace_of(pod), job_name)

    @staticmethod
    def _pod_task(pod: dict[str, Any]) -> str | None:
        ann = annotations_of(pod)
        if TASK_SPEC_KEY not in ann or JOB_VERSION_KEY not in ann:
            return None
        return ann[TASK_SPEC_KEY]

    def add_pod(self, pod: dict[str, Any]) -> None:
        key, task = self._pod_key(pod), self._pod_task(pod)
        if key is None or task is None:
            return
        info = self._jobs.setdefault(key, JobInfo(namespace_of(pod), "", None))
        pods = info.pods.setdefault(task, {})
        if name_of(pod) not in pods:
            pods[name_of(pod)] = pod
            self._count_restarts(info, task, pod, 1)

    def update_pod(self, pod: dict[str, Any]) -> None:
        key, task = self._pod_key(pod), self._pod_task(pod)
        if key is None or task is None:
            return
        info = self._jobs.setdefault(key, JobInfo(namespace_of(pod), "", None))
        pods = info.pods.get(task)
        if pods is None or name_of(pod) not in pods:
            return  # upstream: "can not find pod in cache"
        self._count_restarts(info, task, pods[name_of(pod)], -1)
        pods[name_of(pod)] = pod
        self._count_restarts(info, task, pod, 1)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        key, task = self._pod_key(pod), self._pod_task(pod)
        if key is None or task is None:
            return
        info = self._jobs.get(key)
        if info is None:
            return
        pods = info.pods.get(task)
        if pods is not None:
            gone = pods.pop(name_of(pod), None)
            if gone is not None:
                self._count_restarts(info, task, gone, -1)
            if not pods:
                del info.pods[task]
                info.restarts.pop(task, None)
        self._cleanup(key)

    @staticmethod
    def _count_restarts(info: JobInfo, task: str, pod: dict[str, Any], sign: int) -> None:
        st = pod.get("status") or {}
        if st.get("phase") not in ("Running", "Pending"):
            return
        n = 0
        for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
            if isinstance(cs, dict):
                n += int(cs.get("restartCount") or 0)
        if n:
            info.restarts[task] = info.restarts.get(task, 0) + sign * n

    def has_pod(self, pod: dict[str, Any]) -> bool:
        key, task = self._pod_key(pod), self._pod_task(pod)
        if key is None or task is None:
            return False
        info = self._jobs.get(key)
        return info is not None and name_of(pod) in info.pods.get(task, {})

    # ------------------------------------------------------------------ task predicates
    def _task(self, key: str, task: str) -> tuple[JobInfo, dict[str, Any]] | None:
        info = self._jobs.get(key)
        if info is None or info.job is None or task not in info.pods:
            return None
        for t in spec(info.job).get("tasks") or []:
            if isinstance(t, dict) and t.get("name") == task:
                return info, t
        return info, {}

    def task_completed(self, key: str, task: str) -> bool:
        """All of the task's replicas have a Succeeded pod in the cache."""
        found = self._task(key, task)
        if found is None:
            return False
        info, ts = found
        replicas = int(ts.get("replicas") or 0)
        if replicas <= 0:
            return False
        done = sum(1 for p in info.pods[task].values() if (p.get("status") or {}).get("phase") == "Succeeded")
        return done >= replicas

    def task_failed(self, key: str, task: str) -> bool:
        """Σ container restarts of the task's Running/Pending pods reached ``maxRetry`` (default 3)."""
        found = self._task(key, task)
        if found is None:
            return False
        info, ts = found
        replicas = int(ts.get("replicas") or 0)
        max_retry = int(ts.get("maxRetry") or 0)
        if replicas == 0 or max_retry == -1:
            return False
        if max_retry == 0:
            max_retry = 3
        # The sum is kept as pods come and go: this runs on every update of a Running/Pending pod.
        return info.restarts.get(task, 0) >= max_retry
