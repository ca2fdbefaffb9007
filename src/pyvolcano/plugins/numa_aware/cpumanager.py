"""The CPU hint provider of numa-aware (upstream ``numaaware/provider/cpumanager``).

A container asking for a whole number of CPUs gets one :class:`TopologyHint` per set of NUMA
nodes whose free CPUs cover the request (sets in order of size, then of ids, as
``bitmask.IterateBitMasks``); a hint is *preferred* when its size is the fewest NUMA nodes whose
CPUs, free or not, could hold the request. :func:`allocate` picks the CPUs a placement takes:
first inside the best hint's NUMA nodes, then anywhere, with the kubelet's ``takeByTopology``
as upstream vendors it (``cpu_assignment.go``).

Upstream quirks reproduced (each would change which CPUs a later pod of the session sees free):

* ``freeSockets`` and ``freeCores`` intersect socket and core ids with *CPU* ids
  (``Sockets().Intersection(CPUs())``), so a socket is "free" when the CPU of the same number
  is free, and a socket or core taken whole may give more CPUs than requested;
* ``freeCores`` and ``freeCPUs`` sort with comparators that are not orderings
  (``a < b || c < d``); they are applied here with Go's insertion sort, which is what
  ``sort.Slice`` runs on up to 12 elements. ``freeCores`` starts from Go's map order, which is
  random; here from the ascending socket ids (docs/differences.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import TypeVar

from pyvolcano.api.numatopology import CpuInfo, ResNumaSets
from pyvolcano.api.objects import Container
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = ["CpuTopology", "TopologyHint", "allocate", "guaranteed_cpus", "hints", "take_by_topology"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TopologyHint:
    """A set of NUMA nodes as a bit mask (``None``: no preference) and whether it is preferred."""

    affinity: int | None
    preferred: bool

    def count(self) -> int:
        return 0 if self.affinity is None else self.affinity.bit_count()

    def bits(self) -> list[int]:
        a = self.affinity or 0
        return [i for i in range(a.bit_length()) if a >> i & 1]


def mask_of(ids: list[int] | tuple[int, ...]) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


class CpuTopology:
    """``topology.CPUTopology`` over a node's ``cpuDetail``, with the lookups ``CPUDetails``
    answers by scanning kept as indices (built once per node and session)."""

    __slots__ = ("_reserved", "by_core", "by_numa", "by_socket", "details", "num_cores", "num_cpus", "num_sockets",
                 "numa_count", "numa_ids")

    def __init__(self, details: Mapping[int, CpuInfo]):
        self.details = dict(details)
        self.num_cpus = len(self.details)
        self.num_cores = len({(c.socket, c.core) for c in self.details.values()})
        self.num_sockets = len({c.socket for c in self.details.values()})
        by_numa: dict[int, set[int]] = {}
        by_socket: dict[int, set[int]] = {}
        by_core: dict[int, set[int]] = {}
        for cpu, c in self.details.items():
            by_numa.setdefault(c.numa, set()).add(cpu)
            by_socket.setdefault(c.socket, set()).add(cpu)
            by_core.setdefault(c.core, set()).add(cpu)  # by core id alone, as CPUsInCores
        self.by_numa = {k: frozenset(v) for k, v in by_numa.items()}
        self.by_socket = {k: frozenset(v) for k, v in by_socket.items()}
        self.by_core = {k: frozenset(v) for k, v in by_core.items()}
        self.numa_ids = sorted(by_numa)
        self.numa_count = {k: len(v) for k, v in by_numa.items()}
        self._reserved: dict[str, frozenset[int]] = {}

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def numa_of(self, cpu: int) -> int:
        info = self.details.get(cpu)
        return info.numa if info is not None else 0  # a missing CPU reads as the zero CPUInfo

    def cpus_in_numa(self, ids: Iterable[int]) -> frozenset[int]:
        out: frozenset[int] = frozenset()
        for i in ids:
            out |= self.by_numa.get(i, frozenset())
        return out

    def reserved(self, res_reserved: Mapping[str, str]) -> frozenset[int]:
        """The CPUs ``resReserved`` keeps back, taken by topology from all CPUs (memoised)."""
        raw = res_reserved.get("cpu")
        if raw is None:
            return frozenset()
        known = self._reserved.get(raw)
        if known is None:
            try:
                n = math.ceil(parse_quantity(raw))
            except QuantityError:
                n = 0
            taken = take_by_topology(self, set(self.details), n) if n else set()
            known = self._reserved[raw] = frozenset(taken or ())
        return known


# CPUDetails helpers (k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology).
def numa_nodes(details: Mapping[int, CpuInfo]) -> list[int]:
    return sorted({c.numa for c in details.values()})


def cpus_in_numa(details: Mapping[int, CpuInfo], ids: set[int]) -> set[int]:
    return {cpu for cpu, c in details.items() if c.numa in ids}


def go_insertion_sort(items: list[T], less: Callable[[T, T], bool]) -> None:
    """Go's ``insertionSort_func``, in place (``sort.Slice`` on up to 12 elements)."""
    for i in range(1, len(items)):
        j = i
        while j > 0 and less(items[j], items[j - 1]):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1


class _Accumulator:
    """``cpuAccumulator``: the CPUs taken so far and the free CPUs still described (``avail``:
    the available CPUs the topology knows, less those taken)."""

    def __init__(self, topo: CpuTopology, available: set[int], need: int):
        self.topo = topo
        self.avail = {cpu for cpu in available if cpu in topo.details}
        self.need = need
        self.result: set[int] = set()

    def take(self, cpus: set[int] | frozenset[int]) -> None:
        self.result |= cpus
        self.avail -= self.result
        self.need -= len(cpus)

    def _sockets(self) -> set[int]:
        details = self.topo.details
        return {details[cpu].socket for cpu in self.avail}

    def free_sockets(self) -> list[int]:
        # Upstream intersects socket ids with CPU ids (module docstring).
        return sorted(self._sockets() & self.avail)

    def free_cores(self) -> list[int]:
        details, avail = self.topo.details, self.avail
        cores: dict[int, set[int]] = {}  # socket -> core ids of its free CPUs that are free CPU ids
        for cpu in avail:
            info = details[cpu]
            cores.setdefault(info.socket, set()).add(info.core)
        for s, ids in cores.items():
            cores[s] = ids & avail
        socket_ids = sorted(cores)
        count = {s: len(cores[s]) for s in socket_ids}
        go_insertion_sort(socket_ids, lambda i, j: count[i] < count[j] or i < j)
        out: list[int] = []
        for s in socket_ids:
            out.extend(sorted(cores[s]))
        return out

    def free_cpus(self) -> list[int]:
        topo, avail, result = self.topo, self.avail, self.result
        cores = sorted({topo.details[cpu].core for cpu in avail})
        key: dict[int, tuple[int, int, int, int]] = {}
        for core in cores:
            socket = topo.details[min(topo.by_core[core])].socket
            in_socket = topo.by_socket[socket]
            key[core] = (len(in_socket & result), len(in_socket & avail), len(topo.by_core[core] & avail), socket)

        def less(i: int, j: int) -> bool:
            ki, kj = key[i], key[j]
            return ki[0] > kj[0] or ki[1] < kj[1] or ki[2] < kj[2] or ki[3] < kj[3] or i < j

        go_insertion_sort(cores, less)
        out: list[int] = []
        for core in cores:
            out.extend(sorted(topo.by_core[core] & avail))
        return out

    def needs(self, n: int) -> bool:
        return self.need >= n

    def satisfied(self) -> bool:
        return self.need < 1

    def failed(self) -> bool:
        return self.need > len(self.avail)


def take_by_topology(topo: CpuTopology, available: set[int], n: int) -> set[int] | None:
    """``takeByTopology``: ``n`` CPUs of ``available``, whole sockets, then whole cores, then
    single CPUs; None when it cannot (upstream's error)."""
    acc = _Accumulator(topo, available, n)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        return None
    if acc.needs(topo.cpus_per_socket()):
        for s in acc.free_sockets():
            acc.take(topo.by_socket.get(s, frozenset()) & acc.avail)
            if acc.satisfied():
                return acc.result
            if not acc.needs(topo.cpus_per_socket()):
                break
    if acc.needs(topo.cpus_per_core()):
        for c in acc.free_cores():
            acc.take(topo.by_core.get(c, frozenset()) & acc.avail)
            if acc.satisfied():
                return acc.result
            if not acc.needs(topo.cpus_per_core()):
                break
    for c in acc.free_cpus():
        if acc.needs(1):
            acc.take({c})
        if acc.satisfied():
            return acc.result
    return None


def guaranteed_cpus(container: Container) -> int:
    """The container's CPU request when it is a whole number, else 0."""
    raw = container.requests.get("cpu")
    if raw is None:
        return 0
    try:
        q = parse_quantity(raw)
    except QuantityError:
        return 0
    # Go: Value() rounds up to an integer; a fractional request has Value()*1000 != MilliValue().
    if q.denominator != 1:
        return 0
    return int(q)


def hints(container: Container, topo: CpuTopology, res_reserved: Mapping[str, str],
          free: ResNumaSets) -> dict[str, list[TopologyHint]] | None:
    """``GetTopologyHints``: None when the container has no say (no cpu request, a fractional
    one, or no cpu in the node's sets); else the cpu hints, possibly none."""
    if "cpu" not in container.requests:
        return None
    request = guaranteed_cpus(container)
    if request == 0:
        return None
    if "cpu" not in free:
        return None
    available = free["cpu"] - topo.reserved(res_reserved)
    free_per_numa = {numa: len(cpus & available) for numa, cpus in topo.by_numa.items()}
    unknown = len(available) - sum(free_per_numa.values())
    if unknown:  # a CPU the topology does not describe reads as NUMA node 0
        free_per_numa[0] = free_per_numa.get(0, 0) + unknown
    nodes = topo.numa_ids
    min_size = len(nodes)
    found: list[tuple[int, int]] = []  # (mask, size)
    for size in range(1, len(nodes) + 1):
        for ids in combinations(nodes, size):
            if size < min_size and sum(topo.numa_count[i] for i in ids) >= request:
                min_size = size
            if sum(free_per_numa.get(i, 0) for i in ids) < request:
                continue
            found.append((mask_of(ids), size))
    return {"cpu": [TopologyHint(mask, size == min_size) for mask, size in found]}


def allocate(container: Container, best: TopologyHint, topo: CpuTopology, res_reserved: Mapping[str, str],
             free: ResNumaSets) -> ResNumaSets:
    """``Allocate``: the CPUs the container takes, inside the best hint's NUMA nodes first."""
    available = set(free.get("cpu", frozenset())) - topo.reserved(res_reserved)
    request = guaranteed_cpus(container)
    result: set[int] = set()
    if best.affinity is not None:
        aligned = available & topo.cpus_in_numa(best.bits())
        taken = take_by_topology(topo, aligned, min(request, len(aligned)))
        if taken is None:
            return {"cpu": frozenset()}
        result |= taken
    rest = take_by_topology(topo, available - result, request - len(result))
    if rest is None:
        return {"cpu": frozenset()}
    return {"cpu": frozenset(result | rest)}
