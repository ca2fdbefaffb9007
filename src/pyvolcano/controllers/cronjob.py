"""The CronJob controller (``pkg/controllers/cronjob``) on the virtual clock.

A ``batch.volcano.sh/v1alpha1`` CronJob creates a Volcano Job from ``spec.jobTemplate`` at the
times of ``spec.schedule`` (robfig's ``ParseStandard``, :mod:`pyvolcano.api.cron`) in
``spec.timeZone``. One sync of a CronJob, as upstream's ``syncCronJob``:

1. **finished jobs** (its jobs are the Jobs whose controller reference names it: kind, name and
   uid): a Completed, Failed or Terminated job leaves ``status.active``; a Completed one's
   ``state.lastTransitionTime`` raises ``status.lastSuccessfulTime``; the oldest Completed and
   Failed jobs (by creation time, then name) beyond ``successfulJobsHistoryLimit`` /
   ``failedJobsHistoryLimit`` are deleted (a Terminated one is never counted, as upstream);
2. **orphans and stale references**: an active reference whose job is gone, or whose uid
   differs, is dropped;
3. ``suspend`` stops here;
4. **the time to run**: the most recent scheduled time after ``status.lastScheduleTime`` (else
   the creation time), and no earlier than ``now - startingDeadlineSeconds``, that is not after
   ``now`` (``mostRecentScheduleTime``, with upstream's arithmetic for many missed times:
   only the last one runs). None ⇒ wait for the next;
5. a time already run (its job name in ``active``, or equal to ``lastScheduleTime``) is skipped;
6. ``concurrencyPolicy``: ``Forbid`` skips the run while a job is active; ``Replace`` deletes
   the active jobs first; ``Allow`` runs alongside;
7. the job ``<cronjob>-<scheduled time in minutes since the Unix epoch>`` is created from the
   template (its labels and annotations, plus ``volcano.sh/cronjob-scheduled-timestamp``, the
   scheduled time in RFC 3339 in the CronJob's zone) with a controller owner reference; a job of
   that name that exists already is adopted if it is this CronJob's and not finished;
8. it joins ``status.active`` and the time becomes ``status.lastScheduleTime``.

The status is written (``update_status``) when any step changed it. The CronJob is then
requeued 100 ms after its next scheduled time (``nextScheduleTimeDuration``), which
:meth:`CronJobController.run` returns as its wake-up: a simulation's virtual clock jumps there.
A failed sync is retried with the work queue's back-off. Upstream's Events (``SuccessfulCreate``,
``SawCompletedJob``, ``ForbidConcurrent``, ...) are logged, not written.

A schedule's time zone is ``spec.timeZone``, else UTC (upstream: the controller's local zone).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.api.cron import CronSchedule, ScheduleError, load_location, parse_standard
from pyvolcano.api.names import CRONJOB_SCHEDULED_TIMESTAMP_KEY, JOB_API_VERSION
from pyvolcano.controllers._common import (
    WorkQueue,
    controller_of,
    controller_ref,
    meta,
    name_of,
    namespace_of,
    peek,
    spec,
    status,
    uid_of,
)
from pyvolcano.store.base import (
    EPOCH,
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

__all__ = ["NEXT_SCHEDULE_DELTA", "CronJobController", "cronjob_job_name", "next_run"]

logger = logging.getLogger(__name__)

NEXT_SCHEDULE_DELTA: Final = 0.1
"""Seconds after a scheduled time that the CronJob is synced (upstream's ``nextScheduleDelta``)."""
MANY_MISSED: Final = 100
_EPOCH_UNIX: Final = EPOCH.timestamp()
_FINISHED: Final = ("Completed", "Failed", "Terminated")


class _SyncError(Exception):
    pass


def _unix(t: float) -> float:
    return _EPOCH_UNIX + t


def _store_seconds(unix: float) -> float:
    return unix - _EPOCH_UNIX


def _next(schedule: CronSchedule, after: float) -> float | None:
    """``schedule.Next`` in store seconds."""
    found = schedule.next(_unix(after))
    return None if found is None else _store_seconds(found)


def cronjob_job_name(cronjob_name: str, scheduled: float) -> str:
    """``getJobName``: the job of the run at ``scheduled`` (store seconds)."""
    return f"{cronjob_name}-{int(_unix(scheduled) // 60)}"


def _job_phase(job: Mapping[str, Any]) -> str:
    return str((status(job).get("state") or {}).get("phase") or "")


def _is_finished(job: Mapping[str, Any]) -> bool:
    return _job_phase(job) in _FINISHED


def _time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return from_rfc3339(value)
    except ValueError:
        return None


def schedule_of(cj: Mapping[str, Any]) -> CronSchedule:
    """``validateTZandSchedule``: the CronJob's schedule in its zone; ScheduleError if either is bad."""
    sp = spec(cj)
    text = str(sp.get("schedule") or "")
    zone_name = sp.get("timeZone")
    zone = load_location(str(zone_name)) if zone_name is not None else _dt.UTC
    if "TZ" in text:  # formatSchedule: a TZ= prefix wins over timeZone (upstream warns about it)
        return parse_standard(text)
    return parse_standard(text, zone=zone)


def _most_recent(cj: Mapping[str, Any], now: float, schedule: CronSchedule,
                 with_deadline: bool) -> tuple[float, float | None, int]:
    """``mostRecentScheduleTime``: (earliest time, most recent unmet time or None, missed count).
    Raises _SyncError when two schedules are less than a second apart (or there is none)."""
    earliest = _time(meta(cj).get("creationTimestamp")) or 0.0
    last = _time(status(cj).get("lastScheduleTime"))
    if last is not None:
        earliest = last
    deadline = spec(cj).get("startingDeadlineSeconds")
    if with_deadline and isinstance(deadline, int) and not isinstance(deadline, bool):
        earliest = max(earliest, now - deadline)
    t1 = _next(schedule, earliest)
    t2 = _next(schedule, t1) if t1 is not None else None
    if t1 is not None and now < t1:
        return earliest, None, 0
    if t1 is not None and t2 is not None and now < t2:
        return earliest, t1, 0
    between = round(t2 - t1) if t1 is not None and t2 is not None else 0
    if between < 1:
        raise _SyncError("time difference between two schedules is less than 1 second")
    assert t1 is not None
    missed = int(now - t1) // between + 1
    most_recent: float | None = None
    t = _next(schedule, t1 + (missed - 2) * between)
    while t is not None and t <= now:
        most_recent = t
        t = _next(schedule, t)
    return earliest, most_recent, missed


def next_run(cj: Mapping[str, Any], now: float) -> float | None:
    """The scheduled time of the CronJob's next job (store seconds): a time that is due and not
    run yet (its job is created at once), else the next one. None when suspended, when its
    schedule or zone does not parse, or when there is no next time. ``concurrencyPolicy:
    Forbid`` may still skip that run."""
    if spec(cj).get("suspend") is True:
        return None
    try:
        schedule = schedule_of(cj)
        _earliest, due, _missed = _most_recent(cj, now, schedule, with_deadline=True)
    except (ScheduleError, _SyncError):
        return None
    if due is not None and due != _time(status(cj).get("lastScheduleTime")):
        return due
    return _requeue_at(cj, now, schedule, delta=0.0)


def _requeue_at(cj: Mapping[str, Any], now: float, schedule: CronSchedule, *,
                delta: float = NEXT_SCHEDULE_DELTA) -> float | None:
    """``nextScheduleTimeDuration``, as an absolute time."""
    try:
        earliest, recent, missed = _most_recent(cj, now, schedule, with_deadline=False)
        base = recent if recent is not None else (earliest if missed == 0 else now)
    except _SyncError:
        base = now
    nxt = _next(schedule, base)
    return None if nxt is None else nxt + delta


def _reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """``ref.GetReference``: the ObjectReference ``status.active`` holds."""
    md = meta(job)
    return {"kind": "Job", "namespace": namespace_of(job), "name": name_of(job), "uid": uid_of(job),
            "apiVersion": JOB_API_VERSION, "resourceVersion": str(md.get("resourceVersion") or "")}


def _rfc3339_in(t: float, zone: _dt.tzinfo) -> str:
    """Go's ``Format(time.RFC3339)`` of store time ``t`` in ``zone`` (``Z`` for a zero offset)."""
    local = _dt.datetime.fromtimestamp(round(_unix(t)), tz=_dt.UTC).astimezone(zone)
    offset = local.utcoffset() or _dt.timedelta(0)
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes > 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


class CronJobController:
    """Creates the jobs of ``batch.volcano.sh/v1alpha1`` CronJobs (see the module docstring)."""

    name = "cronjob-controller"
    watches = frozenset({"CronJob", "Job"})

    def __init__(self, *, store: Store):
        self.store = store
        self.queue: WorkQueue[str] = WorkQueue(dedup=True, max_delay=1000.0)
        self._cronjobs: dict[str, dict[str, Any]] = {}
        # Jobs whose controller reference is a CronJob, by CronJob key then job key.
        self._jobs: dict[str, dict[str, dict[str, Any]]] = {}
        self.now = 0.0

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "CronJob":
            self._on_cronjob(ev)
        elif ev.kind == "Job":
            self._on_job(ev)

    def _on_cronjob(self, ev: WatchEvent) -> None:
        obj = ev.object
        key = f"{namespace_of(obj)}/{name_of(obj)}"
        old = self._cronjobs.get(key)
        if ev.type == "DELETED":
            self._cronjobs.pop(key, None)
            self.queue.add(key)
            return
        self._cronjobs[key] = obj
        if ev.type == "MODIFIED" and old is not None:
            if meta(old).get("resourceVersion") == meta(obj).get("resourceVersion"):
                return
            if (spec(old).get("schedule"), spec(old).get("timeZone")) != (spec(obj).get("schedule"),
                                                                          spec(obj).get("timeZone")):
                # updateCronJob: a new schedule is synced at its next time, not now.
                try:
                    at = _requeue_at(obj, self.now, schedule_of(obj))
                except ScheduleError as e:
                    logger.info("CronJob %s: unparseable schedule %r: %s", key, spec(obj).get("schedule"), e)
                    return
                if at is not None:
                    self.queue.add_after(key, at)
                return
        self.queue.add(key)

    def _owner_key(self, job: Mapping[str, Any]) -> str | None:
        """``isControlledBy``: the key of the CronJob (kind, apiVersion, name and uid) controlling ``job``."""
        ref = controller_of(job)
        if ref is None or ref.get("kind") != "CronJob" or ref.get("apiVersion") != JOB_API_VERSION:
            return None
        key = f"{namespace_of(job)}/{ref.get('name')}"
        cj = self._cronjobs.get(key)
        return key if cj is not None and uid_of(cj) == ref.get("uid") else None

    def _on_job(self, ev: WatchEvent) -> None:
        job = ev.object
        ref = controller_of(job)
        job_key = f"{namespace_of(job)}/{name_of(job)}"
        if ref is not None and ref.get("kind") == "CronJob":
            owner = f"{namespace_of(job)}/{ref.get('name')}"
            if ev.type == "DELETED":
                self._jobs.get(owner, {}).pop(job_key, None)
            else:
                self._jobs.setdefault(owner, {})[job_key] = job
        key = self._owner_key(job)
        if key is not None:
            self.queue.add(key)
        if ev.type == "MODIFIED":  # a job whose controller changed: its former CronJob too
            for owner, jobs in self._jobs.items():
                if job_key in jobs and owner != key and (ref is None or owner != f"{namespace_of(job)}/"
                                                                                  f"{ref.get('name')}"):
                    jobs.pop(job_key, None)
                    self.queue.add(owner)
                    break

    # ------------------------------------------------------------------ work
    def run(self, now: float) -> float | None:
        self.now = now
        if self.queue.idle():
            return None
        for key in self.queue.drain(now):
            try:
                requeue_at = self._sync(key)
            except (StoreError, _SyncError, ScheduleError) as e:
                logger.info("Failed to handle CronJob <%s>: %s", key, e)
                if isinstance(e, Unavailable):
                    self.queue.add_unavailable(key, now)
                else:
                    self.queue.add_rate_limited(key, now)
                continue
            if requeue_at is not None:
                self.queue.forget(key)
                self.queue.add_after(key, requeue_at)
        return self.queue.next_wakeup()

    def _jobs_of(self, cj: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``getJobsByCronJob``: its jobs by controller reference kind, name and uid."""
        key = f"{namespace_of(cj)}/{name_of(cj)}"
        out = []
        for job in self._jobs.get(key, {}).values():
            ref = controller_of(job)
            if ref is not None and ref.get("name") == name_of(cj) and ref.get("uid") == uid_of(cj):
                out.append(job)
        return sorted(out, key=name_of)

    def _sync(self, key: str) -> float | None:
        cached = self._cronjobs.get(key)
        if cached is None or meta(cached).get("deletionTimestamp"):
            return None
        cj = clone(cached)
        jobs = self._jobs_of(cj)
        changed = self._process_finished(cj, jobs)
        changed = self._process_active(cj, jobs) or changed
        requeue_at: float | None = None
        if spec(cj).get("suspend") is not True:
            # A failure here leaves the status unwritten, as upstream's sync returns before it.
            requeue_at, ran = self._schedule(cj)
            changed = changed or ran
        if changed:
            self.store.update_status(cj)
        return requeue_at

    # ---------------------------------------------------------------- the steps
    def _process_finished(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
        changed = False
        st = cj.setdefault("status", {})
        successful: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for job in jobs:
            if not _is_finished(job):
                continue
            if self._remove_active(cj, uid_of(job)):
                logger.info("CronJob %s: saw completed job %s in active, remove", name_of(cj), name_of(job))
                changed = True
            phase = _job_phase(job)
            if phase == "Completed":
                finished = (status(job).get("state") or {}).get("lastTransitionTime")
                last, at = _time(st.get("lastSuccessfulTime")), _time(finished)
                first = st.get("lastSuccessfulTime") is None and isinstance(finished, str)
                if first or (at is not None and (last is None or at > last)):
                    st["lastSuccessfulTime"] = finished
                    changed = True
                successful.append(job)
            elif phase == "Failed":
                failed.append(job)
        sp = spec(cj)
        for kept, limit in ((successful, sp.get("successfulJobsHistoryLimit")),
                            (failed, sp.get("failedJobsHistoryLimit"))):
            if isinstance(limit, int) and not isinstance(limit, bool):
                changed = self._remove_oldest(cj, kept, limit) or changed
        return changed

    def _remove_oldest(self, cj: dict[str, Any], jobs: list[dict[str, Any]], limit: int) -> bool:
        extra = len(jobs) - limit
        if extra <= 0:
            return False

        def created(job: Mapping[str, Any]) -> tuple[float, str]:
            at = _time(meta(job).get("creationTimestamp"))
            return (at if at is not None else float("inf"), name_of(job))

        changed = False
        for job in sorted(jobs, key=created)[:extra]:
            changed = self._delete_job(cj, job) or changed
        return changed

    def _delete_job(self, cj: dict[str, Any], job: Mapping[str, Any]) -> bool:
        """``deleteJobByClient``: delete the job and drop it from ``active``; False if the delete failed."""
        try:
            self.store.delete("Job", namespace_of(job), name_of(job))
        except NotFound:
            pass  # deleted already: what was wanted
        except StoreError as e:
            logger.error("CronJob %s: error deleting job %s: %s", name_of(cj), name_of(job), e)
            return False
        self._remove_active(cj, uid_of(job))
        logger.info("CronJob %s: deleted job %s", name_of(cj), name_of(job))
        return True

    def _process_active(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
        """``processCtlJobAndActiveJob``: report orphans, drop stale active references."""
        managed = {uid_of(j) for j in jobs}
        for job in jobs:
            if not _is_finished(job) and not self._in_active(cj, uid_of(job)):
                logger.warning("CronJob %s: job %s (uid %s) is not in status.active", name_of(cj), name_of(job),
                               uid_of(job))
        changed = False
        for ref in list(status(cj).get("active") or []):
            uid = str(ref.get("uid") or "")
            if uid in managed:
                continue
            try:
                job = peek(self.store, "Job", str(ref.get("namespace") or namespace_of(cj)), str(ref.get("name")))
            except NotFound:
                logger.warning("CronJob %s: active job %s no longer exists", name_of(cj), ref.get("name"))
                self._remove_active(cj, uid)
                changed = True
                continue
            if uid_of(job) != uid:
                logger.warning("CronJob %s: active job %s has another uid", name_of(cj), ref.get("name"))
                self._remove_active(cj, uid)
                changed = True
        return changed

    def _schedule(self, cj: dict[str, Any]) -> tuple[float | None, bool]:
        """Steps 4-8: (requeue time, status changed)."""
        now = self.now
        schedule = schedule_of(cj)
        _earliest, scheduled, missed = _most_recent(cj, now, schedule, with_deadline=True)
        if scheduled is None or scheduled > now:
            return _requeue_at(cj, now, schedule), False
        if missed > MANY_MISSED:
            logger.warning("CronJob %s: too many missed start times; set or decrease startingDeadlineSeconds "
                           "or check clock skew", name_of(cj))
        name = cronjob_job_name(name_of(cj), scheduled)
        last = _time(status(cj).get("lastScheduleTime"))
        if any(r.get("name") == name and r.get("namespace") == namespace_of(cj)
               for r in status(cj).get("active") or []) or last == scheduled:
            return _requeue_at(cj, now, schedule), False
        wait, changed = self._concurrency(cj)
        if wait:
            return _requeue_at(cj, now, schedule), changed
        job = self._create_job(cj, scheduled, name)
        if job is None or self._in_active(cj, uid_of(job)):
            return _requeue_at(cj, now, schedule), changed
        st = cj.setdefault("status", {})
        st["active"] = [*(st.get("active") or []), _reference(job)]
        st["lastScheduleTime"] = to_rfc3339(scheduled)
        return _requeue_at(cj, now, schedule), True

    def _concurrency(self, cj: dict[str, Any]) -> tuple[bool, bool]:
        """``processConcurrencyPolicy``: (skip this run, status changed)."""
        policy = spec(cj).get("concurrencyPolicy")
        active = list(status(cj).get("active") or [])
        if policy == "Forbid" and active:
            logger.info("CronJob %s: skipping job creation because another job is already running", name_of(cj))
            return True, False
        if policy == "Replace" and active:
            for ref in active:
                job = self.store.get("Job", str(ref.get("namespace") or namespace_of(cj)), str(ref.get("name")))
                if not self._delete_job(cj, job):
                    raise _SyncError(f"could not replace job {namespace_of(job)}/{name_of(job)}")
            return False, True
        return False, False

    def _create_job(self, cj: Mapping[str, Any], scheduled: float, name: str) -> dict[str, Any] | None:
        """``createJob``: the new job, an adoptable existing one, or None."""
        ns = namespace_of(cj)
        template = spec(cj).get("jobTemplate") or {}
        tmd = template.get("metadata") or {}
        zone = load_location(str(spec(cj).get("timeZone") or ""))
        annotations = {**(tmd.get("annotations") or {}),
                       CRONJOB_SCHEDULED_TIMESTAMP_KEY: _rfc3339_in(scheduled, zone)}
        md: dict[str, Any] = {"name": name, "namespace": ns, "annotations": annotations,
                              "ownerReferences": [controller_ref(cj, JOB_API_VERSION, "CronJob")]}
        if tmd.get("labels"):
            md["labels"] = dict(tmd["labels"])
        job = {"apiVersion": JOB_API_VERSION, "kind": "Job", "metadata": md,
               "spec": clone(template.get("spec") or {})}
        try:
            created = self.store.create(job)
        except AlreadyExists:
            try:
                existing = self.store.get("Job", ns, name)
            except NotFound:
                raise _SyncError(f"job {name} disappeared after creation conflict") from None
            ref = controller_of(existing)
            if ref is None or ref.get("uid") != uid_of(cj):
                logger.warning("CronJob %s: job %s exists but is not owned by it", name_of(cj), name)
                return None
            return None if _is_finished(existing) else existing
        logger.info("Created job %s for CronJob %s/%s", name, ns, name_of(cj))
        return created

    @staticmethod
    def _in_active(cj: Mapping[str, Any], uid: str) -> bool:
        return bool(uid) and any(r.get("uid") == uid for r in status(cj).get("active") or [])

    @staticmethod
    def _remove_active(cj: dict[str, Any], uid: str) -> bool:
        st = status(cj)
        active = st.get("active") or []
        kept = [r for r in active if r.get("uid") != uid]
        if not uid or len(kept) == len(active):
            return False
        if kept:
            st["active"] = kept
        else:
            st.pop("active", None)
        return True
