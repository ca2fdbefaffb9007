"""tdm plugin: time-division multiplexing of revocable nodes (upstream ``pkg/scheduler/plugins/tdm/tdm.go``).

A node labelled ``volcano.sh/revocable-zone: <zone>`` belongs to that revocable zone; each zone
has a daily window, the argument ``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"``. During its
window preemptable work may use the zone's nodes; when the window closes, that work is evicted
by ``shuffle`` (the VictimTasks callback), at most so many pods per job.

* A window runs, in the scheduler's local time (``SchedulerOptions.time_zone``; the
  simulator's virtual clock starts 2024-01-01T00:00:00 UTC), from today's start to today's end,
  or to tomorrow's end when the end is not after the start; the zone is open when
  start <= now <= end, in whole seconds. ``0:00-0:00`` is thus open at every instant. A window
  that does not parse (``HH`` 0-23, ``MM`` two digits, one ``-``) is read again at every check
  and the zone is closed, as upstream.
* Predicate: a node without a zone passes; a revocable node fails
  (``UnschedulableAndUnresolvable``) when its zone is not configured or not open, or when the
  task has no revocable zone. A task's zone is ``*`` when its pod annotation
  ``volcano.sh/revocable-zone`` is ``*`` (any other value: none), else ``*`` when the annotation
  ``volcano.sh/preemptable`` parses true.
* Node order: 100 on an open revocable node for a task with a zone, else 0.
* Preemptable: a preemptable preemptor, or one with a zone, rejects; otherwise the victims are
  the Running preemptable candidates on nodes without a zone, at most N per job.
* Victims (shuffle): unless the last round was less than ``tdm.evict.period`` (default 1m)
  ago, every configured zone that is not open gives the Running preemptable pods on its nodes,
  at most N per job. With PodGroup annotation ``volcano.sh/jdb-max-unavailable``,
  N = maxUnavailable − (tasks − succeeded − failed − running), at least 0; else with
  ``volcano.sh/jdb-min-available``, N = running − minAvailable when running >= minAvailable;
  otherwise N = 1. Percentages are of the job's task count, rounded up.
* Job order: non-preemptable jobs first. JobPipelined: permit a pipelined job, reject others.
  JobStarving: a non-preemptable job with pending pods.

Invariants: the time of the last victim round is session-memo state
(``SessionMemo.plugin_state``), not a package global as upstream keeps it, so two schedulers in
one process do not share it, and a recorded session replays with it; candidates are taken in
job uid / node / task uid order where upstream walks Go maps (random), so which N pods of a job
are taken is deterministic here.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from zoneinfo import ZoneInfo

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import JDB_MAX_UNAVAILABLE_KEY, JDB_MIN_AVAILABLE_KEY, PREEMPTABLE_KEY, REVOCABLE_ZONE_KEY
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.diagnosis.model import PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.interfaces import Vote
from pyvolcano.framework.session_plugins import NodeFailures
from pyvolcano.store.base import EPOCH

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "EVICT_PERIOD", "NAME", "ZONE_PREFIX", "Tdm", "local_time", "new", "task_revocable_zone",
           "zone_open"]

NAME: Final = "tdm"
ZONE_PREFIX: Final = "tdm.revocable-zone."
EVICT_PERIOD: Final = "tdm.evict.period"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (honoured(ZONE_PREFIX, prefix=True), honoured(EVICT_PERIOD)))
DEFAULT_EVICT_PERIOD: Final = 60.0
MAX_NODE_SCORE: Final = 100.0
NOT_ALLOWED: Final = "not allow to dispatch to revocable node"
_EPOCH_UNIX: Final = EPOCH.timestamp()

_CLOCK = re.compile(r"(\d{1,2}):(\d{2})", re.ASCII)
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def local_time(now: float, time_zone: str) -> _dt.datetime:
    """``now`` (seconds after the store's epoch) as an aware time in ``time_zone`` (``UTC``, an
    IANA name or ``±HH:MM``)."""
    instant = EPOCH + _dt.timedelta(seconds=now)
    return instant.astimezone(_zone(time_zone))


def _zone(name: str) -> _dt.tzinfo:
    if name in ("", "UTC", "Z"):
        return _dt.UTC
    m = re.fullmatch(r"([+-])(\d{2}):(\d{2})", name)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return _dt.timezone(sign * _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    return ZoneInfo(name)


def _parse_clock(text: str) -> tuple[int, int] | str:
    """``time.Parse("15:04", text)``: (hour, minute), or Go's error text."""
    m = _CLOCK.match(text)
    if m is None:
        return f'parsing time "{text}" as "15:04": cannot parse "{text}" as "15"'
    hour, minute = int(m.group(1)), int(m.group(2))
    if hour > 23:
        return f'parsing time "{text}": hour out of range'
    if minute > 59:
        return f'parsing time "{text}": minute out of range'
    if m.end() != len(text):
        return f'parsing time "{text}": extra text: "{text[m.end():]}"'
    return hour, minute


def window(raw: str, now: _dt.datetime) -> tuple[_dt.datetime, _dt.datetime] | str:
    """``parseRevocableZone``: the window around ``now``'s day, or why it does not parse."""
    parts = raw.strip().split("-")
    if len(parts) != 2:
        return f"revocable zone {raw} format error"
    t1 = _parse_clock(parts[0])
    if isinstance(t1, str):
        return t1
    t2 = _parse_clock(parts[1])
    if isinstance(t2, str):
        return t2
    day = now.date()
    start = _at(day, t1, now.tzinfo)
    end = _at(day + _dt.timedelta(days=1) if t1 >= t2 else day, t2, now.tzinfo)
    return start, end


def _at(day: _dt.date, hm: tuple[int, int], tz: _dt.tzinfo | None) -> _dt.datetime:
    return _dt.datetime(day.year, day.month, day.day, hm[0], hm[1], tzinfo=tz)


def zone_open(zones: Mapping[str, str], zone: str, now: _dt.datetime) -> str | None:
    """``availableRevocableZone``: None when ``zone`` is configured and open at ``now``, else why not."""
    raw = zones.get(zone)
    if raw is None:
        return f"revocable zone {zone} not support"
    w = window(raw, now)
    if isinstance(w, str):
        return w
    start, end = w
    t = math.floor(now.timestamp())
    if t < math.floor(start.timestamp()) or t > math.floor(end.timestamp()):
        return f"current time beyond revocable zone {zone}:{raw}"
    return None


def task_revocable_zone(task: TaskInfo) -> str:
    """Upstream ``GetPodRevocableZone``: ``*`` or ``""``."""
    ann = task.pod.annotations
    if REVOCABLE_ZONE_KEY in ann:
        return "*" if ann[REVOCABLE_ZONE_KEY] == "*" else ""
    value = ann.get(PREEMPTABLE_KEY)
    return "*" if value is not None and value in _TRUE else ""


def _int_or_percent(text: str, total: int) -> int:
    """``intstr.Parse`` then ``GetValueFromIntOrPercent(..., roundUp=true)``; 0 when it is neither."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if not text.endswith("%") or not re.fullmatch(r"[+-]?\d+", text[:-1]):
        return 0
    return math.ceil(int(text[:-1]) * total / 100)


def max_evictions(job: JobInfo) -> int:
    """``getMaxPodEvictNum``: how many of ``job``'s pods one round may evict."""
    running = job.count(TaskStatus.Running)
    total = len(job.tasks)
    ann = job.podgroup.annotations if job.podgroup is not None else {}
    if JDB_MIN_AVAILABLE_KEY in ann:
        min_available = _int_or_percent(ann[JDB_MIN_AVAILABLE_KEY], total)
        if running >= min_available:
            return running - min_available
    elif JDB_MAX_UNAVAILABLE_KEY in ann:
        max_unavailable = _int_or_percent(ann[JDB_MAX_UNAVAILABLE_KEY], total)
        finished = job.count(TaskStatus.Succeeded | TaskStatus.Failed)
        unavailable = total - finished - running
        return 0 if unavailable >= max_unavailable else max_unavailable - unavailable
    return 1


class Tdm:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        raw = dict(arguments or {})
        args = Arguments(raw, keys=ARGUMENTS)
        self.zones: dict[str, str] = {}
        for key, value in raw.items():
            if ZONE_PREFIX in key:
                if not isinstance(value, str):
                    raise ArgumentError.bad(f"plugin {NAME}", key, f"got {value!r} ({type(value).__name__})",
                                            "a daily window such as '10:00-21:00'")
                self.zones[key.replace(ZONE_PREFIX, "", 1)] = value
        period = args.get_duration_seconds(EVICT_PERIOD, DEFAULT_EVICT_PERIOD)
        self.evict_period = DEFAULT_EVICT_PERIOD if period is None else period
        # This session's local time and the zone verdicts its predicate gave (the diagnosis).
        self.now: _dt.datetime | None = None
        self.zone_reasons: set[str] = set()

    def zone_error(self, zone: str, now: _dt.datetime) -> str | None:
        return zone_open(self.zones, zone, now)

    def on_session_open(self, ssn: Session) -> None:
        now = local_time(ssn.now, ssn.cache.options.time_zone)
        self.now = now
        self.zone_reasons = set()
        node_list = ssn.node_list
        # Per zone, None when open now, else why not (the time is fixed for the session).
        verdicts: dict[str, str | None] = {}

        def error_of(zone: str) -> str | None:
            if zone not in verdicts:
                verdicts[zone] = self.zone_error(zone, now)
            return verdicts[zone]

        def zone_of(i: int) -> str:
            return node_list[i].labels.get(REVOCABLE_ZONE_KEY, "")

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            has_zone = bool(task_revocable_zone(task))
            groups: dict[str, list[int]] = {}
            for pos, i in enumerate(idx.tolist()):
                zone = zone_of(i)
                if not zone:
                    continue
                err = error_of(zone)
                if err is None and has_zone:
                    continue
                if err is not None:
                    self.zone_reasons.add(err)
                groups.setdefault(err or NOT_ALLOWED, []).append(pos)
            out: NodeFailures = []
            for reason, positions in groups.items():
                mask = np.zeros(len(idx), dtype=bool)
                mask[positions] = True
                out.append((Status(Code.UnschedulableAndUnresolvable, reason), mask))
            return out

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            scores = np.zeros(len(idx), dtype=np.float64)
            if not task_revocable_zone(task):
                return scores
            for pos, i in enumerate(idx.tolist()):
                zone = zone_of(i)
                if zone and error_of(zone) is None:
                    scores[pos] = MAX_NODE_SCORE
            return scores

        # The verdict and score on a node depend on its zone label, the task's zone and which
        # zones are open now: the cache key carries the open zones, so a verdict kept from a
        # session when a window was open is not reused once it has closed.
        open_zones = tuple(sorted(z for z in self.zones if error_of(z) is None))

        def key(task: TaskInfo) -> tuple[str, tuple[str, ...]]:
            return (task_revocable_zone(task), open_zones)

        def preemptable(preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if preemptor.preemptable or task_revocable_zone(preemptor):
                return [], Vote.REJECT
            by_job: dict[str, list[TaskInfo]] = {}
            for t in candidates:
                if not t.preemptable or t.status != TaskStatus.Running:
                    continue
                node = ssn.nodes.get(t.node_name)
                if node is None or node.labels.get(REVOCABLE_ZONE_KEY, ""):
                    continue
                by_job.setdefault(t.job, []).append(t)
            victims: list[TaskInfo] = []
            for uid, tasks in by_job.items():
                job = ssn.jobs.get(uid)
                if job is not None:
                    victims.extend(tasks[: min(max_evictions(job), len(tasks))])
            return victims, Vote.PERMIT

        def victim_tasks(_tasks: list[TaskInfo]) -> list[TaskInfo]:
            state = ssn.memo.plugin_state.setdefault(NAME, {})
            last = state.get("last_evict_at")
            if last is not None and last + self.evict_period > ssn.now:
                return []
            victims: list[TaskInfo] = []
            for zone in sorted(self.zones):
                if error_of(zone) is None:
                    continue
                for uid, tasks in sorted(self._zone_preemptable(ssn, zone).items()):
                    job = ssn.jobs.get(uid)
                    if job is not None:
                        victims.extend(tasks[: min(max_evictions(job), len(tasks))])
            state["last_evict_at"] = ssn.now
            return victims

        def job_order(left: JobInfo, right: JobInfo) -> int:
            if left.preemptable == right.preemptable:
                return 0
            return 1 if left.preemptable else -1

        def job_pipelined(job: JobInfo) -> int:
            return Vote.PERMIT if job.is_pipelined() else Vote.REJECT

        def job_starving(job: JobInfo) -> bool:
            return not job.preemptable and job.count(TaskStatus.Pending) > 0

        ssn.add_predicate_fn(NAME, predicate, cache_key=key, projectable=lambda _t: True)
        ssn.add_node_order_fn(NAME, node_order, cache_key=key, projectable=lambda _t: True)
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_victim_tasks_fn(NAME, victim_tasks)
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_pipelined_fn(NAME, job_pipelined)
        ssn.add_job_starving_fn(NAME, job_starving)

    def next_wakeup(self, ssn: Session) -> float | None:
        """The next time a zone opens or closes, or a victim round comes due in a closed zone
        (``TimedPlugin``), while that could matter: a preemptable pod runs on a revocable node,
        or a pod with a revocable zone waits while a zone is closed."""
        if not self.zones:
            return None
        now = local_time(ssn.now, ssn.cache.options.time_zone)
        closed = {z for z in self.zones if self.zone_error(z, now) is not None}
        running_in: set[str] = set()
        for node in ssn.node_list:
            zone = node.labels.get(REVOCABLE_ZONE_KEY, "")
            if zone and any(t.preemptable and t.status == TaskStatus.Running for t in node.tasks.values()):
                running_in.add(zone)
        waiting = bool(closed) and not running_in and any(
            task_revocable_zone(t) for j in ssn.jobs.values() for t in j.tasks_in(TaskStatus.Pending).values())
        if not running_in and not waiting:
            return None
        candidates: list[float] = []
        day, second = _dt.timedelta(days=1), _dt.timedelta(seconds=1)
        for raw in self.zones.values():
            w = window(raw, now)
            if isinstance(w, str):
                continue
            start, end = w
            for t in (start, end + second, start + day, end + day + second):
                candidates.append(t.timestamp() - _EPOCH_UNIX)
        last = ssn.memo.plugin_state.get(NAME, {}).get("last_evict_at")
        if last is not None and running_in & closed:
            candidates.append(float(last) + self.evict_period)
        later = [t for t in candidates if t > ssn.now]
        return min(later) if later else None

    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           hist: Mapping[str, int]) -> PluginBlock | None:
        """``TDM.RevocableZoneClosed`` (the zones' windows and the local time) or ``TDM.NotRevocable``."""
        closed = sum(n for reason, n in hist.items() if reason in self.zone_reasons)
        not_allowed = hist.get(NOT_ALLOWED, 0)
        if closed + not_allowed == 0 or self.now is None:
            return None
        now = self.now
        zones = {z: {"window": raw, "open": self.zone_error(z, now) is None} for z, raw in sorted(self.zones.items())}
        figures = {"local_time": now.isoformat(), "zones": zones, "nodes_zone_closed": closed,
                   "nodes_not_revocable": not_allowed}
        if closed >= not_allowed:
            shut = ", ".join(f"{z} {v['window']}" for z, v in zones.items() if not v["open"]) or "unconfigured zones"
            hint = (f"{closed} node(s) are revocable nodes of zones closed at {now:%H:%M} ({shut}): the pod can use "
                    f"them once a window opens, or nodes without volcano.sh/revocable-zone")
            return PluginBlock(Reason.TDM_ZONE_CLOSED, f"{closed} revocable node(s) closed now", hint, plugin=NAME,
                               figures=tuple(figures.items()))
        hint = (f"{not_allowed} node(s) are revocable and the pod has no revocable zone: annotate it "
                f"volcano.sh/revocable-zone: '*' (or volcano.sh/preemptable: 'true') to let it use them")
        return PluginBlock(Reason.TDM_NOT_REVOCABLE, f"{not_allowed} node(s) are revocable", hint, plugin=NAME,
                           figures=tuple(figures.items()))

    @staticmethod
    def _zone_preemptable(ssn: Session, zone: str) -> dict[str, list[TaskInfo]]:
        """``revocableNodePreemptableTask``: Running preemptable pods on the zone's nodes, by job."""
        out: dict[str, list[TaskInfo]] = {}
        for node in ssn.node_list:
            if node.labels.get(REVOCABLE_ZONE_KEY, "") != zone:
                continue
            for _uid, t in sorted(node.tasks.items()):
                if t.preemptable and t.status == TaskStatus.Running:
                    out.setdefault(t.job, []).append(t)
        return out

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(arguments: Mapping[str, Any]) -> Tdm:
    return Tdm(arguments)
