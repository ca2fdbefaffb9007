"""Resource vectors with upstream Volcano's arithmetic (pkg/scheduler/api/resource_info.go).

A :class:`Resource` holds ``milli_cpu`` (milli-cores), ``memory`` (bytes) and a map of scalar
resources. Extended resources (``nvidia.com/gpu``, ``rdma/hca``, hugepages, ephemeral storage)
are stored in milli-units, as upstream does; ``pods`` is stored as a whole count.

Almost every comparison tolerates differences below ``MIN_RESOURCE`` (ε = 0.1). Comparisons
that involve scalar dimensions missing on one side take a :class:`DimensionDefault`: ``ZERO``
treats a missing scalar as 0, ``INFINITY`` treats a scalar missing on the right as unbounded
and one missing on the left (but present on the right) as a failure. These rules decide many
queue-quota outcomes, so they are reproduced exactly, including their asymmetries.

Invariant: a ``Resource`` never aliases another's scalar map; ``clone`` is a deep copy.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping

from pyvolcano.api.quantity import milli_value, value

__all__ = [
    "CPU",
    "MEMORY",
    "MIN_RESOURCE",
    "PODS",
    "DimensionDefault",
    "Resource",
    "is_scalar_resource_name",
    "share",
]

MIN_RESOURCE = 0.1
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"


class DimensionDefault(enum.Enum):
    """How a scalar dimension missing on one side of a comparison is treated."""

    ZERO = 0
    INFINITY = -1


@functools.lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """Whether upstream tracks ``name`` as a scalar resource (extended, hugepages, prefixed native)."""
    if name in (PODS, EPHEMERAL_STORAGE):
        return True
    if name.startswith("hugepages-") or name.startswith("attachable-volumes-"):
        return True
    # Extended resources and kubernetes.io/-prefixed native resources both count; quota names
    # such as "requests.nvidia.com/gpu" are not extended resources (IsExtendedResourceName).
    if name.startswith("requests.") and "kubernetes.io/" not in name:
        return False
    return "/" in name


def share(left: float, right: float) -> float:
    """Upstream ``helpers.Share``: ``l/r``; with ``r == 0`` it is 0 when ``l == 0`` else 1."""
    if right == 0:
        return 0.0 if left == 0 else 1.0
    return left / right


def _repeat(x: float, v: float, k: int) -> float:
    """``x`` after ``k`` additions of ``v`` one at a time (float sums are not associative,
    so ``x + k * v`` could differ in the last bit; subtracting ``v`` is adding ``-v``)."""
    if v == 0.0:
        return x + v  # keeps a -0.0 exactly as one addition would
    for _ in range(k):
        x += v
    return x


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


class Resource:
    """A resource vector. Mutating methods return ``self`` so calls can be chained."""

    __slots__ = ("memory", "milli_cpu", "scalars")

    def __init__(self, milli_cpu: float = 0.0, memory: float = 0.0, scalars: Mapping[str, float] | None = None):
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_list(cls, rl: Mapping[str, object] | None) -> Resource:
        """Build from a Kubernetes ResourceList (``{"cpu": "500m", "memory": "1Gi", ...}``).

        Names upstream does not track (no ``/``, not cpu/memory/pods/hugepages) are ignored.
        Raises :class:`~pyvolcano.api.quantity.QuantityError` on a malformed quantity.
        """
        r = cls()
        if not rl:
            return r
        for name, q in rl.items():
            if name == CPU:
                r.milli_cpu += milli_value(q)  # type: ignore[arg-type]
            elif name == MEMORY:
                r.memory += value(q)  # type: ignore[arg-type]
            elif name == PODS:
                r.scalars[PODS] = r.scalars.get(PODS, 0.0) + value(q)  # type: ignore[arg-type]
            elif name.startswith("count/"):
                continue  # upstream NewResource skips quota object counts (IsCountQuota)
            elif is_scalar_resource_name(name):
                r.scalars[name] = r.scalars.get(name, 0.0) + milli_value(q)  # type: ignore[arg-type]
        return r

    @classmethod
    def empty(cls) -> Resource:
        return cls()

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.scalars)

    # ------------------------------------------------------------------ access
    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0.0)

    def set(self, name: str, amount: float) -> None:
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        else:
            self.scalars[name] = amount

    def has(self, name: str) -> bool:
        """Whether the dimension is present (cpu and memory always are)."""
        return name in (CPU, MEMORY) or name in self.scalars

    def dimensions(self) -> list[str]:
        return [CPU, MEMORY, *self.scalars]

    def items(self) -> Iterable[tuple[str, float]]:
        yield CPU, self.milli_cpu
        yield MEMORY, self.memory
        yield from self.scalars.items()

    def resource_names(self) -> list[str]:
        """Dimensions whose value is at least ε (``pods`` included)."""
        names = []
        if self.milli_cpu >= MIN_RESOURCE:
            names.append(CPU)
        if self.memory >= MIN_RESOURCE:
            names.append(MEMORY)
        names.extend(n for n, v in self.scalars.items() if v >= MIN_RESOURCE)
        return names

    def is_empty(self) -> bool:
        """Every dimension below ε, ignoring ``pods``."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for n, v in self.scalars.items() if n != PODS)

    def is_zero(self, name: str) -> bool:
        return self.get(name) < MIN_RESOURCE

    # ------------------------------------------------------------------ arithmetic (in place)
    def add(self, other: Resource) -> Resource:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        for n, v in other.scalars.items():
            self.scalars[n] = self.scalars.get(n, 0.0) + v
        return self

    def sub(self, other: Resource) -> Resource:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        for n, v in other.scalars.items():
            self.scalars[n] = self.scalars.get(n, 0.0) - v
        return self

    def add_times(self, other: Resource, k: int) -> Resource:
        """``add(other)`` ``k`` times, with the same float operations in the same order."""
        if k == 1:
            return self.add(other)
        self.milli_cpu = _repeat(self.milli_cpu, other.milli_cpu, k)
        self.memory = _repeat(self.memory, other.memory, k)
        scalars = self.scalars
        for n, v in other.scalars.items():
            scalars[n] = _repeat(scalars.get(n, 0.0), v, k)
        return self

    def sub_times(self, other: Resource, k: int) -> Resource:
        """``sub(other)`` ``k`` times, with the same float operations in the same order."""
        if k == 1:
            return self.sub(other)
        self.milli_cpu = _repeat(self.milli_cpu, -other.milli_cpu, k)
        self.memory = _repeat(self.memory, -other.memory, k)
        scalars = self.scalars
        for n, v in other.scalars.items():
            scalars[n] = _repeat(scalars.get(n, 0.0), -v, k)
        return self

    def sub_without_assert(self, other: Resource) -> Resource:
        return self.sub(other)

    def multi(self, ratio: float) -> Resource:
        self.milli_cpu *= ratio
        self.memory *= ratio
        for n in self.scalars:
            self.scalars[n] *= ratio
        return self

    def set_max(self, other: Resource) -> Resource:
        """Per-dimension max, union of scalar dimensions (``SetMaxResource``)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        for n, v in other.scalars.items():
            if n in self.scalars:
                self.scalars[n] = max(self.scalars[n], v)
            else:
                self.scalars[n] = v
        return self

    def min_dimension(self, other: Resource, default: DimensionDefault) -> Resource:
        """``MinDimensionResource``: in place per-dimension min.

        Scalars of ``self`` absent in ``other`` become 0 (ZERO) or are kept (INFINITY).
        """
        self.milli_cpu = min(self.milli_cpu, other.milli_cpu)
        self.memory = min(self.memory, other.memory)
        for n, v in list(self.scalars.items()):
            if n in other.scalars:
                self.scalars[n] = min(v, other.scalars[n])
            elif default is DimensionDefault.ZERO:
                self.scalars[n] = 0.0
        return self

    def diff(self, other: Resource) -> tuple[Resource, Resource]:
        """(increased, decreased): positive parts of ``self - other`` and ``other - self``."""
        inc, dec = Resource(), Resource()
        d = self.milli_cpu - other.milli_cpu
        if d > 0:
            inc.milli_cpu = d
        else:
            dec.milli_cpu = -d
        d = self.memory - other.memory
        if d > 0:
            inc.memory = d
        else:
            dec.memory = -d
        for n in {*self.scalars, *other.scalars}:
            d = self.scalars.get(n, 0.0) - other.scalars.get(n, 0.0)
            if d > 0:
                inc.scalars[n] = d
                dec.scalars.setdefault(n, 0.0)
            else:
                dec.scalars[n] = -d
                inc.scalars.setdefault(n, 0.0)
        return inc, dec

    def exceeded_part(self, other: Resource) -> Resource:
        """Per-dimension ``max(self - other, 0)`` over the dimensions of ``self``."""
        out = Resource(max(self.milli_cpu - other.milli_cpu, 0.0), max(self.memory - other.memory, 0.0))
        for n, v in self.scalars.items():
            out.scalars[n] = max(v - other.scalars.get(n, 0.0), 0.0)
        return out

    # ------------------------------------------------------------------ comparisons
    def _scalar_pairs(self, other: Resource, default: DimensionDefault) -> Iterable[tuple[str, float, float]]:
        dv = 0.0 if default is DimensionDefault.ZERO else -1.0
        for n, lv in self.scalars.items():
            yield n, lv, other.scalars.get(n, dv)
        for n, rv in other.scalars.items():
            if n not in self.scalars:
                yield n, dv, rv

    def less_equal(self, other: Resource, default: DimensionDefault = DimensionDefault.ZERO) -> bool:
        """``LessEqual``: ε-tolerant ``self ≤ other`` on every dimension."""
        if not _le(self.milli_cpu, other.milli_cpu) or not _le(self.memory, other.memory):
            return False
        for _n, lv, rv in self._scalar_pairs(other, default):
            if rv == -1:
                continue
            if lv == -1 or not _le(lv, rv):
                return False
        return True

    def less_equal_with_resources_name(
        self, other: Resource, default: DimensionDefault = DimensionDefault.ZERO
    ) -> tuple[bool, list[str]]:
        """Like :meth:`less_equal`, also returning the names of failing dimensions."""
        failed: list[str] = []
        if not _le(self.milli_cpu, other.milli_cpu):
            failed.append(CPU)
        if not _le(self.memory, other.memory):
            failed.append(MEMORY)
        for n, lv, rv in self._scalar_pairs(other, default):
            if rv == -1:
                continue
            if lv == -1 or not _le(lv, rv):
                failed.append(n)
        return not failed, failed

    def less(self, other: Resource, default: DimensionDefault = DimensionDefault.ZERO) -> bool:
        """Strict ``self < other`` on every dimension."""
        if not (self.milli_cpu < other.milli_cpu and self.memory < other.memory):
            return False
        for _n, lv, rv in self._scalar_pairs(other, default):
            if rv == -1:
                continue
            if lv == -1 or not lv < rv:
                return False
        return True

    def less_equal_with_dimension(self, other: Resource, req: Resource | None) -> tuple[bool, list[str]]:
        """``LessEqualWithDimensionAndResourcesName``: only dims where ``req > 0``; strict ``>`` fails.

        ``pods`` is ignored; missing values are 0; no ε.
        """
        if req is None:
            return True, []
        failed: list[str] = []
        if req.milli_cpu > 0 and self.milli_cpu > other.milli_cpu:
            failed.append(CPU)
        if req.memory > 0 and self.memory > other.memory:
            failed.append(MEMORY)
        if self.scalars:
            for n, rv in req.scalars.items():
                if n == PODS or rv <= 0:
                    continue
                if self.scalars.get(n, 0.0) > other.scalars.get(n, 0.0):
                    failed.append(n)
        return not failed, failed

    def less_equal_partly_with_dimension_zero_filtered(self, other: Resource, req: Resource | None) -> bool:
        """True if **any** requested dimension (dropping those where both sides are < ε) has self ≤ other."""
        if req is None:
            return True
        for n in req.resource_names():
            if n == PODS:
                continue
            lv, rv = self.get(n), other.get(n)
            if lv < MIN_RESOURCE and rv < MIN_RESOURCE:
                continue
            if _le(lv, rv):
                return True
        return False

    def greater_partly_with_relevant_dimensions(self, other: Resource, req: Resource | None) -> bool:
        """True if ``self > other`` on a dimension requested by ``req`` that is relevant in ``other``.

        ``pods`` is ignored, as upstream's ``GreaterPartlyWithDimension`` ignores it.
        """
        if req is None:
            return False
        if req.milli_cpu >= MIN_RESOURCE and other.milli_cpu >= MIN_RESOURCE and self.milli_cpu > other.milli_cpu:
            return True
        if req.memory >= MIN_RESOURCE and other.memory >= MIN_RESOURCE and self.memory > other.memory:
            return True
        for n, rv in req.scalars.items():
            if n == PODS or rv < MIN_RESOURCE or n not in other.scalars:
                continue
            if self.scalars.get(n, 0.0) > other.scalars[n]:
                return True
        return False

    def fit_delta(self, other: Resource) -> Resource:
        """``other - self`` per dimension of ``self`` (negative where ``self`` does not fit)."""
        out = Resource(other.milli_cpu - self.milli_cpu, other.memory - self.memory)
        for n, v in self.scalars.items():
            out.scalars[n] = other.scalars.get(n, 0.0) - v
        return out

    # ------------------------------------------------------------------ dunder helpers
    def __add__(self, other: Resource) -> Resource:
        return self.clone().add(other)

    def __sub__(self, other: Resource) -> Resource:
        return self.clone().sub(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        if self.milli_cpu != other.milli_cpu or self.memory != other.memory:
            return False
        return all(self.scalars.get(n, 0.0) == other.scalars.get(n, 0.0) for n in {*self.scalars, *other.scalars})

    def __hash__(self) -> int:  # pragma: no cover - resources are mutable; hashing is not supported
        raise TypeError("Resource is mutable and unhashable")

    def __repr__(self) -> str:
        parts = [f"cpu {self.milli_cpu:g}m", f"memory {self.memory:g}"]
        parts.extend(f"{n} {v:g}" for n, v in sorted(self.scalars.items()))
        return f"Resource<{', '.join(parts)}>"

    def to_dict(self) -> dict[str, float]:
        out = {CPU: self.milli_cpu, MEMORY: self.memory}
        out.update(self.scalars)
        return out
