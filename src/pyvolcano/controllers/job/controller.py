"""The vcjob controller (``pkg/controllers/job``) on the virtual clock.

Watch events become :class:`~.policies.Request` s (``job_controller_handler.go``):

* Job added, or its spec or phase changed ⇒ ``OutOfSync``;
* pod added ⇒ ``PodPending`` (``OutOfSync`` if it carries ``volcano.sh/controller-out-of-sync``);
* pod updated: into Failed ⇒ ``PodFailed`` with the first container's exit code; into
  Succeeded with every replica of its task Succeeded ⇒ ``TaskCompleted``; Running or Pending
  with the task's container restarts ≥ its ``maxRetry`` ⇒ ``TaskFailed``, overridden by
  ``PodRunning`` / ``PodPending`` on a transition into that phase; otherwise ``OutOfSync``;
* pod deleted ⇒ ``PodEvicted`` (``OutOfSync`` if out-of-sync or unknown to the cache);
* PodGroup phase changed ⇒ a request with event ``Unknown`` if the new phase is Unknown,
  else with no event (a plain sync);
* a ``bus.volcano.sh/v1alpha1`` Command targeting a Job is deleted, then its action is
  requested with event ``CommandIssued``.

:meth:`JobController.run` processes commands, queued requests and expired delayed actions
at the given virtual time. Each request is resolved by :func:`~.policies.apply_policies`; a
policy with a ``timeout`` schedules the action (a delayed action) instead, keyed by job and
pod. Failures are retried with client-go's exponential back-off (5 ms doubling, at most
1000 s) up to ``max_requeue`` times (``--max-requeue-num``, 15; -1 = unlimited), after which
the job is terminated; a failure because the API server was unavailable is retried on its own
uncounted back-off instead (:meth:`~pyvolcano.controllers._common.WorkQueue.add_unavailable`).
Upstream spreads requests over ``--worker-threads`` goroutines, each job on one worker; on the
in-memory store they are handled one at a time in arrival order, which is one of upstream's
possible interleavings. On a remote store (one that offers
``map_concurrently``) the requests of different jobs run concurrently, each job's in order,
and the bookkeeping they share (work queue, delayed actions) is guarded by a lock.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, JOB_NAME_KEY, JOB_VERSION_KEY, PARTITION_ID_KEY, TASK_SPEC_KEY
from pyvolcano.controllers._common import (
    WorkQueue,
    annotations_of,
    controller_of,
    labels_of,
    name_of,
    namespace_of,
    spec,
    status,
    uid_of,
)
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.controllers.job import policies as P
from pyvolcano.controllers.job.actions import JobActions, SyncError
from pyvolcano.controllers.job.cache import JobCache
from pyvolcano.controllers.job.plugins import BUILTIN_JOB_PLUGINS
from pyvolcano.controllers.job.plugins.base import PluginBuilder, PluginError
from pyvolcano.controllers.job.pods import is_out_of_sync, pod_phase
from pyvolcano.controllers.job.policies import DelayAction, Request, StateAction
from pyvolcano.controllers.job.states import execute
from pyvolcano.store.base import NotFound, Store, StoreError, Unavailable, WatchEvent, calls_concurrently

__all__ = ["JobController"]

logger = logging.getLogger(__name__)

_FAILURES = (StoreError, SyncError, PluginError)
# Pod events whose plain SyncJob may be batched (sync_batch_period): a pod added, changed or
# turned Pending or Running; not failures, evictions or completions.
_BATCHED_EVENTS = frozenset({P.POD_PENDING, P.POD_RUNNING, P.OUT_OF_SYNC})


def _unavailable(err: Exception) -> bool:
    return isinstance(err, Unavailable) or (isinstance(err, SyncError) and err.unavailable)


@dataclass(frozen=True, slots=True)
class _CommandItem:
    seq: int
    namespace: str
    name: str
    action: str
    target: str


class JobController:
    """Reconciles ``batch.volcano.sh/v1alpha1`` Jobs into PodGroups and pods.

    Args:
        store: the object store.
        entropy: where generated names and SSH keys come from, chosen by the runtime
            (:mod:`pyvolcano.controllers.entropy`).
        max_requeue: ``--max-requeue-num``.
        plugins: job plugin builders by name (defaults to the built-in ones).
        sync_batch_period: when above 0, a pod's event that resolves to a plain ``SyncJob``
            (the pod added, changed, or turned Pending or Running) does not sync the job at
            once: one sync of the job runs this many seconds after the first such event, for
            all of them (Kubernetes' job controller batches pod updates the same way,
            ``syncJobBatchPeriod``). Upstream syncs once per
            event; the job's status ends the same, with fewer intermediate writes. Failures,
            completions, evictions and policy actions are never batched. 0 (the default, and
            the simulator's): upstream's behaviour.
    """

    name = "job-controller"

    def __init__(
        self,
        *,
        store: Store,
        entropy: Entropy,
        max_requeue: int = 15,
        plugins: Mapping[str, PluginBuilder] | None = None,
        sync_batch_period: float = 0.0,
    ):
        self.store = store
        self.sync_batch_period = sync_batch_period
        # Batched syncs: job key -> when its one sync runs, and the same as a heap of (at, seq, key).
        self._batched: dict[str, float] = {}
        self._batch_heap: list[tuple[float, int, str]] = []
        self._batch_seq = itertools.count()
        self.max_requeue = -1 if max_requeue < 0 else max_requeue
        self.cache = JobCache()
        self._lock = threading.RLock()  # shared bookkeeping when jobs are synced concurrently
        self.queue: WorkQueue[Request] = WorkQueue(dedup=True, max_delay=1000.0)
        self.commands: WorkQueue[_CommandItem] = WorkQueue(dedup=False, max_delay=1000.0)
        self._cmd_seq = itertools.count()
        self.now = 0.0
        self.actions = JobActions(
            store=store, cache=self.cache, entropy=entropy, now=lambda: self.now,
            plugins=BUILTIN_JOB_PLUGINS if plugins is None else plugins,
        )
        # Informer view: the last watched version of each Job / Pod / PodGroup.
        self._seen: dict[tuple[str, str, str], dict[str, Any]] = {}
        # Delayed actions: by job key and pod name (like upstream), plus every armed timer.
        self.delay_actions: dict[str, dict[str, DelayAction]] = {}
        self._timers: list[DelayAction] = []
        self._timer_seq = itertools.count()
        self._timer_order: dict[int, int] = {}

    # ================================================================== events
    def on_event(self, ev: WatchEvent) -> None:
        kind = ev.kind
        if kind not in ("Job", "Pod", "PodGroup", "Command"):
            return
        obj = ev.object
        key = (kind, namespace_of(obj), name_of(obj))
        old = self._seen.get(key)
        if ev.type == "DELETED":
            self._seen.pop(key, None)
        elif kind != "Command":
            self._seen[key] = obj
        if kind == "Job":
            if ev.type == "ADDED" or (ev.type == "MODIFIED" and old is None):
                self._add_job(obj)
            elif ev.type == "MODIFIED":
                self._update_job(old or {}, obj)
            else:
                self.cache.delete(obj)
        elif kind == "Pod":
            if ev.type == "ADDED" or (ev.type == "MODIFIED" and old is None):
                self._add_pod(obj)
            elif ev.type == "MODIFIED":
                self._update_pod(old or {}, obj)
            else:
                self._delete_pod(obj)
        elif kind == "PodGroup":
            if ev.type == "MODIFIED" and old is not None:
                self._update_pod_group(old, obj)
        elif ev.type == "ADDED":
            self._add_command(obj)

    def _add_job(self, job: dict[str, Any]) -> None:
        self.cache.add(job)
        self.queue.add(Request(namespace_of(job), name_of(job), event=P.OUT_OF_SYNC))

    def _update_job(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get("resourceVersion"):
            return
        self.cache.update(new)
        old_phase = (status(old).get("state") or {}).get("phase")
        new_phase = (status(new).get("state") or {}).get("phase")
        if spec(old) == spec(new) and old_phase == new_phase:
            return
        self.queue.add(Request(namespace_of(new), name_of(new), event=P.OUT_OF_SYNC))

    @staticmethod
    def _job_owner_uid(pod: Mapping[str, Any]) -> str | None:
        ref = controller_of(pod)
        if ref is None or ref.get("apiVersion") != JOB_API_VERSION or ref.get("kind") != "Job":
            return None
        return str(ref.get("uid", ""))

    @staticmethod
    def _pod_identity(pod: Mapping[str, Any]) -> tuple[str, str, int] | None:
        ann = annotations_of(pod)
        job_name, task, version = ann.get(JOB_NAME_KEY), ann.get(TASK_SPEC_KEY), ann.get(JOB_VERSION_KEY)
        if job_name is None or task is None or version is None:
            return None
        try:
            return job_name, task, int(version)
        except ValueError:
            return None

    def _pod_request(self, pod: Mapping[str, Any], job_uid: str, ident: tuple[str, str, int], event: str,
                     exit_code: int = 0) -> Request:
        job_name, task, version = ident
        return Request(
            namespace=namespace_of(pod), job_name=job_name, job_uid=job_uid, task_name=task,
            pod_name=name_of(pod), pod_uid=uid_of(pod), partition_id=labels_of(pod).get(PARTITION_ID_KEY, ""),
            event=event, exit_code=exit_code, job_version=version,
        )

    def _add_pod(self, pod: dict[str, Any]) -> None:
        job_uid = self._job_owner_uid(pod)
        ident = self._pod_identity(pod)
        if job_uid is None or ident is None:
            return
        event = P.OUT_OF_SYNC if is_out_of_sync(pod) else P.POD_PENDING
        self.cache.add_pod(pod)
        self.queue.add(self._pod_request(pod, job_uid, ident, event))

    def _update_pod(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        job_uid = self._job_owner_uid(new)
        if job_uid is None:
            return
        ident = self._pod_identity(new)
        if ident is None:
            return
        self.cache.update_pod(new)
        key = f"{namespace_of(new)}/{ident[0]}"
        event, exit_code = P.OUT_OF_SYNC, 0
        phase, old_phase = pod_phase(new), pod_phase(old)
        if phase == "Failed":
            if old_phase != "Failed":
                event = P.POD_FAILED
                statuses = status(new).get("containerStatuses") or []
                if statuses and isinstance(statuses[0], dict):
                    terminated = (statuses[0].get("state") or {}).get("terminated")
                    if isinstance(terminated, dict):
                        exit_code = int(terminated.get("exitCode") or 0)
        elif phase == "Succeeded":
            if old_phase != "Succeeded" and self.cache.task_completed(key, ident[1]):
                event = P.TASK_COMPLETED
        elif phase in ("Running", "Pending"):
            if self.cache.task_failed(key, ident[1]):
                event = P.TASK_FAILED
            if old_phase != phase:
                event = P.POD_RUNNING if phase == "Running" else P.POD_PENDING
        if is_out_of_sync(new):
            event = P.OUT_OF_SYNC
        self.queue.add(self._pod_request(new, job_uid, ident, event, exit_code))

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        job_uid = self._job_owner_uid(pod)
        ident = self._pod_identity(pod)
        if job_uid is None or ident is None:
            return
        event = P.POD_EVICTED
        if is_out_of_sync(pod) or not self.cache.has_pod(pod):
            event = P.OUT_OF_SYNC
        req = self._pod_request(pod, job_uid, ident, event)
        self.cache.delete_pod(pod)
        self.queue.add(req)

    def _update_pod_group(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        job_name = name_of(new)
        for ref in (new.get("metadata") or {}).get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("kind") == "Job":
                job_name = str(ref.get("name", ""))
        phase = status(new).get("phase")
        if phase == status(old).get("phase"):
            return
        event = P.JOB_UNKNOWN if phase == "Unknown" else ""
        self.queue.add(Request(namespace_of(new), job_name, event=event))

    def _add_command(self, cmd: dict[str, Any]) -> None:
        target = cmd.get("target")
        if not isinstance(target, dict) or target.get("apiVersion") != JOB_API_VERSION or target.get("kind") != "Job":
            return
        self.commands.add(_CommandItem(next(self._cmd_seq), namespace_of(cmd), name_of(cmd),
                                       str(cmd.get("action", "")), str(target.get("name", ""))))

    # ================================================================== processing
    def run(self, now: float) -> float | None:
        self.now = now
        for _ in range(1000):
            worked = self._process_commands()
            reqs = list(self.queue.drain(now))
            if self._batch_heap:
                reqs += self._due_batched(now)
            if reqs:
                worked = True
                self._process_requests(reqs)
            due = self._due_timers(now)
            for d in due:
                worked = True
                self._fire(d)
            if not worked:
                break
        return self.next_wakeup()

    def next_wakeup(self) -> float | None:
        times = [t for t in (self.queue.next_wakeup(), self.commands.next_wakeup()) if t is not None]
        if self._batch_heap:
            times.append(self._batch_heap[0][0])
        times += [d.fire_at for d in self._timers if not d.cancelled]
        return min(times, default=None)

    def _process_commands(self) -> bool:
        worked = False
        for item in self.commands.drain(self.now):
            worked = True
            try:
                self.store.delete("Command", item.namespace, item.name)
            except NotFound:
                continue
            except StoreError as e:
                logger.error("failed to delete Command <%s/%s>: %s", item.namespace, item.name, e)
                if isinstance(e, Unavailable):
                    self.commands.add_unavailable(item, self.now)
                else:
                    self.commands.add_rate_limited(item, self.now)
                continue
            self.commands.forget(item)
            self.queue.add(Request(item.namespace, item.target, event=P.COMMAND_ISSUED, action=item.action))
        return worked

    def _process_requests(self, reqs: list[Request]) -> None:
        if len(reqs) < 2 or not calls_concurrently(self.store):
            for req in reqs:
                self._process_request(req)
            return
        by_job: dict[str, list[Request]] = {}
        for req in reqs:
            by_job.setdefault(req.job_key, []).append(req)
        if len(by_job) == 1:  # one job: keep the store's concurrency for its own pods
            for req in reqs:
                self._process_request(req)
            return

        def work(group: list[Request]) -> None:
            for req in group:
                try:
                    self._process_request(req)
                except Exception:  # a bug must not lose the request: retry it with back-off
                    logger.exception("job %s: request %s failed", req.job_key, req)
                    with self._lock:
                        self.queue.add_rate_limited(req, self.now)

        for result in self.store.map_concurrently([functools.partial(work, g) for g in by_job.values()]):
            if isinstance(result, Exception):
                logger.error("job request failed: %s", result)

    def _process_request(self, req: Request) -> None:
        with self._lock:
            self._clean_pod_delay_actions(req)
            info = self.cache.get(req.job_key)
            if info is None or info.job is None:
                logger.debug("job %s not in cache; dropping %s", req.job_key, req)
                return
            d = P.apply_policies(info.job, req)
            if self.sync_batch_period > 0 and d.delay == 0 and d.action == P.SYNC_JOB and req.pod_name \
                    and req.event in _BATCHED_EVENTS:
                self._batch(req)
                self.queue.forget(req)
                return
            if d.delay != 0:
                logger.info("Execute <%s> on Job <%s> after %ss", d.action, req.job_key, d.delay)
                self._add_delay_action(req, d)
                return
        try:
            execute(info, P.state_action(d), self.actions)
        except _FAILURES as e:
            with self._lock:
                self._handle_error(req, info, e, d.action)
            return
        with self._lock:
            self.queue.forget(req)
            if not P.is_internal_action(d.action):
                self._cleanup_delay_actions(d)

    def _batch(self, req: Request) -> None:
        """Arrange the one batched sync of ``req``'s job (caller holds the lock)."""
        key = req.job_key
        if key in self._batched:
            return
        at = self.now + self.sync_batch_period
        self._batched[key] = at
        heapq.heappush(self._batch_heap, (at, next(self._batch_seq), key))

    def _due_batched(self, now: float) -> list[Request]:
        """The batched syncs due at ``now``: a plain sync request per job, in due order."""
        out: list[Request] = []
        with self._lock:
            while self._batch_heap and self._batch_heap[0][0] <= now:
                _, _, key = heapq.heappop(self._batch_heap)
                self._batched.pop(key, None)
                ns, _, name = key.partition("/")
                out.append(Request(ns, name, event=P.OUT_OF_SYNC))
        return out

    def _handle_error(self, req: Request, info: Any, err: Exception, action: str) -> None:
        if _unavailable(err):
            logger.info("Failed to handle Job <%s>, the API server is unavailable: %s", req.job_key, err)
            self.queue.add_unavailable(req, self.now)
            return
        if self.max_requeue == -1 or self.queue.num_requeues(req) < self.max_requeue:
            logger.info("Failed to handle Job <%s>: %s", req.job_key, err)
            self.queue.add_rate_limited(req, self.now)
            return
        logger.warning("Job <%s> failed on action %s for retry limit reached; terminating it: %s",
                       req.job_key, action, err)
        try:
            execute(info, StateAction(P.TERMINATE_JOB), self.actions)
        except _FAILURES as e:
            logger.error("Failed to terminate Job <%s>: %s", req.job_key, e)

    # ================================================================== delayed actions
    def _add_delay_action(self, req: Request, d: DelayAction) -> None:
        m = self.delay_actions.setdefault(d.job_key, {})
        old = m.get(req.pod_name)
        if old is not None and old.action == d.action:
            return
        # Upstream replaces the map entry without cancelling the old timer, which still fires.
        m[req.pod_name] = d
        d.fire_at = self.now + d.delay
        d.request = req
        self._timer_order[id(d)] = next(self._timer_seq)
        self._timers.append(d)

    def _due_timers(self, now: float) -> list[DelayAction]:
        due = [d for d in self._timers if d.fire_at <= now]
        if not due:
            return []
        self._timers = [d for d in self._timers if d.fire_at > now]
        due.sort(key=lambda d: (d.fire_at, self._timer_order.get(id(d), 0)))
        for d in due:
            self._timer_order.pop(id(d), None)
        return [d for d in due if not d.cancelled]

    def _fire(self, d: DelayAction) -> None:
        if d.cancelled:
            return
        info = self.cache.get(d.job_key)
        if info is None or info.job is None:
            return
        logger.info("Job <%s>'s delayed action %s is expired, execute it", d.job_key, d.action)
        ns, _, name = d.job_key.partition("/")
        req = d.request or Request(ns, name)
        try:
            execute(info, P.state_action(d), self.actions)
        except _FAILURES as e:
            self._handle_error(req, info, e, d.action)
        self.queue.forget(req)
        self._cleanup_delay_actions(d)

    def _clean_pod_delay_actions(self, req: Request) -> None:
        """``CleanPodDelayActionsIfNeed``: a pod's later events cancel its pending delays."""
        if req.event not in P.POD_EVENTS or req.event == P.POD_PENDING:
            return
        m = self.delay_actions.get(req.job_key)
        if not m:
            return
        d = m.get(req.pod_name)
        if d is None:
            return
        cancel = d.event == P.POD_PENDING and req.pod_uid == d.pod_uid
        if d.event in (P.POD_FAILED, P.POD_EVICTED) and req.event == P.POD_RUNNING:
            cancel = True
        if cancel:
            logger.info("Cancel delayed action <%s> for pod <%s> because of event <%s>", d.action, req.pod_name,
                        req.event)
            d.cancelled = True
            del m[req.pod_name]

    def _cleanup_delay_actions(self, current: DelayAction) -> None:
        """``cleanupDelayActions``: an executed action cancels pending ones of the same scope."""
        scope = P.action_type(current.action)
        m = self.delay_actions.get(current.job_key)
        if not m:
            return
        for pod_name, d in list(m.items()):
            if P.action_type(d.action) != scope:
                continue
            if scope == "task" and d.task_name != current.task_name:
                continue
            if scope == "pod" and d.pod_name != current.pod_name:
                continue
            if scope == "partition" and d.partition != current.partition:
                continue
            d.cancelled = True
            m.pop(pod_name, None)
