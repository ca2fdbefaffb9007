"""Numatopology (``nodeinfo.volcano.sh/v1alpha1``): one node's NUMA layout and free CPUs.

A Numatopology is cluster-scoped and named after its Node; a resource exporter on the node
(upstream ``volcano-sh/resource-exporter``, here :mod:`pyvolcano.runtime.numa_exporter`) writes
it from the kubelet's CPU manager state:

* ``spec.policies``: ``CPUManagerPolicy`` (``none`` / ``static``) and ``TopologyManagerPolicy``
  (``none``, ``best-effort``, ``restricted``, ``single-numa-node``), as the kubelet runs them;
* ``spec.numares.cpu``: ``allocatable``, the CPUs of the kubelet's shared pool (a CPU list such
  as ``"2-5,8"``: the CPUs an exclusive assignment may still take), and ``capacity``, the CPU
  count;
* ``spec.cpuDetail``: per CPU id, its ``numa`` node, ``socket`` and ``core``;
* ``spec.resReserved``: reserved resources (``cpu: "1"``), which the CPU manager takes first;
* ``spec.podAllocations``: the pods the kubelet has assigned CPUs to (uid, name, namespace).

:class:`Numatopology` carries the object as written (read by
:func:`pyvolcano.api.manifest.parse_objects`); :meth:`Numatopology.scheduler_info` is upstream's
``NumatopoInfo`` with the CPUs still held by pods the scheduler placed but the exporter has not
reported yet (``NodeInfo.RefreshNumaSchedulerInfoByCrd``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from pyvolcano.api.cpuset import CpuSetError, format_cpuset, parse_cpuset
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = [
    "CPU_MANAGER_POLICIES",
    "CPU_MANAGER_POLICY",
    "NODEINFO_API_VERSION",
    "POLICY_NAMES",
    "TOPOLOGY_MANAGER_POLICIES",
    "TOPOLOGY_MANAGER_POLICY",
    "CpuInfo",
    "NumaResource",
    "NumaSchedulerInfo",
    "Numatopology",
    "PodMeta",
    "ResNumaSets",
    "read_spec",
]

NODEINFO_API_VERSION: Final = "nodeinfo.volcano.sh/v1alpha1"
CPU_MANAGER_POLICY: Final = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY: Final = "TopologyManagerPolicy"
POLICY_NAMES: Final = (CPU_MANAGER_POLICY, TOPOLOGY_MANAGER_POLICY)
CPU_MANAGER_POLICIES: Final = ("none", "static")
TOPOLOGY_MANAGER_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")

ResNumaSets = dict[str, frozenset[int]]
"""Per resource name (only ``cpu`` is used), a set of CPU ids (upstream ``api.ResNumaSets``)."""


class PodMeta(NamedTuple):
    """A pod as a Numatopology's ``podAllocations`` name it (upstream ``api.PodMeta``)."""

    uid: str
    name: str
    namespace: str


@dataclass(frozen=True, slots=True)
class CpuInfo:
    numa: int = 0
    socket: int = 0
    core: int = 0


@dataclass(frozen=True, slots=True)
class NumaResource:
    allocatable: frozenset[int] = frozenset()
    capacity: int = 0


@dataclass(slots=True)
class Numatopology:
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    policies: dict[str, str] = field(default_factory=dict)
    res_reserved: dict[str, str] = field(default_factory=dict)
    numares: dict[str, NumaResource] = field(default_factory=dict)
    cpu_detail: dict[int, CpuInfo] = field(default_factory=dict)
    pod_allocations: tuple[PodMeta, ...] = ()

    def spec_key(self) -> tuple[object, ...]:
        """What the scheduler reads of the object (an update that leaves it equal changes nothing)."""
        return (sorted(self.policies.items()), sorted(self.res_reserved.items()), sorted(self.numares.items()),
                sorted(self.cpu_detail.items()), self.pod_allocations)

    def has_pod(self, meta: PodMeta) -> bool:
        """Upstream ``CheckNumaPodAssigned``: the exporter lists the pod (by uid, or by namespace and name)."""
        return any(a.uid == meta.uid or (a.name == meta.name and a.namespace == meta.namespace)
                   for a in self.pod_allocations)

    def scheduler_info(self, unassigned: Mapping[PodMeta, ResNumaSets]) -> tuple[NumaSchedulerInfo, bool]:
        """The view a session schedules on, and whether ``unassigned`` may be forgotten.

        Upstream ``RefreshNumaSchedulerInfoByCrd``: while any pod the scheduler placed is not
        yet in ``podAllocations``, the CPUs of every such placement stay taken (the kubelet may
        have assigned other CPUs than the scheduler chose); once all are listed, the
        exporter's figures are the truth and the placements are forgotten.
        """
        free = {name: res.allocatable for name, res in self.numares.items()}
        pending = any(not self.has_pod(meta) for meta in unassigned)
        if pending:
            for sets in unassigned.values():
                for name, cpus in sets.items():
                    if name in free:
                        free[name] = free[name] - cpus
        info = NumaSchedulerInfo(dict(self.policies), free, dict(self.cpu_detail), dict(self.res_reserved))
        return info, not pending


@dataclass(slots=True)
class NumaSchedulerInfo:
    """A node's NUMA state as a session sees it (upstream ``NodeInfo.NumaSchedulerInfo``)."""

    policies: dict[str, str]
    free: ResNumaSets
    cpu_detail: dict[int, CpuInfo]
    res_reserved: dict[str, str]

    @property
    def cpu_manager_policy(self) -> str:
        return self.policies.get(CPU_MANAGER_POLICY, "")

    @property
    def topology_manager_policy(self) -> str:
        return self.policies.get(TOPOLOGY_MANAGER_POLICY, "")

    def numa_nodes(self) -> list[int]:
        """The NUMA node ids of ``cpuDetail``, ascending (upstream ``GenerateNumaNodes``)."""
        return sorted({c.numa for c in self.cpu_detail.values()})


_CPU_LIST = "a cpu list such as '0-3,8'"


def read_spec(spec: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The fields of a Numatopology ``spec`` as :class:`Numatopology` keywords, and every problem
    found as ``(field path, message)``.

    Beyond the CRD's schema (string maps, integer ids >= 0), the exporter's contract is
    checked: policy names and values the kubelet knows, CPU lists that parse, every CPU of
    ``numares.cpu.allocatable`` described in ``cpuDetail`` (upstream would count an
    undescribed CPU on NUMA node 0).
    """
    problems: list[tuple[str, str]] = []
    out: dict[str, Any] = {"policies": {}, "res_reserved": {}, "numares": {}, "cpu_detail": {}, "pod_allocations": ()}
    if spec is None:
        return out, problems
    if not isinstance(spec, Mapping):
        return out, [("spec", f"got {spec!r}; expected a mapping")]
    out["policies"] = _policies(spec.get("policies"), problems)
    detail = _cpu_detail(spec.get("cpuDetail"), problems)
    out["cpu_detail"] = detail
    out["numares"] = _numares(spec.get("numares"), detail, problems)
    out["res_reserved"] = _reserved(spec.get("resReserved"), problems)
    out["pod_allocations"] = _allocations(spec.get("podAllocations"), problems)
    return out, problems


def _mapping(value: Any, path: str, problems: list[tuple[str, str]]) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.append((path, f"got {value!r}; expected a mapping"))
        return {}
    return value


def _policies(value: Any, problems: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, v in _mapping(value, "spec.policies", problems).items():
        path = f"spec.policies.{key}"
        if key not in POLICY_NAMES:
            problems.append((path, f"unknown policy; expected {' or '.join(POLICY_NAMES)}"))
            continue
        allowed = CPU_MANAGER_POLICIES if key == CPU_MANAGER_POLICY else TOPOLOGY_MANAGER_POLICIES
        if v not in allowed:
            problems.append((path, f"got {v!r}; expected one of {', '.join(allowed)}"))
            continue
        out[key] = v
    return out


def _non_negative(value: Any, path: str, problems: list[tuple[str, str]]) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append((path, f"got {value!r}; expected an integer >= 0"))
        return 0
    return value


def _cpu_detail(value: Any, problems: list[tuple[str, str]]) -> dict[int, CpuInfo]:
    out: dict[int, CpuInfo] = {}
    for key, info in _mapping(value, "spec.cpuDetail", problems).items():
        path = f"spec.cpuDetail.{key}"
        text = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
        if not (isinstance(text, str) and text.isascii() and text.isdigit()):
            problems.append((path, "the key is not a cpu id; expected a non-negative integer"))
            continue
        m = _mapping(info, path, problems)
        out[int(text)] = CpuInfo(*(_non_negative(m.get(f), f"{path}.{f}", problems)
                                   for f in ("numa", "socket", "core")))
    return out


def _numares(value: Any, detail: Mapping[int, CpuInfo], problems: list[tuple[str, str]]) -> dict[str, NumaResource]:
    out: dict[str, NumaResource] = {}
    for name, info in _mapping(value, "spec.numares", problems).items():
        path = f"spec.numares.{name}"
        m = _mapping(info, path, problems)
        text = m.get("allocatable", "")
        cpus: frozenset[int] = frozenset()
        if not isinstance(text, str):
            problems.append((f"{path}.allocatable", f"got {text!r}; expected {_CPU_LIST}"))
        else:
            try:
                cpus = parse_cpuset(text)
            except CpuSetError as e:
                problems.append((f"{path}.allocatable", f"{e}; expected {_CPU_LIST}"))
        unknown = frozenset(cpus - detail.keys())
        if unknown and name == "cpu":
            problems.append((f"{path}.allocatable",
                             f"cpu(s) {format_cpuset(unknown)} are not described in spec.cpuDetail"))
        out[str(name)] = NumaResource(cpus, _non_negative(m.get("capacity"), f"{path}.capacity", problems))
    return out


def _reserved(value: Any, problems: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, q in _mapping(value, "spec.resReserved", problems).items():
        try:
            parse_quantity(q)
        except QuantityError as e:
            problems.append((f"spec.resReserved.{name}", str(e)))
            continue
        out[str(name)] = str(q)
    return out


def _allocations(value: Any, problems: list[tuple[str, str]]) -> tuple[PodMeta, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(("spec.podAllocations", f"got {value!r}; expected a list"))
        return ()
    out = []
    for i, a in enumerate(value):
        m = _mapping(a, f"spec.podAllocations[{i}]", problems)
        parts = []
        for f in ("uid", "name", "namespace"):
            v = m.get(f) or ""
            if not isinstance(v, str):
                problems.append((f"spec.podAllocations[{i}].{f}", f"got {v!r}; expected a string"))
                v = ""
            parts.append(v)
        out.append(PodMeta(*parts))
    return tuple(out)
