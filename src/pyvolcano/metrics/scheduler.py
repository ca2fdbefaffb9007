"""vc-scheduler's Prometheus metrics (upstream ``pkg/scheduler/metrics``) and the session observer feeding them.

Names, label names and buckets are those of upstream's current code, subsystem ``volcano``.
Units follow the code, not older documentation: every latency is in **milliseconds**
(``volcano_action_scheduling_latency_milliseconds`` and
``volcano_plugin_scheduling_latency_milliseconds``; the ``..._microseconds`` names of old
releases no longer exist). Buckets are ``ExponentialBucketsRange(min, max, n)``:

* ``volcano_e2e_scheduling_latency_milliseconds``: (1, 5000, 20);
* ``volcano_open_session_duration_milliseconds``: (1, 5000, 20);
* ``volcano_e2e_job_scheduling_latency_milliseconds``: (100, 120000, 30);
* ``volcano_plugin_scheduling_latency_milliseconds{plugin, OnSession}``: (0.1, 100, 15);
* ``volcano_action_scheduling_latency_milliseconds{action}``: (1, 2000, 20);
* ``volcano_task_scheduling_latency_milliseconds{stage}``: (50, 60000, 30).

Counters ``volcano_schedule_attempts_total{result}``, ``volcano_eviction_transactions_total{action}``,
``volcano_job_retry_counts{job_id}`` (under exactly that name, as client_golang exports it, so
as an untyped metric: prometheus_client would add ``_total`` to a counter); gauges
``volcano_e2e_job_scheduling_duration`` / ``_start_time`` / ``_last_time`` ``{job_name, queue, job_namespace}``,
``volcano_unschedule_task_count{job_id}``, ``volcano_unschedule_job_count``,
``volcano_pod_preemption_victims``, ``volcano_job_share{job_ns, job_id}``, and per queue
(``queue_name``; scalar resources also ``resource``) ``volcano_queue_{allocated,request,
deserved,capacity,real_capacity,inqueue}_{milli_cpu,memory_bytes,scalar_resources}``,
``volcano_queue_share``, ``volcano_queue_weight``, ``volcano_queue_overused``; not upstream's, with the
``reservation`` plugin: ``volcano_reservation_start_seconds`` and ``volcano_reservation_nodes``
``{job_ns, job_id, queue_name}``.

Where upstream's plugins and actions call the metrics package in the middle of a session,
pyvolcano reads the same values once, from the session just before it closes
(:meth:`SchedulerMetrics.observe_session`): the queue gauges from the ``proportion`` or
``capacity`` plugin's queue attributes (what those plugins export at open, kept current by
allocations), the unschedulable counts with gang's own rule, per-job scheduling times for
jobs with a task allocated, bound or pipelined in the session, and job shares as ``drf``
computes them (:func:`~pyvolcano.plugins.drf_share.dominant_share`). Not exported:
``volcano_total_preemption_attempts`` (counted inside upstream's preempt loop),
``volcano_scheduling_stage_duration_milliseconds`` (per-predicate timing) and the namespace
shares of hierarchical DRF. ``volcano_schedule_attempts_total`` is registered
but no longer incremented by upstream; here it counts, per session, ``scheduled`` binds,
``unschedulable`` pending tasks and bind ``error`` s reported by the caller.

Time: ``ssn.now`` and creation timestamps are the store's seconds (relative to
:data:`~pyvolcano.store.base.EPOCH`); gauges that upstream sets to Unix seconds are converted.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.memo import close_key
from pyvolcano.framework.interfaces import CapacityStateExporter, ProportionStateExporter
from pyvolcano.metrics.buckets import exponential_buckets_range
from pyvolcano.plugins.drf_share import ShareDimensions, dominant_share, job_allocation, share_dimensions
from pyvolcano.plugins.gang import unready_task_count
from pyvolcano.store.base import EPOCH

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.framework.session import Session
    from pyvolcano.plugins.capacity.attrs import QueueAttr as CapacityQueueAttr
    from pyvolcano.runtime.cycle import SessionResult

__all__ = [
    "SCHEDULE_RESULTS",
    "QueueState",
    "SchedulerMetrics",
    "SessionMetricsObserver",
    "queue_states",
]

SUBSYSTEM: Final = "volcano"
SCHEDULE_RESULTS: Final = ("scheduled", "unschedulable", "error")
EVICTION_ACTIONS: Final = frozenset({"preempt", "reclaim", "gangpreempt", "gangreclaim"})
TASK_STAGES: Final = ("Watched", "Assumed", "PreBound", "Bound")
_EPOCH_UNIX: Final = EPOCH.timestamp()
_MS: Final = 1000.0
_PLACED: Final = TaskStatus.Allocated | TaskStatus.Binding | TaskStatus.Pipelined


class _ExactCounter(Collector):
    """A labelled counter exported under its exact name, as client_golang exports it.

    prometheus_client writes every counter as ``<name>_total``; a counter whose upstream name
    lacks the suffix is therefore exposed as an untyped metric of that exact name (queries and
    ``rate()`` work the same)."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...]):
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def remove(self, *labels: str) -> None:
        with self._lock:
            self._values.pop(labels, None)

    def value(self, *labels: str) -> float | None:
        with self._lock:
            return self._values.get(labels)

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, "unknown")
        with self._lock:
            for labels, v in sorted(self._values.items()):
                metric.add_sample(self.name, dict(zip(self.labelnames, labels)), v)
        yield metric


@dataclass(slots=True)
class _JobEntry:
    """What one job's gauges were last computed from, and the counts they gave."""

    key: tuple[object, ...]
    labels: tuple[str, str, str]  # (name, queue, namespace)
    unschedulable_tasks: int
    unready: int | None = None  # gang's count; None when gang is off or leaves the job alone
    unready_job: bool = False
    share: float | None = None  # drf's share, when drf runs
    children: list[Any] | None = None  # the job's unschedule_task_count and job_share series, once made


@dataclass(frozen=True, slots=True)
class QueueState:
    """What upstream's proportion / capacity plugins export about one queue in a session.

    A field is None when the plugin that computed the state does not export it."""

    name: str
    allocated: Resource
    request: Resource
    inqueue: Resource
    deserved: Resource | None = None
    share: float | None = None
    weight: int | None = None
    overused: bool | None = None
    capacity: Resource | None = None
    real_capacity: Resource | None = None


_RESOURCE_METRICS: Final = ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")
_RESOURCE_HELP: Final = {
    "allocated": ("Allocated CPU count for one queue", "Allocated memory for one queue",
                  "Allocated scalar resources for one queue"),
    "request": ("Request CPU count for one queue", "Request memory for one queue",
                "Request scalar resources for one queue"),
    "deserved": ("Deserved CPU count for one queue", "Deserved memory for one queue",
                 "Deserved scalar resources for one queue"),
    "capacity": ("Capacity CPU count for one queue", "Capacity memory for one queue",
                 "Capacity scalar resources for one queue"),
    "real_capacity": ("Capacity CPU count for one queue", "Capacity memory for one queue",
                      "Capacity scalar resources for one queue"),
    "inqueue": ("Inqueue CPU for admitted but not yet running jobs in one queue",
                "Inqueue memory for admitted but not yet running jobs in one queue",
                "Inqueue scalar resources for admitted but not yet running jobs in one queue"),
}


class _QueueResourceGauges:
    """The ``_milli_cpu`` / ``_memory_bytes`` / ``_scalar_resources`` triple of one queue metric.

    As upstream's ``updateScalarResourceMetrics``: a scalar resource seen before for a queue
    and absent now is set to 0, not dropped."""

    def __init__(self, what: str, registry: CollectorRegistry):
        cpu_help, mem_help, scalar_help = _RESOURCE_HELP[what]
        self.cpu = Gauge(f"queue_{what}_milli_cpu", cpu_help, ["queue_name"], namespace=SUBSYSTEM,
                         registry=registry)
        self.memory = Gauge(f"queue_{what}_memory_bytes", mem_help, ["queue_name"], namespace=SUBSYSTEM,
                            registry=registry)
        self.scalars = Gauge(f"queue_{what}_scalar_resources", scalar_help, ["queue_name", "resource"],
                             namespace=SUBSYSTEM, registry=registry)
        self._known: dict[str, set[str]] = {}

    def set(self, queue: str, r: Resource) -> None:
        self.cpu.labels(queue).set(r.milli_cpu)
        self.memory.labels(queue).set(r.memory)
        known = self._known.setdefault(queue, set())
        for name, v in r.scalars.items():
            known.add(name)
            self.scalars.labels(queue, name).set(v)
        for name in known - r.scalars.keys():
            self.scalars.labels(queue, name).set(0.0)

    def remove(self, queue: str) -> None:
        for g in (self.cpu, self.memory):
            _remove(g, queue)
        for name in self._known.pop(queue, set()):
            _remove(self.scalars, queue, name)


def _remove(metric: Gauge | Counter, *labels: str) -> None:
    with contextlib.suppress(KeyError):
        metric.remove(*labels)


class SchedulerMetrics:
    """Every vc-scheduler metric, in a registry of its own (``registry`` or a new one).

    Durations are given in seconds and recorded in the metric's unit (milliseconds). All
    methods are thread-safe (prometheus_client's metrics are)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = reg = registry if registry is not None else CollectorRegistry()
        ns = SUBSYSTEM
        self.e2e_scheduling_latency = Histogram(
            "e2e_scheduling_latency_milliseconds",
            "Duration of a single scheduling session execution in milliseconds. It covers the entire cycle from "
            "session open, action executions to session close.",
            namespace=ns, registry=reg, buckets=exponential_buckets_range(1, 5000, 20))
        self.open_session_duration = Histogram(
            "open_session_duration_milliseconds",
            "Duration of opening a scheduling session in milliseconds, including cache snapshot and session "
            "initialization.",
            namespace=ns, registry=reg, buckets=exponential_buckets_range(1, 5000, 20))
        self.e2e_job_scheduling_latency = Histogram(
            "e2e_job_scheduling_latency_milliseconds",
            "End-to-end job scheduling latency in milliseconds (histogram of per-job duration from creation to "
            "last task assumed)",
            namespace=ns, registry=reg, buckets=exponential_buckets_range(100, 120000, 30))
        job_labels = ["job_name", "queue", "job_namespace"]
        self.e2e_job_scheduling_duration = Gauge(
            "e2e_job_scheduling_duration",
            "Per-job duration from job creation to last task assumed in scheduler cache, in milliseconds",
            job_labels, namespace=ns, registry=reg)
        self.e2e_job_scheduling_start_time = Gauge(
            "e2e_job_scheduling_start_time", "E2E job scheduling start time", job_labels, namespace=ns, registry=reg)
        self.e2e_job_scheduling_last_time = Gauge(
            "e2e_job_scheduling_last_time", "E2E job scheduling last time", job_labels, namespace=ns, registry=reg)
        self.plugin_scheduling_latency = Histogram(
            "plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"], namespace=ns, registry=reg, buckets=exponential_buckets_range(0.1, 100, 15))
        self.action_scheduling_latency = Histogram(
            "action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds",
            ["action"], namespace=ns, registry=reg, buckets=exponential_buckets_range(1, 2000, 20))
        self.task_scheduling_latency = Histogram(
            "task_scheduling_latency_milliseconds",
            "Task scheduling latency from creation to various stages in milliseconds",
            ["stage"], namespace=ns, registry=reg, buckets=exponential_buckets_range(50, 60000, 30))
        self.schedule_attempts = Counter(
            "schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result"], namespace=ns, registry=reg)
        self.preemption_victims = Gauge(
            "pod_preemption_victims", "Number of selected preemption victims", namespace=ns, registry=reg)
        self.eviction_transactions = Counter(
            "eviction_transactions_total", "Total number of committed eviction transactions, by action",
            ["action"], namespace=ns, registry=reg)
        self.unschedule_task_count = Gauge(
            "unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"], namespace=ns, registry=reg)
        self.unschedule_job_count = Gauge(
            "unschedule_job_count", "Number of jobs could not be scheduled", namespace=ns, registry=reg)
        self.job_share = Gauge("job_share", "Share for one job", ["job_ns", "job_id"], namespace=ns, registry=reg)
        self.job_retry_counts = _ExactCounter(f"{ns}_job_retry_counts", "Number of retry counts for one job",
                                              ("job_id",))
        reg.register(self.job_retry_counts)
        self.queue_resources = {what: _QueueResourceGauges(what, reg) for what in _RESOURCE_METRICS}
        self.queue_share = Gauge("queue_share", "Share for one queue", ["queue_name"], namespace=ns, registry=reg)
        self.queue_weight = Gauge("queue_weight", "Weight for one queue", ["queue_name"], namespace=ns, registry=reg)
        self.queue_overused = Gauge("queue_overused", "If one queue is overused", ["queue_name"], namespace=ns,
                                    registry=reg)
        # Not upstream's: the reservation plugin's reservations (plugins/reservation.py).
        self.reservation_start = Gauge(
            "reservation_start_seconds", "Seconds until a reserved gang's start at the latest (reservation plugin)",
            ["job_ns", "job_id", "queue_name"], namespace=ns, registry=reg)
        self.reservation_nodes = Gauge(
            "reservation_nodes", "Nodes held for a reserved gang (reservation plugin)",
            ["job_ns", "job_id", "queue_name"], namespace=ns, registry=reg)
        self._reserved: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self._queues: set[str] = set()
        self._job_memo: dict[str, _JobEntry] = {}  # job uid -> what its gauges were computed from
        self._job_context: tuple[object, ...] = ()
        self._share_dims: ShareDimensions = ()

    # ------------------------------------------------------------------ upstream's update functions

    def update_e2e_duration(self, seconds: float) -> None:
        self.e2e_scheduling_latency.observe(seconds * _MS)

    def update_open_session_duration(self, seconds: float) -> None:
        self.open_session_duration.observe(seconds * _MS)

    def update_action_duration(self, action: str, seconds: float) -> None:
        self.action_scheduling_latency.labels(action).observe(seconds * _MS)

    def update_plugin_duration(self, plugin: str, on_session: str, seconds: float) -> None:
        self.plugin_scheduling_latency.labels(plugin, on_session).observe(seconds * _MS)

    def update_task_schedule_duration(self, stage: str, seconds: float) -> None:
        """Latency from a pod's creation to ``stage`` (Watched, Assumed, PreBound, Bound)."""
        if stage not in TASK_STAGES:
            raise ValueError(f"task scheduling stage {stage!r}; expected one of {', '.join(TASK_STAGES)}")
        self.task_scheduling_latency.labels(stage).observe(max(seconds, 0.0) * _MS)

    def register_schedule_attempts(self, result: str, count: int = 1) -> None:
        if result not in SCHEDULE_RESULTS:
            raise ValueError(f"schedule attempt result {result!r}; expected one of {', '.join(SCHEDULE_RESULTS)}")
        if count:
            self.schedule_attempts.labels(result).inc(count)

    def update_preemption_victims(self, victims: int) -> None:
        self.preemption_victims.set(victims)

    def register_eviction_transaction(self, action: str) -> None:
        """A committed statement with at least one eviction; other actions than upstream's four are
        ignored to keep the label bounded, as upstream does."""
        if action in EVICTION_ACTIONS:
            self.eviction_transactions.labels(action).inc()

    def update_e2e_job_scheduling(self, name: str, queue: str, namespace: str, seconds: float, now: float) -> None:
        """A job got a task placed ``seconds`` after its creation, at store time ``now``."""
        ms = max(seconds, 0.0) * _MS
        self.e2e_job_scheduling_duration.labels(name, queue, namespace).set(ms)
        self.e2e_job_scheduling_latency.observe(ms)
        self.e2e_job_scheduling_last_time.labels(name, queue, namespace).set(int(_EPOCH_UNIX + now))

    def update_queue(self, state: QueueState) -> None:
        q = state.name
        res = self.queue_resources
        res["allocated"].set(q, state.allocated)
        res["request"].set(q, state.request)
        res["inqueue"].set(q, state.inqueue)
        if state.deserved is not None:
            res["deserved"].set(q, state.deserved)
        if state.capacity is not None:
            res["capacity"].set(q, state.capacity)
        if state.real_capacity is not None:
            res["real_capacity"].set(q, state.real_capacity)
        if state.share is not None:
            self.queue_share.labels(q).set(state.share)
        if state.weight is not None:
            self.queue_weight.labels(q).set(state.weight)
        if state.overused is not None:
            self.queue_overused.labels(q).set(1.0 if state.overused else 0.0)
        with self._lock:
            self._queues.add(q)

    def delete_queue_metrics(self, queue: str) -> None:
        for g in self.queue_resources.values():
            g.remove(queue)
        for m in (self.queue_share, self.queue_weight, self.queue_overused):
            _remove(m, queue)
        with self._lock:
            self._queues.discard(queue)

    def delete_job_metrics(self, name: str, queue: str, namespace: str) -> None:
        for g in (self.e2e_job_scheduling_duration, self.e2e_job_scheduling_start_time,
                  self.e2e_job_scheduling_last_time):
            _remove(g, name, queue, namespace)
        _remove(self.unschedule_task_count, name)
        _remove(self.job_share, namespace, name)
        self.job_retry_counts.remove(name)

    # ------------------------------------------------------------------ from a session

    def observe_session(self, ssn: Session) -> None:
        """Read a session's state after its last action (see the module docstring)."""
        states = queue_states(ssn)
        for name in sorted(states):
            self.update_queue(states[name])
        with self._lock:
            gone_queues = sorted(self._queues - ssn.queues.keys()) if states else []
        for q in gone_queues:
            self.delete_queue_metrics(q)
        self._observe_jobs(ssn)
        self._observe_reservations(ssn)

    def _observe_reservations(self, ssn: Session) -> None:
        held = ssn.memo.reservations.held
        if not held and not self._reserved:
            return
        now: set[tuple[str, str, str]] = set()
        for r in held.values():
            ns, _, name = r.job.partition("/")
            labels = (ns, name, r.queue)
            now.add(labels)
            self.reservation_start.labels(*labels).set(max(r.start - ssn.now, 0.0))
            self.reservation_nodes.labels(*labels).set(len(r.nodes))
        for labels in sorted(self._reserved - now):
            _remove(self.reservation_start, *labels)
            _remove(self.reservation_nodes, *labels)
        self._reserved = now

    def _observe_jobs(self, ssn: Session) -> None:
        # A job's gauges are a function of its tasks, PodGroup and fit errors (close_key), the
        # cluster total (its DRF share) and the plugins: only jobs whose key changed since the
        # last session are recomputed, so a session with 10,000 settled jobs costs a dict scan
        # (every job from scratch, SessionMemo.incremental False).
        plugin_names = frozenset(opt.name for opt, _p in ssn.plugins)
        gang, drf = "gang" in plugin_names, "drf" in plugin_names
        total = ssn.total_resource
        context = (plugin_names, total.milli_cpu, total.memory, tuple(sorted(total.scalars.items())))
        if context != self._job_context:
            self._job_context = context
            self._job_memo = {}
            self._share_dims = share_dimensions(total)
        memo = self._job_memo
        incremental = ssn.memo.incremental
        seen: dict[str, _JobEntry] = {}
        for uid, job in ssn.jobs.items():
            pg = job.podgroup
            if pg is None:
                continue
            key = close_key(job)
            entry = memo.get(uid)
            if entry is None or entry.key != key or not incremental:
                entry = self._job_entry(ssn, job, key, entry, gang=gang, drf=drf)
            seen[uid] = entry
        unschedulable_jobs = 0
        unschedulable_tasks = 0
        for entry in seen.values():
            unschedulable_tasks += entry.unschedulable_tasks
            if entry.unready is not None and entry.unready_job:
                unschedulable_jobs += 1
                self.job_retry_counts.inc(entry.labels[0])
        if gang:
            self.unschedule_job_count.set(unschedulable_jobs)
        self.register_schedule_attempts("unschedulable", unschedulable_tasks)
        gone = [e.labels for uid, e in memo.items() if uid not in seen]
        self._job_memo = seen
        for name, queue, namespace in gone:
            self.delete_job_metrics(name, queue, namespace)

    def _job_entry(self, ssn: Session, job: JobInfo, key: tuple[object, ...], old: _JobEntry | None, *,
                   gang: bool, drf: bool) -> _JobEntry:
        labels = (job.name, job.queue, job.namespace)
        if old is None or old.labels != labels:
            if old is not None:
                self.delete_job_metrics(*old.labels)
            self.e2e_job_scheduling_start_time.labels(*labels).set(int(_EPOCH_UNIX + job.creation_timestamp))
            children: list[Any] = [None, None]
        else:
            assert old.children is not None
            children = old.children
        if job.count(_PLACED):
            self.update_e2e_job_scheduling(*labels, ssn.now - job.creation_timestamp, ssn.now)
        ready = job.is_ready()
        pending = sum(1 for t in job.tasks_in(TaskStatus.Pending).values() if not t.sch_gated)
        entry = _JobEntry(key, labels, pending if ready else pending + job.count(TaskStatus.Allocated),
                          children=children)
        if gang and job.tasks:
            entry.unready = 0 if ready else unready_task_count(job)
            entry.unready_job = not ready
            if entry.unready is not None and (children[0] is None or old is None or old.unready != entry.unready):
                if children[0] is None:
                    children[0] = self.unschedule_task_count.labels(job.name)
                children[0].set(entry.unready)
        if drf:
            entry.share = dominant_share(job_allocation(job), self._share_dims)[1]
            if children[1] is None or old is None or old.share != entry.share:
                if children[1] is None:
                    children[1] = self.job_share.labels(job.namespace, job.name)
                children[1].set(entry.share)
        return entry

    def observe_result(self, result: SessionResult) -> None:
        """Count a session's binds as ``scheduled`` attempts."""
        self.register_schedule_attempts("scheduled", len(result.binds))


# ----------------------------------------------------------------------------- queue state


def queue_states(ssn: Session) -> dict[str, QueueState]:
    """Each queue's exported state from the session's ``capacity`` or ``proportion`` plugin
    (the first of them configured); empty when neither runs."""
    for opt, plugin in ssn.plugins:
        if opt.name == "proportion":
            return _proportion_states(ssn, plugin.queue_opts if isinstance(plugin, ProportionStateExporter) else {})
        if opt.name == "capacity":
            attrs, hierarchy = plugin.queue_attrs() if isinstance(plugin, CapacityStateExporter) else ({}, False)
            return _capacity_states(ssn, attrs, hierarchy=hierarchy)
    return {}


def _proportion_states(ssn: Session, attrs: Mapping[str, Any]) -> dict[str, QueueState]:
    # Upstream proportion: allocated/request/inqueue/weight at open, deserved after water-filling,
    # share on every change, overused (deserved <= allocated) when asked; queues without jobs: zeros.
    out: dict[str, QueueState] = {}
    for name in ssn.queues:
        attr = attrs.get(name)
        if attr is None:
            out[name] = QueueState(name, Resource(), Resource(), Resource())
            continue
        out[name] = QueueState(
            name, attr.allocated, attr.request, attr.inqueue, deserved=attr.deserved, share=attr.share,
            weight=attr.weight, overused=attr.deserved.less_equal(attr.allocated, DimensionDefault.ZERO))
    return out


def _capacity_states(ssn: Session, attrs: Mapping[str, CapacityQueueAttr], *, hierarchy: bool) -> dict[str, QueueState]:
    # Upstream capacity: deserved/allocated/request/inqueue/realCapability per queue, capability
    # when the queue sets one (always in hierarchical mode), overused = share > 1 at close;
    # queues without attributes report their spec's deserved and capability and a real
    # capability of (total - all guarantees) + own guarantee, capped by the capability.
    out: dict[str, QueueState] = {}
    total_guarantee: Resource | None = None
    for name, queue in ssn.queues.items():
        attr = attrs.get(name)
        if attr is not None:
            out[name] = QueueState(
                name, attr.allocated, attr.request, attr.inqueue, deserved=attr.deserved, share=attr.share,
                overused=attr.share > 1, real_capacity=attr.real_capability,
                capacity=attr.capability if hierarchy or queue.capability() is not None else None)
            continue
        if total_guarantee is None:
            total_guarantee = _sum(q.guarantee() for q in ssn.queues.values())
        capability = queue.capability()
        real = ssn.total_resource.exceeded_part(total_guarantee).add(queue.guarantee() or Resource())
        if capability is not None:
            real.min_dimension(capability, DimensionDefault.INFINITY)
        out[name] = QueueState(name, Resource(), Resource(), Resource(), deserved=queue.deserved() or Resource(),
                               capacity=capability, real_capacity=real)
    return out


def _sum(resources: Iterable[Resource | None]) -> Resource:
    total = Resource()
    for r in resources:
        if r is not None:
            total.add(r)
    return total


# ----------------------------------------------------------------------------- the observer


class SessionMetricsObserver:
    """A :class:`~pyvolcano.framework.observer.SessionObserver` that records into :class:`SchedulerMetrics`.

    ``timer`` is the monotonic clock the durations are measured with. Pass the same observer
    to every session: ``run_once(cache, ..., observer=obs)``; time the whole session around
    that call and give it to :meth:`SchedulerMetrics.update_e2e_duration`."""

    def __init__(self, metrics: SchedulerMetrics, timer: Callable[[], float] = time.perf_counter):
        self.metrics = metrics
        self._timer = timer

    def timer(self) -> float:
        return self._timer()

    def session_opened(self, seconds: float) -> None:
        self.metrics.update_open_session_duration(seconds)

    def plugin_done(self, plugin: str, on_session: str, seconds: float) -> None:
        self.metrics.update_plugin_duration(plugin, on_session, seconds)

    def action_done(self, action: str, seconds: float) -> None:
        self.metrics.update_action_duration(action, seconds)

    def evictions_committed(self, reason: str, victims: int) -> None:
        self.metrics.register_eviction_transaction(reason)
        if reason == "preempt":
            self.metrics.update_preemption_victims(victims)

    def session_closing(self, ssn: Session) -> None:
        self.metrics.observe_session(ssn)
