"""rescheduling plugin: evict pods from overused nodes (upstream ``pkg/scheduler/plugins/rescheduling``).

Every ``interval`` (default ``5m``; the first run comes one interval after the scheduler
starts, as upstream's timer starts at process start) the plugin hands ``shuffle`` the victims of
its strategies through VictimTasks. The only strategy upstream implements is
``lowNodeUtilization`` (default, and the only one of ``strategies`` that does anything;
``offlineOnly``, ``lowPriorityFirst``, ``queueSelector`` and ``labelSelector`` are accepted and
ignored, as upstream ignores them):

* a node's utilisation is its measured CPU and memory load for ``metricsPeriod`` (default
  ``5m``; note that the metrics collector fills only ``10m``, so upstream's default reads 0:
  set ``metricsPeriod: 10m`` to use the collected load);
* *low* nodes: schedulable, every dimension under ``thresholds``; *high* nodes: the others with
  any dimension over ``targetThresholds`` (``params.thresholds`` / ``targetThresholds`` of the
  strategy, percents for ``cpu``, ``memory`` and ``pod``; default 100 each, so nothing is low
  enough unless configured). Nothing happens unless there are low nodes, high nodes, and not
  every node is low;
* the room on the low nodes, Σ (target − utilisation) × capacity, is what may be moved: the
  high nodes, most loaded (cpu + memory) first, give up their pods lowest priority first
  (no priority before any priority, then BestEffort, Burstable, Guaranteed), each evicted pod
  taking its requests off that room and off its node's utilisation, while the node is still at
  or over a target and no dimension of the room is exactly 0.

A strategy listed without ``params`` has no configuration and yields nothing (upstream's type
assertion fails); thresholds must be integers (upstream panics on anything else; here it is an
argument error). Pods are matched to the Running tasks shuffle offers by *name* alone, as
upstream does.

Invariants: the time of the last run is session-memo state (``SessionMemo.plugin_state``), not a
package global, and starts at the first session's ``now``; nodes of equal load keep node order
and pods are sorted from uid order, where upstream sorts Go map order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.api.node import NodeInfo
from pyvolcano.api.objects import Pod
from pyvolcano.api.qos import QOSClass, pod_qos
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.plugins.numa_aware.cpumanager import go_insertion_sort

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "DEFAULT_INTERVAL", "LOW_NODE_UTILIZATION", "NAME", "LowNodeUtilization", "Rescheduling", "new"]

NAME: Final = "rescheduling"
LOW_NODE_UTILIZATION: Final = "lowNodeUtilization"
DEFAULT_INTERVAL: Final = 300.0
DEFAULT_METRICS_PERIOD: Final = "5m"
_KNOWN_STRATEGIES: Final = (LOW_NODE_UTILIZATION, "offlineOnly", "lowPriorityFirst")
_THRESHOLD_KEYS: Final = {"cpu": "cpu", "memory": "memory", "pod": "pod"}
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (honoured("interval"), honoured("metricsPeriod"),
                                                   honoured("strategies")))


@dataclass(slots=True)
class LowNodeUtilization:
    """``LowNodeUtilizationConf``: percents per resource."""

    thresholds: dict[str, float] = field(default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})
    target_thresholds: dict[str, float] = field(
        default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})


def _owner() -> str:
    return f"plugin {NAME}"


def _thresholds(value: Any, path: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ArgumentError.bad(_owner(), path, f"got {value!r}", "a mapping of resource to percent")
    out: dict[str, float] = {}
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise ArgumentError.bad(_owner(), f"{path}.{key}", f"got {v!r} ({type(v).__name__})",
                                    "an integer percent")
        if key in _THRESHOLD_KEYS:
            out[_THRESHOLD_KEYS[key]] = float(v)
    return out


def _strategies(value: Any) -> list[tuple[str, LowNodeUtilization | None]]:
    """The configured strategies with lowNodeUtilization's parsed parameters (None: none given)."""
    if not isinstance(value, list):
        raise ArgumentError.bad(_owner(), "strategies", f"got {value!r}", "a list of {name, params}")
    out: list[tuple[str, LowNodeUtilization | None]] = []
    for i, entry in enumerate(value):
        path = f"strategies[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ArgumentError.bad(_owner(), path, f"got {entry!r}", "a mapping with a name")
        name = entry["name"]
        if name not in _KNOWN_STRATEGIES:
            raise ArgumentError.bad(_owner(), f"{path}.name", f"got {name!r}", f"one of {', '.join(_KNOWN_STRATEGIES)}")
        params = entry.get("params")
        if params is None:
            out.append((name, None))
            continue
        if not isinstance(params, Mapping):
            raise ArgumentError.bad(_owner(), f"{path}.params", f"got {params!r}", "a mapping")
        conf = LowNodeUtilization()
        if "thresholds" in params:
            conf.thresholds.update(_thresholds(params["thresholds"], f"{path}.params.thresholds"))
        if "targetThresholds" in params:
            conf.target_thresholds.update(_thresholds(params["targetThresholds"], f"{path}.params.targetThresholds"))
        out.append((name, conf))
    return out


def _pod_less(a: Pod, b: Pod) -> bool:
    """``sortPods``'s comparator (not an ordering; applied with Go's insertion sort)."""
    if a.priority is None and b.priority is not None:
        return True
    if b.priority is None and a.priority is not None:
        return False
    if (a.priority is None and b.priority is None) or a.priority == b.priority:
        qa = pod_qos(a)
        if qa is QOSClass.BEST_EFFORT:
            return True
        return qa is QOSClass.BURSTABLE and pod_qos(b) is QOSClass.GUARANTEED
    assert a.priority is not None and b.priority is not None
    return a.priority < b.priority


@dataclass(slots=True)
class _Utilization:
    node: NodeInfo
    capacity: Resource
    cpu: float
    memory: float
    pods: list[Pod]


class Rescheduling:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        raw = dict(arguments or {})
        args = Arguments(raw, keys=ARGUMENTS)
        interval = raw.get("interval")
        if interval is not None and not isinstance(interval, str):
            raise ArgumentError.bad(_owner(), "interval", f"got {interval!r}", "a duration string such as '5m'")
        seconds = args.get_duration_seconds("interval", DEFAULT_INTERVAL)
        self.interval = DEFAULT_INTERVAL if seconds is None else seconds
        self.metrics_period = args.get_str("metricsPeriod", DEFAULT_METRICS_PERIOD) or DEFAULT_METRICS_PERIOD
        self.strategies: list[tuple[str, LowNodeUtilization | None]] = [(LOW_NODE_UTILIZATION, LowNodeUtilization())]
        if "strategies" in raw:
            given = _strategies(raw["strategies"])
            if given:
                self.strategies = given

    def time_to_run(self, ssn: Session) -> bool:
        """``timeToRun``: more than ``interval`` since the last run (the first session counts as
        the scheduler's start)."""
        state = ssn.memo.plugin_state.setdefault(NAME, {})
        last = state.setdefault("last_run", ssn.now)
        if last + self.interval < ssn.now:
            state["last_run"] = ssn.now
            return True
        return False

    def on_session_open(self, ssn: Session) -> None:
        if not self.time_to_run(ssn):
            return
        listed = [c for name, c in self.strategies if name == LOW_NODE_UTILIZATION]
        if not listed:
            return
        conf = listed[-1]  # upstream keeps the last entry of a name (a map by strategy name)

        def victims(tasks: list[TaskInfo]) -> list[TaskInfo]:
            if conf is None:  # listed without params: upstream's "parameters parse error"
                return []
            return self.low_node_utilization(ssn, conf, tasks)

        ssn.add_victim_tasks_fn(NAME, victims)

    # ------------------------------------------------------------------ lowNodeUtilization
    def _utilizations(self, ssn: Session) -> list[_Utilization]:
        out = []
        for node in ssn.node_list:
            if node.unschedulable and not node.node.allocatable:
                continue  # a deleted node (the cache keeps its row; upstream's snapshot has none)
            u = ssn.cache.node_usage.get(node.name)
            cpu = u.cpu.get(self.metrics_period, 0.0) if u is not None else 0.0
            mem = u.memory.get(self.metrics_period, 0.0) if u is not None else 0.0
            capacity = Resource.from_list(node.node.allocatable or node.node.capacity)
            pods = [t.pod for _uid, t in sorted(node.tasks.items())]
            out.append(_Utilization(node, capacity, cpu, mem, pods))
        return out

    def low_node_utilization(self, ssn: Session, conf: LowNodeUtilization,
                             tasks: list[TaskInfo]) -> list[TaskInfo]:
        nodes = self._utilizations(ssn)

        def dims(u: _Utilization) -> dict[str, float]:
            return {"cpu": u.cpu, "memory": u.memory}

        low, high = [], []
        for u in nodes:
            if not u.node.unschedulable and all(v < conf.thresholds[r] for r, v in dims(u).items()
                                                if r in conf.thresholds):
                low.append(u)
            elif any(v > conf.target_thresholds[r] for r, v in dims(u).items() if r in conf.target_thresholds):
                high.append(u)
        if not low or len(low) == len(nodes) or not high:
            return []
        # The room the low nodes leave below their targets (integer milli-CPU and bytes).
        room = {"cpu": 0, "memory": 0}
        for u in low:
            for r, cap in (("cpu", u.capacity.milli_cpu), ("memory", u.capacity.memory)):
                room[r] += int(conf.target_thresholds[r] * cap * 0.01) - int(dims(u)[r] * cap * 0.01)
        high.sort(key=lambda u: -(u.cpu + u.memory))
        victims: list[TaskInfo] = []
        for u in high:
            if not u.pods:
                continue
            pods = list(u.pods)
            go_insertion_sort(pods, _pod_less)
            for pod in pods:
                if not self._go_on(u, room, conf):
                    break
                task = next((t for t in tasks if t.pod.name == pod.name), None)
                if task is None:
                    continue
                cpu, mem = int(task.resreq.milli_cpu), int(task.resreq.memory)
                room["cpu"] -= cpu
                room["memory"] -= mem
                u.cpu -= cpu * 100 / u.capacity.milli_cpu if u.capacity.milli_cpu else math.inf
                u.memory -= mem * 100 / u.capacity.memory if u.capacity.memory else math.inf
                victims.append(task)
        return victims

    @staticmethod
    def _go_on(u: _Utilization, room: dict[str, int], conf: LowNodeUtilization) -> bool:
        """``isContinueEvictPods``: the node is still at or over a target, and no dimension of
        the room is exactly 0."""
        over = any(v >= conf.target_thresholds[r] for r, v in (("cpu", u.cpu), ("memory", u.memory))
                   if r in conf.target_thresholds)
        return over and all(v != 0 for v in room.values())

    def next_wakeup(self, ssn: Session) -> float | None:
        """The next run, while some node is over a target (``TimedPlugin``): with none, a run
        finds no victims until something changes, which makes a session due by itself."""
        listed = [c for name, c in self.strategies if name == LOW_NODE_UTILIZATION]
        conf = listed[-1] if listed else None
        if conf is None:
            return None
        hot = any(v > conf.target_thresholds[r] for u in self._utilizations(ssn)
                  for r, v in (("cpu", u.cpu), ("memory", u.memory)) if r in conf.target_thresholds)
        if not hot:
            return None
        last = ssn.memo.plugin_state.get(NAME, {}).get("last_run", ssn.now)
        return float(last) + self.interval + 1e-3

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(arguments: Mapping[str, Any]) -> Rescheduling:
    return Rescheduling(arguments)
