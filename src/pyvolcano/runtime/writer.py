"""Writing a session's decisions to a store (upstream's cache ``Bind``/``Evict`` and jobUpdater).

One :class:`DecisionWriter` turns a :class:`~pyvolcano.runtime.cycle.SessionResult` into
store writes, for the live scheduler and the simulator alike:

* **binds**: the cache already holds the pod as bound (upstream's "assumed" pod); a bind the
  store refuses (a 409 because the pod is bound already, a deleted pod, a node gone) is
  queued in :meth:`take_failures`, and the owner re-reads the pod so that the assumption is
  dropped and the pod is scheduled again. A ``Scheduled`` Event on the pod when it succeeds;
* **pre-bind steps** (:mod:`pyvolcano.framework.prebind`): a bind request's steps run, in
  order, before the pod's bind; when one fails, or the bind after them, the steps done are
  rolled back in reverse order, the pod gets a ``FailedScheduling`` Event naming the plugin
  and the reason, the bind counts as refused, and the objects the steps name are queued in
  :meth:`take_stale` for the owner to re-read;
* **evictions**: pod deletions (a refused one is queued like a refused bind), with an
  ``Evict`` Event on the pod's PodGroup;
* **nominations**: ``status.nominatedNodeName`` of pipelined pods;
* **PodGroup status**, only for the PodGroups whose status the session changed, with an
  ``Unschedulable`` (Warning) or ``Scheduled`` Event; all of them are written before
  :meth:`write` returns, so that two sessions' writes of one PodGroup never race. A status the
  API server refused for any reason but the PodGroup being gone (it is unavailable, or a
  restarted API server answers ``403`` until its authorizer has synced) is written again, as
  the cache then holds it, with the next session's writes until one is accepted: the session
  only writes what changed, so a refused write would otherwise leave the API's status behind
  the cache's for good;
* **pending pods' ``PodScheduled=False`` condition** (upstream ``taskUnschedulable``), when its
  reason or message differs from the one this writer last wrote, or, for a pod it has not
  written (after a restart, or once the pod left the pending set and came back), from the
  one the store held when the pod was last read (upstream's ``podConditionHaveUpdate``), with
  a ``FailedScheduling`` Event; a condition the API server refused (but for a pod that is
  gone) is forgotten as written, so the next session sends it again.

**One difference from upstream, in the live scheduler only** (``carry_scheduled``): a PodGroup
status whose one news is gang's ``Scheduled`` condition (still ``Inqueue``, no
``Unschedulable`` condition, no pod of it bound, running or finished: its pods are being
bound) is not written by itself; it goes with the next session's writes, in the same request
as the status that session gives the PodGroup (``Running`` once its pods are bound), or alone
then if that session changes nothing. Upstream writes it at once and again a second later;
what the API server holds after the next session is the same, and the condition shows one
session later (docs/differences.md). A single-pod job's PodGroup gets three status writes
instead of four.

**A second, also live only** (``hold_arriving``): the pending pods of a gang whose own pods are
still being created (fewer pods than its ``minMember``, and more than at the previous
session, or seen for the first time) get no ``PodScheduled=False`` condition (nor its
``FailedScheduling`` Event) in that session. Upstream writes one to every pending pod of
such a gang in every session, each time with new counts ("3/500 tasks in gang
unschedulable: pod group is not ready, 120 Pending, 500 minAvailable"), which a gang
created over a few seconds pays for with about one pod write per pod. Once no pod arrived
for a session (the gang is whole, or its creation stalled), its pending pods get upstream's
condition; a gang bound as it becomes whole never gets one, as with upstream once its
pods are bound (``PodScheduled=True``). The PodGroup's ``Unschedulable`` condition is
written as upstream's.

A pipelined pod's ``status.nominatedNodeName`` is sent when the session changed it; through
:meth:`DecisionWriter.write` (the live scheduler's) in the same request as the pod's condition
when that is written too, as upstream's ``taskUnschedulable`` writes both in one status
update. Nominations and Events are best effort, as upstream's.

How writes are carried out is the owner's choice and the only difference between owners:
``submit`` runs one write (the live scheduler hands it to its bind workers, the simulator runs
it at once) and ``write_all`` runs a batch and returns when all are
done (the live scheduler's 16 status workers). Events go to an optional sink with
:class:`~pyvolcano.kube.events.EventRecorder`'s ``event`` method.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pyvolcano.api.job import JobInfo
from pyvolcano.api.objects import PodGroup, unschedulable_condition
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import podgroup_status
from pyvolcano.framework.prebind import BindTarget, ObjectKey, PreBindError, PreBindStep
from pyvolcano.kube.events import ObjectRef
from pyvolcano.runtime.cycle import BindRequest, SessionResult
from pyvolcano.store.base import NotFound, Store, StoreError, to_rfc3339

__all__ = ["DecisionWriter", "EventSink", "run_all_now", "run_now"]

logger = logging.getLogger(__name__)

_PODGROUP_API = "scheduling.volcano.sh/v1beta1"
_UNSCHEDULED_PHASES = ("Pending", "Inqueue", "Unknown")

Write = Callable[[], None]


class EventSink(Protocol):
    """Where Events go (:class:`~pyvolcano.kube.events.EventRecorder`)."""

    def event(self, regarding: ObjectRef, type_: str, reason: str, note: str, action: str = "Scheduling") -> None: ...


def run_now(write: Write) -> None:
    """The synchronous ``submit``: the write is done when it returns."""
    write()


def run_all_now(writes: Sequence[Write]) -> None:
    """The synchronous ``write_all``."""
    for write in writes:
        write()


def _pod_ref(ns: str, name: str, uid: str) -> ObjectRef:
    return ObjectRef("Pod", "v1", ns, name, uid)


def _podgroup_ref(pg: PodGroup) -> ObjectRef:
    return ObjectRef("PodGroup", _PODGROUP_API, pg.namespace, pg.name, pg.uid)


_WAITING = (TaskStatus.Pending, TaskStatus.Allocated, TaskStatus.Pipelined)


def _has_waiting_tasks(job: JobInfo) -> bool:
    """Whether ``job`` has a pod that can carry a PodScheduled=False condition (reads only what
    moves the job's mutation counter: its PodGroup and its tasks' statuses)."""
    return job.podgroup is not None and job.count(TaskStatus.Pending | TaskStatus.Allocated | TaskStatus.Pipelined) > 0


def _only_scheduled(pg: PodGroup) -> bool:
    """Whether ``pg``'s status is gang's ``Scheduled`` condition on an ``Inqueue`` PodGroup none
    of whose pods is bound, running or finished: what a session writes while the pods bind."""
    if pg.phase != "Inqueue" or pg.running or pg.succeeded or pg.failed:
        return False
    scheduled = False
    for c in pg.conditions:
        if c.status != "True":
            continue
        if c.type == "Unschedulable":
            return False
        scheduled = scheduled or c.type == "Scheduled"
    return scheduled


class DecisionWriter:
    def __init__(self, store: Store, cache: SchedulerCache, *, clock: Callable[[], float],
                 events: EventSink | None = None, submit: Callable[[Write], object] = run_now,
                 write_all: Callable[[Sequence[Write]], None] = run_all_now, quiet: bool = False,
                 carry_scheduled: bool = False, hold_arriving: bool = False):
        self.store = store
        self.cache = cache
        self.clock = clock
        self.events = events
        self.submit = submit
        self.write_all = write_all
        # quiet: refused writes and evictions are logged at debug level (the simulator's).
        self._warn = logging.DEBUG if quiet else logging.WARNING
        self._info = logging.DEBUG if quiet else logging.INFO
        self.binds_sent = 0
        self.binds_failed = 0
        self._failures: queue.SimpleQueue[tuple[str, str, str]] = queue.SimpleQueue()
        self._stale: queue.SimpleQueue[ObjectKey] = queue.SimpleQueue()
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._pod_conditions: dict[str, tuple[str, str]] = {}  # pod uid -> (reason, message) written
        self._unwritten_conditions: queue.SimpleQueue[tuple[str, tuple[str, str]]] = queue.SimpleQueue()
        self._unwritten_podgroups: set[str] = set()  # "ns/name" of PodGroups whose status was refused
        self.carry_scheduled = carry_scheduled
        self._carried: set[str] = set()  # "ns/name" of PodGroups whose Scheduled-only status waits a session
        self.podgroups_carried = 0
        self.hold_arriving = hold_arriving
        self._gang_sizes: dict[str, int] = {}  # job uid -> pods at the last session, for gangs short of their own
        self.conditions_held = 0
        self._unwritten_lock = threading.Lock()

    def write(self, result: SessionResult) -> None:
        """Everything the session decided: :meth:`write_decisions`, then :meth:`write_pod_conditions`
        with the session's nominations, so that a pod whose condition and nomination both
        changed gets them in one request, as upstream's ``taskUnschedulable`` sends them."""
        self.write_decisions(result, nominations=False)
        self.write_pod_conditions(result.nominated)

    def write_decisions(self, result: SessionResult, *, nominations: bool = True) -> None:
        """Binds, evictions, nominations (unless ``nominations`` is False: the caller passes them
        to :meth:`write_pod_conditions`) and the changed PodGroups' status."""
        for b in result.bind_requests:
            self._submit_bind(b)
        if result.evict_requests:
            tasks = self._tasks_by_name() if self.events is not None else {}
            for ns, name, reason in result.evict_requests:
                logger.log(self._info, "evicting %s/%s: %s", ns, name, reason)
                self.submit(functools.partial(self._evict, ns, name))
                if self.events is not None:
                    self._evict_event(tasks.get((ns, name)), reason)
        if nominations:
            self._write_nominations(result.nominated)
        podgroups = list(result.changed_podgroups)
        with self._unwritten_lock:
            retry, self._unwritten_podgroups = self._unwritten_podgroups, set()
        last_carried, self._carried = self._carried, set()
        retry |= last_carried
        if self.carry_scheduled:  # never twice in a row: a status waits one session at most
            carried = {pg.key for pg in podgroups if _only_scheduled(pg) and pg.key not in last_carried}
            if carried:
                self._carried = carried
                self.podgroups_carried += len(carried)
                podgroups = [pg for pg in podgroups if pg.key not in carried]
                retry -= carried
        if retry:
            retry -= {pg.key for pg in podgroups}
            for uid in sorted(retry):
                job = self.cache.pg_jobs.get(uid)
                if job is not None and job.podgroup is not None:
                    podgroups.append(job.podgroup)
        self.write_all([functools.partial(self._write_podgroup, pg) for pg in podgroups])

    @property
    def unwritten_podgroups(self) -> int:
        """PodGroups whose last status write the API server could not take."""
        with self._unwritten_lock:
            return len(self._unwritten_podgroups)

    def take_failures(self) -> list[tuple[str, str, str]]:
        """The refused binds and evictions since the last call: (namespace, name, why)."""
        out = []
        while True:
            try:
                out.append(self._failures.get_nowait())
            except queue.Empty:
                return out

    def take_stale(self) -> list[ObjectKey]:
        """Objects (kind, namespace, name) whose cached state a failed bind's pre-bind steps had
        assumed since the last call: the owner re-reads them from the store."""
        out = []
        while True:
            try:
                out.append(self._stale.get_nowait())
            except queue.Empty:
                return out

    @property
    def inflight_binds(self) -> int:
        with self._inflight_lock:
            return self._inflight

    # ------------------------------------------------------------------ binds and evictions
    def _submit_bind(self, b: BindRequest) -> None:
        with self._inflight_lock:
            self._inflight += 1
        self.binds_sent += 1
        self.submit(functools.partial(self._bind, b))

    def _bind(self, b: BindRequest) -> None:
        done: list[PreBindStep] = []
        try:
            if b.pre_binds:
                target = BindTarget(b.namespace, b.name, b.uid, b.node)
                for step in b.pre_binds:
                    step.binder.pre_bind(self.store, target, step.extension)
                    done.append(step)
            self.store.bind(b.namespace, b.name, b.node, annotations=b.annotations or None)
            if self.events is not None:
                self.events.event(_pod_ref(b.namespace, b.name, b.uid), "Normal", "Scheduled",
                                  f"Successfully assigned {b.namespace}/{b.name} to {b.node}", action="Binding")
        except Exception as e:  # a refusal, or transport trouble: drop the assumption all the same
            self.binds_failed += 1
            failed = b.pre_binds[len(done)] if len(done) < len(b.pre_binds) else None
            why = (f'running PreBind plugin "{failed.binder.name}": {e}' if failed is not None
                   else f"binding to {b.node}: {e}")
            refused = isinstance(e, (StoreError, PreBindError))
            logger.log(self._warn, "bind %s/%s to %s %s: %s", b.namespace, b.name, b.node,
                       "refused" if refused else "failed", why if b.pre_binds else e)
            if b.pre_binds:
                self._roll_back(b, done, why)
            self._failures.put((b.namespace, b.name, why if b.pre_binds else str(e)))
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    def _roll_back(self, b: BindRequest, done: list[PreBindStep], why: str) -> None:
        """Undo the pre-bind steps ``done`` in reverse order, queue every step's stale objects
        for the owner to re-read, and tell the pod why it was not bound."""
        target = BindTarget(b.namespace, b.name, b.uid, b.node)
        for step in reversed(done):
            try:
                step.binder.rollback(self.store, target, step.extension)
            except Exception as e:  # a rollback is best effort: the re-read drops the assumption
                logger.log(self._warn, "rollback of %s for %s/%s failed: %s", step.binder.name, b.namespace,
                           b.name, e)
        for step in b.pre_binds:
            for key in step.binder.stale(step.extension):
                self._stale.put(key)
        if self.events is not None:
            self.events.event(_pod_ref(b.namespace, b.name, b.uid), "Warning", "FailedScheduling", why,
                              action="Binding")

    def _evict(self, ns: str, name: str) -> None:
        try:
            self.store.delete("Pod", ns, name)
        except StoreError as e:
            logger.log(self._warn, "evict %s/%s failed: %s", ns, name, e)
            self._failures.put((ns, name, str(e)))

    def _write_nominations(self, nominated: Mapping[str, str]) -> None:
        for key, node in nominated.items():
            ns, name = key.split("/", 1)
            self.submit(functools.partial(self._nominate, ns, name, node))

    def _nominate(self, ns: str, name: str, node: str) -> None:
        with contextlib.suppress(StoreError):
            self.store.patch("Pod", ns, name, {"status": {"nominatedNodeName": node}}, subresource="status")

    def _tasks_by_name(self) -> dict[tuple[str, str], TaskInfo]:
        out: dict[tuple[str, str], TaskInfo] = {}
        for t in self.cache.tasks.values():
            out.setdefault((t.namespace, t.name), t)
        return out

    def _evict_event(self, task: TaskInfo | None, reason: str) -> None:
        assert self.events is not None
        if task is None:
            return
        job = self.cache.jobs.get(task.job) if task.job else None
        pg = None if job is None else job.podgroup
        if pg is not None:
            self.events.event(_podgroup_ref(pg), "Normal", "Evict", reason, action="Preempting")

    # ------------------------------------------------------------------ PodGroup status
    def _write_podgroup(self, pg: PodGroup) -> None:
        status = podgroup_status(pg)
        try:
            self.store.patch("PodGroup", pg.namespace, pg.name, {"status": status}, subresource="status")
        except StoreError as e:
            logger.log(self._warn, "PodGroup %s/%s status not written: %s", pg.namespace, pg.name, e)
            if not isinstance(e, NotFound):
                with self._unwritten_lock:
                    self._unwritten_podgroups.add(pg.key)
        if self.events is None:
            return
        if pg.phase in _UNSCHEDULED_PHASES:
            for c in pg.conditions:
                if c.type == "Unschedulable" and c.status == "True":
                    self.events.event(_podgroup_ref(pg), "Warning", "Unschedulable", c.message)
        elif pg.phase == "Running":
            self.events.event(_podgroup_ref(pg), "Normal", "Scheduled", "pod group is ready")

    # ------------------------------------------------------------------ pod conditions
    def write_pod_conditions(self, nominated: Mapping[str, str] | None = None) -> None:
        """Pending pods get upstream's PodScheduled=False condition (and a
        FailedScheduling event) when its reason or message changed (``taskUnschedulable``):
        since this writer wrote it, or, for a pod it has not written, since the store's.
        ``nominated`` (pod key -> node): nominations to send, each in the same request as its
        pod's condition when that is written, alone otherwise."""
        nominations = dict(nominated or {})
        seen: set[str] = set()
        written = self._pod_conditions
        while True:
            try:
                uid, refused = self._unwritten_conditions.get_nowait()
            except queue.Empty:
                break
            if written.get(uid) == refused:
                del written[uid]
        # every job's, as upstream's RecordJobStatusEvent: a Running job's pods beyond its
        # minMember that wait get the condition too
        # The jobs with waiting tasks, kept by the memo's change feed (every job from scratch).
        sizes, last_sizes = {}, self._gang_sizes
        for job in self.cache.memo.select("writer/waiting", _has_waiting_tasks, self.cache.pg_jobs):
            if self.hold_arriving and len(job.tasks) < job.min_available:
                size = sizes[job.uid] = len(job.tasks)
                if size > last_sizes.get(job.uid, 0):  # its own pods are still arriving
                    self.conditions_held += job.count(TaskStatus.Pending | TaskStatus.Allocated
                                                      | TaskStatus.Pipelined)
                    continue
            for status in _WAITING:
                for task in job.tasks_in(status).values():
                    if task.sch_gated:
                        continue
                    want = unschedulable_condition(task.pod.conditions)
                    if want is None:
                        continue
                    seen.add(task.uid)
                    last = written.get(task.uid)
                    if last is None:
                        # Not written by this writer (it restarted, or the pod left and came
                        # back): the store's condition is the one to compare with.
                        last = task.pod.stored_unschedulable
                    if last == want:
                        written[task.uid] = want
                        continue
                    written[task.uid] = want
                    self.submit(functools.partial(self._patch_condition, task.namespace, task.name, task.uid, want,
                                                  nominations.pop(task.key, "")))
                    if self.events is not None:
                        self.events.event(_pod_ref(task.namespace, task.name, task.uid), "Warning",
                                          "FailedScheduling", want[1])
        self._gang_sizes = sizes
        for uid in [u for u in written if u not in seen]:
            del written[uid]
        self._write_nominations(nominations)

    def _patch_condition(self, ns: str, name: str, uid: str, want: tuple[str, str], node: str = "") -> None:
        cond = {"type": "PodScheduled", "status": "False", "reason": want[0], "message": want[1],
                "lastTransitionTime": to_rfc3339(self.clock())}
        status: dict[str, Any] = {"conditions": [cond]}
        if node:
            status["nominatedNodeName"] = node
        try:
            self.store.patch("Pod", ns, name, {"status": status}, subresource="status")
        except NotFound:
            pass  # the pod is gone
        except StoreError:
            self._unwritten_conditions.put((uid, want))
