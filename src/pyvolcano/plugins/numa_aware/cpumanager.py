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
from collections.abc import Callable, Mapping
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
    """``topology.CPUTopology`` over a node's ``cpuDetail``."""

    __slots__ = ("details", "num_cores", "num_cpus", "num_sockets")

    def __init__(self, details: Mapping[int, CpuInfo]):
        self.details = dict(details)
        self.num_cpus = len(self.details)
        self.num_cores = len({(c.socket, c.core) for c in self.details.values()})
        self.num_sockets = len({c.socket for c in self.details.values()})

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0


# CPUDetails helpers (k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology).
def _numa(details: Mapping[int, CpuInfo], cpu: int) -> int:
    info = details.get(cpu)
    return info.numa if info is not None else 0  # a missing CPU reads as the zero CPUInfo


def numa_nodes(details: Mapping[int, CpuInfo]) -> list[int]:
    return sorted({c.numa for c in details.values()})


def cpus_in_numa(details: Mapping[int, CpuInfo], ids: set[int]) -> set[int]:
    return {cpu for cpu, c in details.items() if c.numa in ids}


def _sockets(details: Mapping[int, CpuInfo]) -> set[int]:
    return {c.socket for c in details.values()}


def _cores(details: Mapping[int, CpuInfo]) -> set[int]:
    return {c.core for c in details.values()}


def _cpus_in_sockets(details: Mapping[int, CpuInfo], ids: set[int]) -> set[int]:
    return {cpu for cpu, c in details.items() if c.socket in ids}


def _cpus_in_cores(details: Mapping[int, CpuInfo], ids: set[int]) -> set[int]:
    return {cpu for cpu, c in details.items() if c.core in ids}


def _cores_in_sockets(details: Mapping[int, CpuInfo], ids: set[int]) -> set[int]:
    return {c.core for c in details.values() if c.socket in ids}


def go_insertion_sort(items: list[T], less: Callable[[T, T], bool]) -> None:
    """Go's ``insertionSort_func``, in place (``sort.Slice`` on up to 12 elements)."""
    for i in range(1, len(items)):
        j = i
        while j > 0 and less(items[j], items[j - 1]):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1


class _Accumulator:
    """``cpuAccumulator``: the CPUs taken so far and the free CPUs still described."""

    def __init__(self, topo: CpuTopology, available: set[int], need: int):
        self.topo = topo
        self.details = {cpu: info for cpu, info in topo.details.items() if cpu in available}
        self.need = need
        self.result: set[int] = set()

    def take(self, cpus: set[int]) -> None:
        self.result |= cpus
        self.details = {cpu: info for cpu, info in self.details.items() if cpu not in self.result}
        self.need -= len(cpus)

    def free_sockets(self) -> list[int]:
        return sorted(_sockets(self.details) & self.details.keys())

    def free_cores(self) -> list[int]:
        details = self.details
        free = details.keys()
        socket_ids = sorted(_sockets(details))

        def less(i: int, j: int) -> bool:
            i_cores = _cores_in_sockets(details, {i}) & free
            j_cores = _cores_in_sockets(details, {j}) & free
            return len(i_cores) < len(j_cores) or i < j

        go_insertion_sort(socket_ids, less)
        out: list[int] = []
        for s in socket_ids:
            out.extend(sorted(_cores_in_sockets(details, {s}) & free))
        return out

    def free_cpus(self) -> list[int]:
        full = self.topo.details
        details = self.details
        cores = sorted(_cores(details))

        def socket_of(core: int) -> int:
            return full[min(_cpus_in_cores(full, {core}))].socket

        def less(i: int, j: int) -> bool:
            i_socket, j_socket = socket_of(i), socket_of(j)
            i_colo = len(_cpus_in_sockets(full, {i_socket}) & self.result)
            j_colo = len(_cpus_in_sockets(full, {j_socket}) & self.result)
            i_free = len(_cpus_in_sockets(details, {i_socket}))
            j_free = len(_cpus_in_sockets(details, {j_socket}))
            i_core_free = len(_cpus_in_cores(details, {i}))
            j_core_free = len(_cpus_in_cores(details, {j}))
            return (i_colo > j_colo or i_free < j_free or i_core_free < j_core_free or i_socket < j_socket
                    or i < j)

        go_insertion_sort(cores, less)
        out: list[int] = []
        for core in cores:
            out.extend(sorted(_cpus_in_cores(details, {core})))
        return out

    def needs(self, n: int) -> bool:
        return self.need >= n

    def satisfied(self) -> bool:
        return self.need < 1

    def failed(self) -> bool:
        return self.need > len(self.details)


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
            acc.take(_cpus_in_sockets(acc.details, {s}))
            if acc.satisfied():
                return acc.result
            if not acc.needs(topo.cpus_per_socket()):
                break
    if acc.needs(topo.cpus_per_core()):
        for c in acc.free_cores():
            acc.take(_cpus_in_cores(acc.details, {c}))
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


def _reserved(topo: CpuTopology, res_reserved: Mapping[str, str]) -> set[int]:
    raw = res_reserved.get("cpu")
    if raw is None:
        return set()
    try:
        n = math.ceil(parse_quantity(raw))
    except QuantityError:
        return set()
    taken = take_by_topology(topo, set(topo.details), n)
    return taken if taken is not None else set()


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
    available = set(free["cpu"]) - _reserved(topo, res_reserved)
    details = topo.details
    nodes = numa_nodes(details)
    min_size = len(nodes)
    found: list[tuple[int, int]] = []  # (mask, size)
    for size in range(1, len(nodes) + 1):
        for ids in combinations(nodes, size):
            chosen = set(ids)
            if len(cpus_in_numa(details, chosen)) >= request and size < min_size:
                min_size = size
            matching = sum(1 for c in available if _numa(details, c) in chosen)
            if matching < request:
                continue
            found.append((mask_of(ids), size))
    return {"cpu": [TopologyHint(mask, size == min_size) for mask, size in found]}


def allocate(container: Container, best: TopologyHint, topo: CpuTopology, res_reserved: Mapping[str, str],
             free: ResNumaSets) -> ResNumaSets:
    """``Allocate``: the CPUs the container takes, inside the best hint's NUMA nodes first."""
    available = set(free.get("cpu", frozenset())) - _reserved(topo, res_reserved)
    request = guaranteed_cpus(container)
    result: set[int] = set()
    if best.affinity is not None:
        aligned = available & cpus_in_numa(topo.details, set(best.bits()))
        taken = take_by_topology(topo, aligned, min(request, len(aligned)))
        if taken is None:
            return {"cpu": frozenset()}
        result |= taken
    rest = take_by_topology(topo, available - result, request - len(result))
    if rest is None:
        return {"cpu": frozenset()}
    return {"cpu": frozenset(result | rest)}
