"""SyncJob, KillJob and KillTarget (``pkg/controllers/job/job_controller_actions.go``).

``sync_job``: skip a job being deleted; look up its queue (a missing queue is an error, so
the request is retried and, after ``--max-requeue-num`` failures, the job is terminated);
*initiate* a job whose phase is empty or Pending (write phase Pending the first time, run the
plugins' ``on_job_add``, create PVCs, create or update the PodGroup), otherwise run
``on_job_update`` and create or update the PodGroup. While the PodGroup is missing or
Pending only the phase function runs on the stored counters — no pod is created before the
scheduler admits the PodGroup. Afterwards: create the missing ``<job>-<task>-<i>`` pods
(respecting ``dependsOn``), delete out-of-sync pods and pods beyond ``replicas``, count
phases, apply the phase function and write the status if it changed.

``kill_job``: bump ``status.version`` (in place, on the cached job, like upstream), mark every
live pod out-of-sync and delete it unless its phase is retained (on the last retry the soft
retain set is always used), count only the pods being deleted (as ``terminating``), apply
the phase function, run the plugins' ``on_job_delete``, write the status and delete the
PodGroup. ``kill_target`` does the same for one task, pod or partition, ignoring the
retain set and keeping the PodGroup and the version.

Every status write stamps ``state.lastTransitionTime`` when the status changed (sync) or
the phase changed (kill) and records a condition for the current phase, replacing an older
condition of the same phase (``appendJobCondition``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, JOB_FORWARDING_KEY, OUT_OF_SYNC_KEY
from pyvolcano.controllers._common import (
    annotations_of,
    go_duration,
    meta,
    name_of,
    namespace_of,
    peek,
    spec,
    status,
)
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.controllers.job.cache import JobCache, JobInfo
from pyvolcano.controllers.job.plugins.base import JobPlugin, PluginBuilder, PluginContext, make_pod_name
from pyvolcano.controllers.job.podgroup import (
    MinResourcesMemo,
    build_pod_group,
    related_pod_group,
    task_priority_values,
    update_pod_group_spec,
)
from pyvolcano.controllers.job.pods import TaskPods, classify, count_task_status, pod_phase
from pyvolcano.controllers.job.policies import Target
from pyvolcano.controllers.job.states import RETAIN_SOFT, UpdateStatusFn
from pyvolcano.store.base import (
    AlreadyExists,
    NotFound,
    Store,
    StoreError,
    Unavailable,
    call_all,
    clone,
    from_rfc3339,
    to_rfc3339,
)

__all__ = ["JobActions", "SyncError", "canonical"]

logger = logging.getLogger(__name__)

_COUNTERS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
_POD_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed"})
_COUNTER_OF_PHASE = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed",
                     "Unknown": "unknown"}


class SyncError(Exception):
    """An action could not be completed; the request is retried with back-off. ``unavailable``:
    some of the writes it gathers failed because the API server was unavailable."""

    def __init__(self, message: str, *, unavailable: bool = False):
        super().__init__(message)
        self.unavailable = unavailable


def canonical(value: Any) -> Any:
    """Drop what Go's ``omitempty`` drops (zero numbers, empty strings/maps/lists, nulls)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            t = type(v)
            # Every sync compares two statuses this way: plain scalars are decided inline.
            if t is str:
                if v:
                    out[k] = v
                continue
            if t is int or t is float:
                if v != 0:
                    out[k] = v
                continue
            if v is None:
                continue
            c = canonical(v)
            if c is None or c == "" or c == {} or c == []:
                continue
            if isinstance(c, int | float) and not isinstance(c, bool) and c == 0:
                continue
            out[k] = c
        return out
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def _append_condition(st: dict[str, Any], phase: str, stamp: str) -> None:
    conds = [c for c in st.get("conditions") or [] if isinstance(c, dict) and c.get("status") != phase]
    conds.append({"status": phase, "lastTransitionTime": stamp})
    st["conditions"] = conds


def _phase(st: Mapping[str, Any]) -> str:
    return str((st.get("state") or {}).get("phase") or "")


def _working_copy(job: Mapping[str, Any]) -> dict[str, Any]:
    """The copy of a cached job that a sync may change: its metadata and status are copied;
    its spec is shared, as nothing but job plugins and volume claims (``_create_job_io``)
    writes into it, and a job with either is copied whole."""
    sp = job.get("spec")
    if not isinstance(sp, dict) or sp.get("plugins") or sp.get("volumes"):
        return clone(job)
    out = dict(job)
    for part in ("metadata", "status"):
        if part in out:
            out[part] = clone(out[part])
    return out


_MEMO_LOCK = threading.Lock()


class JobActions:
    """The operations the state machine drives; implements :class:`~.states.StateOps`."""

    def __init__(
        self,
        *,
        store: Store,
        cache: JobCache,
        entropy: Entropy,
        now: Callable[[], float],
        plugins: Mapping[str, PluginBuilder],
    ):
        self.store = store
        self.cache = cache
        self.entropy = entropy
        self.min_resources_memo = MinResourcesMemo()
        self._pg_in_sync: dict[str, tuple[Any, ...]] = {}
        self.now = now
        self.plugin_builders = plugins
        self.plugin_ctx = PluginContext(store=store, entropy=entropy)

    # ------------------------------------------------------------------ helpers
    def _stamp(self) -> str:
        return to_rfc3339(self.now())

    def _plugins(self, job: Mapping[str, Any]) -> list[JobPlugin]:
        out: list[JobPlugin] = []
        for name, args in sorted((spec(job).get("plugins") or {}).items()):
            builder = self.plugin_builders.get(name)
            if builder is None:
                raise SyncError(f"failed to get plugin {name}")
            out.append(builder(self.plugin_ctx, [str(a) for a in args or []]))
        return out

    def _run_plugins(self, hook: str, job: dict[str, Any]) -> None:
        st = job.setdefault("status", {})
        if not isinstance(st.get("controlledResources"), dict):
            st["controlledResources"] = {}
        for plugin in self._plugins(job):
            getattr(plugin, hook)(job)

    def _write_status(self, job: dict[str, Any]) -> dict[str, Any]:
        new = self.store.update_status(job)
        self.cache.update(new)
        return new

    def _delete_pod(self, pod: Mapping[str, Any]) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete("Pod", namespace_of(pod), name_of(pod))

    # ------------------------------------------------------------------ SyncJob
    def sync_job(self, info: JobInfo, fn: UpdateStatusFn | None) -> None:
        assert info.job is not None
        if meta(info.job).get("deletionTimestamp"):
            return
        job = _working_copy(info.job)
        queue_name = str(spec(job).get("queue") or "")
        try:
            queue = peek(self.store, "Queue", None, queue_name)  # only spec.extendClusters is read
        except NotFound as e:
            raise SyncError(f"queue {queue_name!r} of job {namespace_of(job)}/{name_of(job)} not found") from e
        forwarding = bool(spec(queue).get("extendClusters"))
        if forwarding and annotations_of(job).get(JOB_FORWARDING_KEY) != "true":
            job.setdefault("metadata", {}).setdefault("annotations", {})[JOB_FORWARDING_KEY] = "true"
            st = job.get("status")
            job = self.store.update(job)
            job["status"] = st
        if _phase(status(job)) in ("", "Pending"):
            job = self._initiate(job)
        else:
            self._run_plugins("on_job_update", job)
            self._create_or_update_pod_group(job)

        pg = related_pod_group(self.store, job, read_only=True)
        pg_phase = str(status(pg).get("phase") or "") if pg is not None else ""
        if pg is None or pg_phase in ("", "Pending"):
            old = canonical(clone(status(job)))
            st = job.setdefault("status", {})
            if fn is not None:
                fn(st)
            if canonical(st) == old:
                return
            stamp = self._stamp()
            st.setdefault("state", {})["lastTransitionTime"] = stamp
            _append_condition(st, _phase(st), stamp)
            self._write_status(job)
            return
        self._sync_pods(info, job, fn, forwarding)

    def _sync_pods(self, info: JobInfo, job: dict[str, Any], fn: UpdateStatusFn | None, forwarding: bool) -> None:
        counts: dict[str, int] = {}
        task_counts: dict[str, dict[str, Any]] = {}
        terminating = 0
        to_create: list[tuple[int, list[dict[str, Any]]]] = []
        to_delete: list[dict[str, Any]] = []
        plugins = self._plugins(job)
        tasks = [t for t in spec(job).get("tasks") or [] if isinstance(t, dict)]
        job_name = name_of(job)
        for index, ts in enumerate(tasks):
            task_name = str(ts.get("name", ""))
            existing = dict(info.pods.get(task_name, {}))
            creates: list[dict[str, Any]] = []
            # Inlined classify / count_task_status: this loop runs for every pod on every sync.
            hist: dict[str, int] = {}
            factory: TaskPods | None = None
            for i in range(int(ts.get("replicas") or 0)):
                pod = existing.pop(make_pod_name(job_name, task_name, i), None)
                if pod is None:
                    if factory is None:
                        factory = TaskPods(job, ts, forwarding=forwarding, entropy=self.entropy)
                    new_pod = factory.pod(i)
                    for plugin in plugins:
                        plugin.on_pod_create(new_pod, job)
                    creates.append(new_pod)
                    continue
                md = pod.get("metadata") or {}
                if md.get("deletionTimestamp"):
                    terminating += 1
                    continue
                if OUT_OF_SYNC_KEY in (md.get("annotations") or {}):
                    to_delete.append(pod)
                phase = (pod.get("status") or {}).get("phase")
                if phase not in _POD_PHASES:
                    phase = "Unknown"
                key = _COUNTER_OF_PHASE[phase]
                counts[key] = counts.get(key, 0) + 1
                hist[phase] = hist.get(phase, 0) + 1
            if hist:
                # Cached pods are grouped by their volcano.sh/task-spec, which is the task name.
                task_counts[task_name] = {"phase": hist}
            to_create.append((index, creates))
            # Pods beyond the desired replicas (scale down).
            to_delete.extend(existing[n] for n in sorted(existing))

        errors: list[str] = []
        unavailable = False
        for index, creates in to_create:
            if not creates:
                continue
            if tasks[index].get("dependsOn") and not self._depends_on_ready(index, job):
                logger.debug("job %s/%s: tasks %s depends on are not ready", namespace_of(job), name_of(job),
                             tasks[index].get("name"))
                continue
            results = call_all(self.store, [functools.partial(self.store.create, pod) for pod in creates])
            for pod, created in zip(creates, results, strict=True):
                if isinstance(created, AlreadyExists):
                    continue
                if isinstance(created, StoreError):
                    errors.append(f"failed to create pod {name_of(pod)}, err: {created}")
                    unavailable = unavailable or isinstance(created, Unavailable)
                    continue
                # Cached at once, not only when its watch event arrives: another request of this
                # job in the same batch would otherwise create it again (and be refused).
                self.cache.add_pod(created)
                classify(created, counts)
                count_task_status(created, task_counts)
        if errors:
            raise SyncError(f"failed to create {len(errors)} pods of {len(to_create)}: {'; '.join(errors)}",
                            unavailable=unavailable)

        for pod in to_delete:
            try:
                self._delete_pod(pod)
            except StoreError as e:
                errors.append(f"failed to delete pod {name_of(pod)}, err {e}")
                unavailable = unavailable or isinstance(e, Unavailable)
                continue
            terminating += 1
        if errors:
            raise SyncError(f"failed to delete {len(errors)} pods of {len(to_delete)}: {'; '.join(errors)}",
                            unavailable=unavailable)

        old = status(job)
        new_status: dict[str, Any] = {
            "state": clone(old.get("state") or {}),
            **{k: counts.get(k, 0) for k in _COUNTERS if k != "terminating"},
            "terminating": terminating,
            "version": int(old.get("version") or 0),
            "minAvailable": int(spec(job).get("minAvailable") or 0),
            "taskStatusCount": task_counts,
            "controlledResources": clone(old.get("controlledResources") or {}),
            "conditions": clone(old.get("conditions") or []),
            "retryCount": int(old.get("retryCount") or 0),
        }
        if fn is not None:
            fn(new_status)
        if canonical(new_status) == canonical(old):
            return
        stamp = self._stamp()
        new_status.setdefault("state", {})["lastTransitionTime"] = stamp
        _append_condition(new_status, _phase(new_status), stamp)
        job["status"] = canonical(new_status)
        self._write_status(job)

    def _depends_on_ready(self, index: int, job: Mapping[str, Any]) -> bool:
        """``waitDependsOnTaskMeetCondition``."""
        depends = spec(job)["tasks"][index].get("dependsOn") or {}
        names = [str(n) for n in depends.get("name") or []]
        if len(names) > 1 and depends.get("iteration") == "any":
            return any(self._task_pods_ready(n, job) for n in names)
        return all(self._task_pods_ready(n, job) for n in names)

    def _task_pods_ready(self, task_name: str, job: Mapping[str, Any]) -> bool:
        """``isDependsOnPodsReady``: ≥ the task's minAvailable pods Succeeded or Running and ready."""
        task = next((t for t in spec(job).get("tasks") or [] if t.get("name") == task_name), None)
        if task is None:
            return True
        ready = 0
        for i in range(int(task.get("replicas") or 0)):
            try:
                pod = self.store.get("Pod", namespace_of(job), make_pod_name(name_of(job), task_name, i))
            except NotFound:
                try:
                    self.store.get("Job", namespace_of(job), name_of(job))
                except NotFound:
                    return True
                continue
            phase = pod_phase(pod)
            if phase == "Succeeded" or (phase == "Running" and all(
                bool(cs.get("ready")) for cs in status(pod).get("containerStatuses") or [] if isinstance(cs, dict)
            )):
                ready += 1
        min_available = task.get("minAvailable")
        return min_available is None or ready >= int(min_available)

    # ------------------------------------------------------------------ initiation
    def _initiate(self, job: dict[str, Any]) -> dict[str, Any]:
        if not _phase(status(job)):
            st = job.setdefault("status", {})
            stamp = self._stamp()
            st["state"] = {**(st.get("state") or {}), "phase": "Pending", "lastTransitionTime": stamp}
            st["minAvailable"] = int(spec(job).get("minAvailable") or 0)
            _append_condition(st, "Pending", stamp)
            job = _working_copy(self._write_status(job))
        self._run_plugins("on_job_add", job)
        job = self._create_job_io(job)
        self._create_or_update_pod_group(job)
        return job

    def _create_job_io(self, job: dict[str, Any]) -> dict[str, Any]:
        """``createJobIOIfNotExist``: claim names for ``spec.volumes`` and their PVCs."""
        st = job.setdefault("status", {})
        cr = st.get("controlledResources")
        if not isinstance(cr, dict):
            cr = st["controlledResources"] = {}
        need_update = False
        ns = namespace_of(job)
        for volume in spec(job).get("volumes") or []:
            if not isinstance(volume, dict):
                continue
            claim = str(volume.get("volumeClaimName") or "")
            if not claim:
                while True:
                    claim = f"{name_of(job)}-pvc-{self.entropy.name_suffix()}"
                    if not self._pvc_exists(ns, claim):
                        break
                volume["volumeClaimName"] = claim
                need_update = True
                if isinstance(volume.get("volumeClaim"), dict):
                    self._create_pvc(job, claim, volume["volumeClaim"])
            elif not self._pvc_exists(ns, claim):
                raise SyncError(
                    f"pvc {claim} is not found, the job will be in the Pending state until the PVC is created"
                )
            cr[f"volume-pvc-{claim}"] = claim
        if need_update:
            new = self.store.update(job)
            new["status"] = st
            return new
        return job

    def _pvc_exists(self, namespace: str, name: str) -> bool:
        try:
            self.store.get("PersistentVolumeClaim", namespace, name)
        except NotFound:
            return False
        return True

    def _create_pvc(self, job: Mapping[str, Any], name: str, claim_spec: Mapping[str, Any]) -> None:
        from pyvolcano.controllers._common import controller_ref

        self.store.create({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "namespace": namespace_of(job),
                "name": name,
                "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
            },
            "spec": copy.deepcopy(dict(claim_spec)),
        })

    def _create_or_update_pod_group(self, job: dict[str, Any]) -> None:
        current = related_pod_group(self.store, job, read_only=True)
        if current is None:
            with contextlib.suppress(AlreadyExists):
                self.store.create(build_pod_group(self.store, job, self.min_resources_memo))
            return
        # The PodGroup spec follows from the Job spec, the PodGroup spec and the tasks' priority
        # values; once found in line, it stays so until one of them changes (generations).
        jmd, pmd = meta(job), meta(current)
        key = (jmd.get("generation"), pmd.get("uid"), pmd.get("generation"), task_priority_values(self.store, job))
        uid = str(jmd.get("uid") or "")
        if uid and key[0] and key[2] and self._pg_in_sync.get(uid) == key:
            return
        pg = clone(current)
        if update_pod_group_spec(self.store, pg, job, self.min_resources_memo):
            self.store.update(pg)
        elif uid:
            with _MEMO_LOCK:  # jobs may be synced concurrently (JobController on a remote store)
                if len(self._pg_in_sync) >= 4096:
                    self._pg_in_sync.pop(next(iter(self._pg_in_sync)), None)
                self._pg_in_sync[uid] = key

    # ------------------------------------------------------------------ kills
    def kill_job(self, info: JobInfo, retain: frozenset[str], fn: UpdateStatusFn | None) -> None:
        self._kill_pods(info, retain, None, fn)

    def kill_target(self, info: JobInfo, target: Target, fn: UpdateStatusFn | None) -> None:
        self._kill_pods(info, frozenset(), target, fn)

    def _targets(self, info: JobInfo, target: Target) -> dict[str, dict[str, Any]] | None:
        if target.type == "task":
            return dict(info.pods.get(target.task_name, {}))
        if target.type == "pod":
            pod = info.pods.get(target.task_name, {}).get(target.pod_name)
            return {} if pod is None else {target.pod_name: pod}
        if target.type == "partition":
            if not info.has_partition_policy(target.task_name):
                return None
            pods = info.partition_pods(target.task_name, target.partition)
            return pods or None
        return {}

    def _kill_pods(
        self, info: JobInfo, retain: frozenset[str], target: Target | None, fn: UpdateStatusFn | None
    ) -> None:
        cached = info.job
        assert cached is not None
        if meta(cached).get("deletionTimestamp"):
            return
        counts: dict[str, int] = {}
        task_counts: dict[str, dict[str, Any]] = {}
        terminating = 0
        total = 0
        to_kill: dict[str, dict[str, Any]] = {}
        if target is not None:
            found = self._targets(info, target)
            if found is None:
                logger.info("job %s/%s has no partition %r in task %s, skip", info.namespace, info.name,
                            target.partition, target.task_name)
                return
            to_kill = found
            total = len(to_kill)
        else:
            # Upstream bumps the version on its cached job; the watched object is shared, so
            # the cache gets a copy carrying the new version instead.
            st = dict(cached.get("status") or {})
            st["version"] = int(st.get("version") or 0) + 1
            cached = info.job = {**cached, "status": st}
            self.cache.update(cached)
            max_retry = int(spec(cached).get("maxRetry") or 0)
            last_retry = int(st.get("retryCount") or 0) >= max_retry - 1
            keep = RETAIN_SOFT if last_retry else retain
            for task in sorted(info.pods):
                for pod_name in sorted(info.pods[task]):
                    pod = info.pods[task][pod_name]
                    total += 1
                    if meta(pod).get("deletionTimestamp"):
                        terminating += 1
                        continue
                    if pod_phase(pod) not in keep:
                        to_kill[pod_name] = pod

        errors: list[str] = []
        unavailable = False
        for pod_name in sorted(to_kill):
            pod = to_kill[pod_name]
            try:
                self.store.patch(
                    "Pod", namespace_of(pod), pod_name, {"metadata": {"annotations": {OUT_OF_SYNC_KEY: "true"}}}
                )
            except NotFound:
                pass
            except StoreError as e:
                errors.append(str(e))
                unavailable = unavailable or isinstance(e, Unavailable)
                del to_kill[pod_name]
        victims = []
        for pod_name in sorted(to_kill):
            pod = to_kill[pod_name]
            if meta(pod).get("deletionTimestamp"):
                terminating += 1
                continue
            victims.append(pod)
        for pod, res in zip(victims, call_all(self.store, [functools.partial(self._delete_pod, p) for p in victims]),
                            strict=True):
            if isinstance(res, StoreError):
                errors.append(str(res))
                unavailable = unavailable or isinstance(res, Unavailable)
                classify(pod, counts)
                count_task_status(pod, task_counts)
                continue
            terminating += 1
        if errors:
            raise SyncError(f"failed to kill {len(errors)} pods of {total}: {'; '.join(errors)}",
                            unavailable=unavailable)

        job = clone(cached)
        st = job.setdefault("status", {})
        for key in _COUNTERS:
            st[key] = terminating if key == "terminating" else counts.get(key, 0)
        st["taskStatusCount"] = task_counts
        state = st.setdefault("state", {})
        if fn is not None and fn(st):
            stamp = self._stamp()
            state["lastTransitionTime"] = stamp
            _append_condition(st, _phase(st), stamp)
        created = meta(job).get("creationTimestamp")
        if state.get("lastTransitionTime") and created:
            with contextlib.suppress(ValueError):
                st["runningDuration"] = go_duration(
                    from_rfc3339(str(state["lastTransitionTime"])) - from_rfc3339(str(created))
                )
        self._run_plugins("on_job_delete", job)
        job["status"] = canonical(st)
        try:
            self._write_status(job)
        except NotFound:
            return
        if target is None:
            pg = related_pod_group(self.store, job, read_only=True)
            if pg is not None:
                with contextlib.suppress(NotFound):
                    self.store.delete("PodGroup", namespace_of(pg), name_of(pg))
