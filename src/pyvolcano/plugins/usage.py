"""usage plugin: node CPU and memory load as filter and score (upstream ``pkg/scheduler/plugins/usage``).

Node load comes from the configuration's ``metrics`` section (:mod:`pyvolcano.conf.metrics`):
the live scheduler collects it from Prometheus (:mod:`pyvolcano.metrics.source`), the
simulator derives it from the running pods' requests (:mod:`pyvolcano.simulator.node_load`);
both put it on the cache (``SchedulerCache.node_usage``), as upstream's cache does. The
figures are the 10-minute averages in percent; they count as fresh for 5 minutes after their
collection, and a node without fresh figures is neither filtered nor scored.

* Predicate: a node whose CPU load exceeds ``thresholds.cpu`` (default 80) fails with
  ``the CPU load of the node exceeds the upper limit.``, one whose memory load exceeds
  ``thresholds.mem`` (80) with ``the memory load of the node exceeds the upper limit.``, both
  ``UnschedulableAndUnresolvable``.
* Node order: ``((1 − cpu) × cpu.weight + (1 − mem) × memory.weight) / (cpu.weight + memory.weight)
  × 100 × usage.weight`` (defaults 1, 1, 5), where ``cpu`` and ``mem`` are the node's composite
  utilisation: the measured load plus a *shadow* estimate of the pods the metrics cannot show
  yet (placed in this session, Allocated/Binding/Bound, or Running for less than
  ``metrics.interval``), over the node's capacity, capped at 1.
* The shadow estimate of a pod (``estimator`` arguments): ``(request × request_ratio + (limit −
  request) × burst_ratio) × risk``, within [0, limit] (the limit defaults to the request); a
  BestEffort pod counts ``be_cpu`` (250m) and ``be_mem`` (200Mi) × risk. ``risk`` is
  ``risk_factor`` (1.2) once the node's weighted composite load reaches ``risk_threshold``
  (0.6), else 1. Defaults: ``request_ratio`` 0.7, ``burst_ratio`` 0.

Out-of-range argument values keep the default, as upstream (weights below 0, thresholds outside
0..100, ratios outside 0..1, ``risk_factor`` below 1); values of the wrong type are errors.

Invariants: no wall clock (``ssn.now``; a pod's ``status.startTime`` is read as manifests'
timestamps are, and compared with the session's time); the shadow estimates are session state, rebuilt at every
session open and kept by the allocate events with the snapshot of each pod's estimate, so a
deallocation subtracts exactly what was added. The verdict on a node depends on the load the
collector last set, so its cache key carries a digest of which nodes the load blocks.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.node_usage import NODE_METRICS_PERIOD, NodeUsage
from pyvolcano.api.objects import Container
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus, pod_resource_request
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.conf.metrics import read_metrics
from pyvolcano.diagnosis.model import PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.framework.session_plugins import NodeFailures

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "CPU_EXCEEDED", "MEMORY_EXCEEDED", "METRICS_ACTIVE_SECONDS", "NAME", "Usage", "new"]

NAME: Final = "usage"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", tuple(honoured(k) for k in (
    "usage.weight", "cpu.weight", "memory.weight", "thresholds", "estimator")))
_THRESHOLD_FIELDS: Final = ("cpu", "mem")
_ESTIMATOR_FIELDS: Final = ("request_ratio", "burst_ratio", "risk_threshold", "risk_factor", "be_cpu", "be_mem")
CPU_EXCEEDED: Final = "the CPU load of the node exceeds the upper limit."
MEMORY_EXCEEDED: Final = "the memory load of the node exceeds the upper limit."
METRICS_ACTIVE_SECONDS: Final = 300.0
MAX_NODE_SCORE: Final = 100.0
_SHADOW_STATUSES: Final = TaskStatus.Allocated | TaskStatus.Binding | TaskStatus.Bound


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    usage_weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    cpu_threshold: float = 80.0
    mem_threshold: float = 80.0
    request_ratio: float = 0.7
    burst_ratio: float = 0.0
    risk_threshold: float = 0.6
    risk_factor: float = 1.2
    be_cpu: float = 250.0  # milli-CPU
    be_memory: float = float(200 * 1024 * 1024)


def _settings(raw: Mapping[str, Any]) -> Settings:
    args = Arguments(raw, keys=ARGUMENTS)
    d = Settings()
    values: dict[str, Any] = {}
    for key, field, default in (("usage.weight", "usage_weight", d.usage_weight),
                                ("cpu.weight", "cpu_weight", d.cpu_weight),
                                ("memory.weight", "memory_weight", d.memory_weight)):
        v = args.get_int(key, default)
        values[field] = v if v >= 0 else default
    thresholds = args.get_mapping("thresholds")
    if thresholds is not None:
        _known_fields("thresholds", thresholds, _THRESHOLD_FIELDS)
        t = Arguments(thresholds, owner=f"plugin {NAME}", within="thresholds")
        for key, field, limit in (("cpu", "cpu_threshold", d.cpu_threshold),
                                  ("mem", "mem_threshold", d.mem_threshold)):
            percent = t.get_int(key, int(limit))
            values[field] = float(percent) if 0 <= percent <= 100 else limit
    estimator = args.get_mapping("estimator")
    if estimator is not None:
        _known_fields("estimator", estimator, _ESTIMATOR_FIELDS)
        e = Arguments(estimator, owner=f"plugin {NAME}", within="estimator")
        for key, field, fallback, lo, hi in (("request_ratio", "request_ratio", d.request_ratio, 0.0, 1.0),
                                            ("burst_ratio", "burst_ratio", d.burst_ratio, 0.0, 1.0),
                                            ("risk_threshold", "risk_threshold", d.risk_threshold, 0.0, 1.0),
                                            ("risk_factor", "risk_factor", d.risk_factor, 1.0, float("inf"))):
            ratio = e.get_float(key, fallback)
            values[field] = ratio if lo <= ratio <= hi else fallback
        values["be_cpu"] = _best_effort(estimator.get("be_cpu"), d.be_cpu, milli=True)
        values["be_memory"] = _best_effort(estimator.get("be_mem"), d.be_memory, milli=False)
    return dataclasses.replace(d, **values)


def _known_fields(path: str, value: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    """A nested field upstream does not read is refused (a typo), as the other nested settings."""
    for key in value:
        if key not in fields:
            raise ArgumentError.bad(f"plugin {NAME}", f"{path}.{key}", "unknown field", f"one of {', '.join(fields)}")


def _best_effort(value: Any, default: float, *, milli: bool) -> float:
    """Upstream ``parseBestEffortCPU`` / ``parseBestEffortMemory``: an int (milli-CPU, or MiB for
    memory) or a quantity string; anything else, or a negative value, keeps the default."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            return default
        return float(value) if milli else float(value) * 1024 * 1024
    if isinstance(value, str):
        try:
            q = parse_quantity(value)
        except QuantityError:
            return default
        if q < 0:
            return default
        return float(q * 1000) if milli else float(q)
    return default


def composite(real_percent: float, shadow: float, capacity: float) -> float:
    """``CalcCompositeUtilization``: (measured + estimated) over capacity, within [0, 1]."""
    if capacity <= 0:
        return 0.0
    value = (real_percent / 100.0 * capacity + shadow) / capacity
    return min(max(value, 0.0), 1.0)


def weighted(cpu: float, mem: float, cpu_weight: int, mem_weight: int) -> float:
    total = cpu_weight + mem_weight
    return 0.0 if total == 0 else (cpu * cpu_weight + mem * mem_weight) / total


def estimate(request: float, limit: float, request_ratio: float, burst_ratio: float, risk: float) -> float:
    """``EstimatePodResource``."""
    request = max(request, 0.0)
    effective = request if limit <= 0 or limit < request else limit
    value = (request * request_ratio + max(effective - request, 0.0) * burst_ratio) * risk
    return min(max(value, 0.0), effective)


def _pod_limits(task: TaskInfo) -> Resource:
    pod = task.pod
    as_requests = dataclasses.replace(
        pod, containers=[Container(c.name, requests=dict(c.limits)) for c in pod.containers],
        init_containers=[Container(c.name, requests=dict(c.limits), restart_policy=c.restart_policy)
                         for c in pod.init_containers])
    return pod_resource_request(as_requests)


class Usage:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.settings = _settings(arguments or {})
        # Session state: the shadow estimate per node and each pod's part of it.
        self.node_cpu: dict[str, float] = {}
        self.node_mem: dict[str, float] = {}
        self.pods: dict[str, tuple[str, float, float]] = {}
        self.usage: dict[str, NodeUsage] = {}
        self.now = 0.0
        self.metrics_delay = 30.0
        # Per node row this session: 0 passes, 1 CPU load over the threshold, 2 memory load.
        self.blocked = np.zeros(0, dtype=np.int8)
        # The node order's figures by node row: the shadow estimate (cpu, memory), the measured
        # load in percent and the capacity (cpu, memory), and whether the metrics are fresh.
        self._index: dict[str, int] = {}
        self._shadow = np.zeros((2, 0), dtype=np.float64)
        self._real = np.zeros((2, 0), dtype=np.float64)
        self._capacity = np.zeros((2, 0), dtype=np.float64)
        self._fresh = np.zeros(0, dtype=bool)

    # ------------------------------------------------------------------ figures
    def fresh(self, node: str) -> NodeUsage | None:
        u = self.usage.get(node)
        if u is None or self.now - u.metrics_time > METRICS_ACTIVE_SECONDS:
            return None
        return u

    def _composites(self, node: NodeInfo) -> tuple[float, float]:
        u = self.usage.get(node.name)
        real_cpu = u.cpu.get(NODE_METRICS_PERIOD, 0.0) if u is not None else 0.0
        real_mem = u.memory.get(NODE_METRICS_PERIOD, 0.0) if u is not None else 0.0
        capacity = Resource.from_list(node.node.capacity)
        return (composite(real_cpu, self.node_cpu.get(node.name, 0.0), capacity.milli_cpu),
                composite(real_mem, self.node_mem.get(node.name, 0.0), capacity.memory))

    def score(self, node: NodeInfo) -> float:
        """``calcNodeScore``."""
        s = self.settings
        total = s.cpu_weight + s.memory_weight
        if total == 0:
            return 0.0
        cpu, mem = self._composites(node)
        value = ((1.0 - cpu) * s.cpu_weight + (1.0 - mem) * s.memory_weight) / total
        return value * MAX_NODE_SCORE * s.usage_weight

    def scores(self, idx: np.ndarray) -> np.ndarray:
        """:meth:`score` of the node rows ``idx``, 0 where the metrics are not fresh (vectorised)."""
        s = self.settings
        total = s.cpu_weight + s.memory_weight
        fresh = self._fresh[idx]
        if total == 0 or not fresh.any():
            return np.zeros(len(idx), dtype=np.float64)
        capacity, real, shadow = self._capacity[:, idx], self._real[:, idx], self._shadow[:, idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (real / 100.0 * capacity + shadow) / capacity
        value = np.where(capacity > 0, np.clip(value, 0.0, 1.0), 0.0)
        score = ((1.0 - value[0]) * s.cpu_weight + (1.0 - value[1]) * s.memory_weight) / total
        return np.where(fresh, score * MAX_NODE_SCORE * s.usage_weight, 0.0)

    def _risk(self, node: NodeInfo) -> float:
        s = self.settings
        cpu, mem = self._composites(node)
        if s.risk_factor < 1.0:
            return 1.0
        return s.risk_factor if weighted(cpu, mem, s.cpu_weight, s.memory_weight) >= s.risk_threshold else 1.0

    def _estimate(self, task: TaskInfo, risk: float) -> tuple[float, float]:
        s = self.settings
        if task.best_effort:
            return max(s.be_cpu, 0.0) * risk, max(s.be_memory, 0.0) * risk
        req, lim = task.resreq, _pod_limits(task)
        return (estimate(req.milli_cpu, lim.milli_cpu, s.request_ratio, s.burst_ratio, risk),
                estimate(req.memory, lim.memory, s.request_ratio, s.burst_ratio, risk))

    def _add(self, task: TaskInfo, node: NodeInfo) -> None:
        self._sub(task.uid)
        cpu, mem = self._estimate(task, self._risk(node))
        self.node_cpu[node.name] = self.node_cpu.get(node.name, 0.0) + cpu
        self.node_mem[node.name] = self.node_mem.get(node.name, 0.0) + mem
        self.pods[task.uid] = (node.name, cpu, mem)
        self._shadow_changed(node.name)

    def _sub(self, uid: str) -> None:
        held = self.pods.pop(uid, None)
        if held is None:
            return
        name, cpu, mem = held
        self.node_cpu[name] = max(self.node_cpu.get(name, 0.0) - cpu, 0.0)
        self.node_mem[name] = max(self.node_mem.get(name, 0.0) - mem, 0.0)
        self._shadow_changed(name)

    def _shadow_changed(self, name: str) -> None:
        i = self._index.get(name)
        if i is not None:
            self._shadow[0, i] = self.node_cpu[name]
            self._shadow[1, i] = self.node_mem[name]

    def _unseen(self, task: TaskInfo) -> bool:
        """``shouldAddToShadowCache``: placed, and not running long enough to show in the metrics."""
        if not task.node_name:
            return False
        if task.status & _SHADOW_STATUSES:
            return True
        if task.status != TaskStatus.Running:
            return False
        started = task.pod.start_time
        return started is None or self.now - started < self.metrics_delay

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.node_cpu, self.node_mem, self.pods = {}, {}, {}
        self.usage = ssn.cache.node_usage
        self.now = ssn.now
        self.metrics_delay = read_metrics(ssn.config.metrics).interval
        n = len(ssn.node_list)
        self._index = {node.name: i for i, node in enumerate(ssn.node_list)}
        self._shadow = np.zeros((2, n), dtype=np.float64)
        self._real = np.zeros((2, n), dtype=np.float64)
        self._capacity = np.zeros((2, n), dtype=np.float64)
        self._fresh = np.zeros(n, dtype=bool)
        for i, node in enumerate(ssn.node_list):
            u = self.usage.get(node.name)
            if u is not None:
                self._real[0, i] = u.cpu.get(NODE_METRICS_PERIOD, 0.0)
                self._real[1, i] = u.memory.get(NODE_METRICS_PERIOD, 0.0)
            capacity = Resource.from_list(node.node.capacity)
            self._capacity[0, i], self._capacity[1, i] = capacity.milli_cpu, capacity.memory
            self._fresh[i] = self.fresh(node.name) is not None
        for node in ssn.node_list:
            for task in list(node.tasks.values()):
                if self._unseen(task):
                    self._add(task, node)
        node_list = ssn.node_list
        s = self.settings
        blocked = np.zeros(len(node_list), dtype=np.int8)  # 0 pass, 1 cpu, 2 memory
        for i, node in enumerate(node_list):
            u = self.fresh(node.name)
            if u is None:
                continue
            if u.cpu.get(NODE_METRICS_PERIOD, 0.0) > s.cpu_threshold:
                blocked[i] = 1
            elif u.memory.get(NODE_METRICS_PERIOD, 0.0) > s.mem_threshold:
                blocked[i] = 2
        self.blocked = blocked
        digest = hashlib.blake2b(blocked.tobytes(), digest_size=16).digest()

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            verdicts = blocked[idx]
            out: NodeFailures = []
            for code, reason in ((1, CPU_EXCEEDED), (2, MEMORY_EXCEEDED)):
                mask = verdicts == code
                if mask.any():
                    out.append((Status(Code.UnschedulableAndUnresolvable, reason), mask))
            return out

        def cache_key(_task: TaskInfo) -> Hashable:
            return (digest,)

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            return self.scores(idx)

        def on_allocate(ev: Event) -> None:
            node = ssn.nodes.get(ev.task.node_name)
            if node is not None:
                self._add(ev.task, node)

        def on_deallocate(ev: Event) -> None:
            self._sub(ev.task.uid)

        def on_allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                on_allocate(Event(t))

        ssn.add_predicate_fn(NAME, predicate, cache_key=cache_key, projectable=lambda _t: True)
        # The score on a node reads only that node's load and shadow estimate, and the shadow
        # moves only with placements on the node (which the node table's change log names);
        # not projectable: the shadow is event-handler state, which a trial placement does not
        # move (the framework keeps one projectable flag per plugin: this one wins).
        ssn.add_node_order_fn(NAME, node_order, cache_key=lambda _t: (), projectable=lambda _t: False)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           allocate_many=on_allocate_many))

    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           hist: Mapping[str, int]) -> PluginBlock | None:
        """``Usage.NodeOverloaded``: the least loaded of the nodes the load filters, and the thresholds."""
        if not hist.get(CPU_EXCEEDED) and not hist.get(MEMORY_EXCEEDED):
            return None
        nodes = [int(i) for i in np.flatnonzero(self.blocked)]
        if not nodes:
            return None
        s = self.settings

        def load(i: int) -> tuple[float, float]:
            u = self.usage.get(ssn.node_list[i].name)
            return ((u.cpu.get(NODE_METRICS_PERIOD, 0.0), u.memory.get(NODE_METRICS_PERIOD, 0.0))
                    if u is not None else (0.0, 0.0))

        least = min(nodes, key=lambda i: (max(load(i)[0] - s.cpu_threshold, load(i)[1] - s.mem_threshold), i))
        cpu, mem = load(least)
        name = ssn.node_list[least].name
        figures = {"cpu_threshold": s.cpu_threshold, "memory_threshold": s.mem_threshold, "nodes_over": len(nodes),
                   "least_loaded_node": name, "cpu_percent": round(cpu, 2), "memory_percent": round(mem, 2)}
        hint = (f"{len(nodes)} node(s) are over the load thresholds (cpu {s.cpu_threshold:g}%, memory "
                f"{s.mem_threshold:g}%); the least loaded, {name}, is at {cpu:.0f}% cpu and {mem:.0f}% memory: wait "
                f"for the load to fall, or raise the usage plugin's thresholds")
        return PluginBlock(Reason.USAGE_NODE_OVERLOADED, f"{len(nodes)} node(s) over the load thresholds", hint,
                           plugin=NAME, figures=tuple(figures.items()))

    def on_session_close(self, ssn: Session) -> None:
        self.node_cpu, self.node_mem, self.pods = {}, {}, {}


def new(arguments: Mapping[str, Any]) -> Usage:
    return Usage(arguments)
