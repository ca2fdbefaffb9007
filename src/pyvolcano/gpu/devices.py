"""GPU devices: node inventories, pod GPU demands and the per-GPU ledger.

Mirrors upstream ``pkg/scheduler/api/devices/nvidia/gpushare`` (``device_info.go``,
``share.go``) for Volcano's shared forms, and extends it with the forms GPU-sharing
schedulers need (the FGD paper's "GPU milli" share and GPU-model constraints).

What a node has (:func:`node_gpus`):

* GPU count: allocatable ``nvidia.com/gpu``, else capacity ``volcano.sh/gpu-number``.
  GPU indices listed in the node annotation ``volcano.sh/gpu-unhealthy-ids`` are left out.
* GPU model: the label ``nvidia.com/gpu.product`` (GPU feature discovery), ``""`` if absent.
* Memory per GPU: capacity ``volcano.sh/gpu-memory`` / ``volcano.sh/gpu-number`` as
  upstream, else the label ``nvidia.com/gpu.memory`` (MiB), else unknown (0).

What a pod asks for (:func:`pod_demand`), first match wins:

1. ``nvidia.com/gpu: N`` — N whole GPUs (WHOLE).
2. ``volcano.sh/gpu-number: N`` (limits) — N whole cards (NUMBER, upstream gpu-number).
3. ``volcano.sh/gpu-memory: M`` (limits) — M memory on one card (MEMORY, upstream gpushare).
4. annotation ``pyvolcano.io/gpu-milli: "460"`` — 460/1000 of one GPU (SHARE); ``"1000"``
   means one whole GPU. This is the openb trace's ``gpu_milli``.

Container values combine as upstream: the sum over containers, or the largest init
container if that is larger. The annotation ``pyvolcano.io/gpu-models: "V100M16|V100M32"``
restricts any GPU demand to nodes whose ``nvidia.com/gpu.product`` is one of the names.

The ledger (:class:`GpuLedger`) holds, for every node row, per-GPU used milli, used memory
and holder count, plus derived per-node columns (free milli per GPU, fully free GPUs,
largest free share, total free milli, GPU-share "affinity" tag counts) that vectorised
predicates and scorers read. A pod's use of a GPU is recorded in both units: a share pod of
x milli also uses ``x × memory / 1000`` of the card's memory, and a memory pod of M also
uses ``ceil(M × 1000 / memory)`` milli, so mixed cards stay consistent.

Invariants: ``free = clip(1000 − used, 0, 1000)`` on present GPUs and 0 on absent slots;
a GPU is handed out only if it fits, so ``used ≤ 1000`` for every placement this module
makes (records read from pods' ``volcano.sh/gpu-index`` may exceed it; ``free`` is clamped
as upstream clamps card memory); ``version[i]`` increases whenever row ``i`` changes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from pyvolcano.api.objects import Container, Node, Pod
from pyvolcano.api.quantity import QuantityError, value
from pyvolcano.util.numbers import parse_int

__all__ = [
    "GPU_INDEX_ANNOTATION",
    "GPU_MEMORY_LABEL",
    "GPU_MILLI_ANNOTATION",
    "GPU_MODELS_ANNOTATION",
    "GPU_PRODUCT_LABEL",
    "MILLI",
    "NO_GPU",
    "NVIDIA_GPU",
    "PREDICATE_TIME_ANNOTATION",
    "TAG_COLUMNS",
    "UNHEALTHY_GPU_ANNOTATION",
    "VOLCANO_GPU_MEMORY",
    "VOLCANO_GPU_NUMBER",
    "Assignment",
    "DemandKind",
    "GpuDemand",
    "GpuLedger",
    "NodeGpus",
    "format_gpu_index",
    "node_gpus",
    "parse_gpu_index",
    "pod_demand",
]

MILLI: Final = 1000
NVIDIA_GPU: Final = "nvidia.com/gpu"
VOLCANO_GPU_MEMORY: Final = "volcano.sh/gpu-memory"
VOLCANO_GPU_NUMBER: Final = "volcano.sh/gpu-number"
GPU_INDEX_ANNOTATION: Final = "volcano.sh/gpu-index"
PREDICATE_TIME_ANNOTATION: Final = "volcano.sh/predicate-time"
UNHEALTHY_GPU_ANNOTATION: Final = "volcano.sh/gpu-unhealthy-ids"
GPU_MILLI_ANNOTATION: Final = "pyvolcano.io/gpu-milli"
GPU_MODELS_ANNOTATION: Final = "pyvolcano.io/gpu-models"
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL: Final = "nvidia.com/gpu.memory"

# Affinity tags (the FGD artifact's GpuClustering): column 1 = GPU-sharing pods, column 1+k =
# pods of k whole GPUs (k capped at TAG_COLUMNS - 2); column 0 is unused (no GPU).
TAG_COLUMNS: Final = 34


class DemandKind(enum.Enum):
    NONE = "none"
    WHOLE = "whole"
    NUMBER = "number"
    MEMORY = "memory"
    SHARE = "share"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """A pod's GPU demand. Hashable: equal demands share cached verdicts and scores."""

    kind: DemandKind = DemandKind.NONE
    count: int = 0
    milli: int = 0
    memory: int = 0
    models: tuple[str, ...] = ()
    error: str = ""

    @property
    def is_gpu(self) -> bool:
        return self.kind not in (DemandKind.NONE, DemandKind.INVALID)

    @property
    def exclusive(self) -> bool:
        """Whole GPUs: the pod needs ``count`` GPUs nobody else uses."""
        return self.kind in (DemandKind.WHOLE, DemandKind.NUMBER)

    @property
    def shared(self) -> bool:
        """Part of one GPU (a milli share or a memory amount)."""
        return self.kind in (DemandKind.SHARE, DemandKind.MEMORY)

    @property
    def total_milli(self) -> int:
        """GPU milli over all GPUs (memory demands count 0: their milli depends on the card)."""
        return self.count * self.milli

    @property
    def tag(self) -> int:
        """The affinity-tag column (0 for pods without a GPU demand)."""
        if self.shared:
            return 1
        if self.exclusive:
            return 1 + min(self.count, TAG_COLUMNS - 2)
        return 0


NO_GPU = GpuDemand()


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """A node's GPU inventory: slots ``0..count-1`` minus the unhealthy ones."""

    count: int = 0
    model: str = ""
    memory: int = 0
    unhealthy: frozenset[int] = frozenset()

    @property
    def healthy(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.count) if i not in self.unhealthy)


@dataclass(slots=True)
class Assignment:
    """The GPUs a pod holds on a node and what it uses on each."""

    node: int
    gpus: tuple[int, ...]
    milli: int
    memory: int
    tag: int


def _quantity(values: Mapping[str, Any], name: str) -> int:
    raw = values.get(name)
    if raw is None:
        return 0
    try:
        return max(value(raw), 0)
    except QuantityError:
        return 0


def node_gpus(node: Node) -> NodeGpus:
    """The GPU inventory of ``node`` (see the module docstring for the sources)."""
    number = _quantity(node.capacity, VOLCANO_GPU_NUMBER)
    count = _quantity(node.allocatable, NVIDIA_GPU) or number
    if count == 0:
        return NodeGpus()
    memory = 0
    total_memory = _quantity(node.capacity, VOLCANO_GPU_MEMORY)
    if total_memory and number:
        memory = total_memory // number
    elif GPU_MEMORY_LABEL in node.labels:
        try:
            memory = max(int(node.labels[GPU_MEMORY_LABEL]), 0)
        except ValueError:
            memory = 0
    unhealthy: set[int] = set()
    for part in node.annotations.get(UNHEALTHY_GPU_ANNOTATION, "").split(","):
        # Upstream (gpushare/share.go getUnhealthyGPUs): unparsable ids are skipped.
        try:
            unhealthy.add(int(part))
        except ValueError:
            continue
    return NodeGpus(count, node.labels.get(GPU_PRODUCT_LABEL, ""), memory, frozenset(unhealthy))


def _container_total(pod: Pod, name: str, *, limits_only: bool) -> int:
    """Upstream getGPUNumberOfPod: Σ containers vs the largest init container."""

    def of(c: Container) -> int:
        if not limits_only and name in c.requests:
            return _quantity(c.requests, name)
        return _quantity(c.limits, name)

    total = sum(of(c) for c in pod.containers)
    init = max((of(c) for c in pod.init_containers), default=0)
    return max(total, init)


def _models(pod: Pod) -> tuple[str, ...]:
    raw = pod.annotations.get(GPU_MODELS_ANNOTATION, "")
    return tuple(sorted({m.strip() for m in raw.split("|") if m.strip()}))


def pod_demand(pod: Pod) -> GpuDemand:
    """The GPU demand of ``pod`` (see the module docstring for the precedence)."""
    models = _models(pod)
    whole = _container_total(pod, NVIDIA_GPU, limits_only=False)
    if whole > 0:
        return GpuDemand(DemandKind.WHOLE, whole, MILLI, models=models)
    number = _container_total(pod, VOLCANO_GPU_NUMBER, limits_only=True)
    if number > 0:
        return GpuDemand(DemandKind.NUMBER, number, MILLI, models=models)
    memory = _container_total(pod, VOLCANO_GPU_MEMORY, limits_only=True)
    if memory > 0:
        return GpuDemand(DemandKind.MEMORY, 1, 0, memory, models)
    raw = pod.annotations.get(GPU_MILLI_ANNOTATION)
    if raw is not None:
        text = raw.strip()
        if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MILLI:
            return GpuDemand(DemandKind.INVALID, error=(
                f"annotation {GPU_MILLI_ANNOTATION}: got {raw!r}; expected an integer 1..{MILLI}"))
        milli = int(text)
        if milli == MILLI:
            return GpuDemand(DemandKind.WHOLE, 1, MILLI, models=models)
        return GpuDemand(DemandKind.SHARE, 1, milli, models=models)
    return NO_GPU


def parse_gpu_index(text: str) -> tuple[int, ...] | None:
    """Upstream ``GetGPUIndex``: comma-separated GPU indices; None if any part is not an integer."""
    try:
        return tuple(parse_int(part.strip()) for part in text.split(","))
    except ValueError:
        return None


def format_gpu_index(gpus: Iterable[int]) -> str:
    return ",".join(str(g) for g in gpus)


class GpuLedger:
    """Per-GPU accounting for a list of nodes (row ``i`` = the ``i``-th inventory)."""

    def __init__(self, inventories: Sequence[NodeGpus]):
        n = len(inventories)
        width = max([1, *(inv.count for inv in inventories)])
        self.n = n
        self.width = width
        self.present = np.zeros((n, width), dtype=bool)
        self.used = np.zeros((n, width), dtype=np.int64)
        self.mem_used = np.zeros((n, width), dtype=np.int64)
        self.holders = np.zeros((n, width), dtype=np.int64)
        self.free = np.zeros((n, width), dtype=np.int64)
        self.mem_cap = np.zeros(n, dtype=np.int64)
        self.n_gpus = np.zeros(n, dtype=np.int64)
        self.full = np.zeros(n, dtype=np.int64)
        self.max_free = np.zeros(n, dtype=np.int64)
        self.total_free = np.zeros(n, dtype=np.int64)
        self.tags = np.zeros((n, TAG_COLUMNS), dtype=np.int64)
        self.version = np.zeros(n, dtype=np.int64)
        self.models: list[str] = [""]
        model_ids: dict[str, int] = {"": 0}
        self.model = np.zeros(n, dtype=np.int64)
        for i, inv in enumerate(inventories):
            healthy = [g for g in inv.healthy if g < width]
            self.present[i, healthy] = True
            self.free[i, healthy] = MILLI
            self.mem_cap[i] = inv.memory
            self.n_gpus[i] = len(healthy)
            self.full[i] = len(healthy)
            self.max_free[i] = MILLI if healthy else 0
            self.total_free[i] = MILLI * len(healthy)
            mid = model_ids.get(inv.model)
            if mid is None:
                mid = model_ids[inv.model] = len(self.models)
                self.models.append(inv.model)
            self.model[i] = mid
        self.assignments: dict[str, Assignment] = {}
        self._model_masks: dict[tuple[str, ...], np.ndarray] = {}

    # ------------------------------------------------------------------ queries
    def model_mask(self, models: tuple[str, ...]) -> np.ndarray:
        """Bool per model id: may a pod restricted to ``models`` use that model (empty = any)."""
        mask = self._model_masks.get(models)
        if mask is None:
            if models:
                wanted = set(models)
                mask = np.array([m in wanted for m in self.models], dtype=bool)
            else:
                mask = np.ones(len(self.models), dtype=bool)
            self._model_masks[models] = mask
        return mask

    def share_milli(self, demand: GpuDemand, idx: np.ndarray | int) -> np.ndarray:
        """Per-GPU milli the demand uses on the nodes ``idx`` (memory demands depend on the card)."""
        if demand.kind is not DemandKind.MEMORY:
            return np.full(np.shape(idx), demand.milli, dtype=np.int64)
        cap = self.mem_cap[idx]
        safe = np.maximum(cap, 1)
        return np.where(cap > 0, -(-demand.memory * MILLI // safe), MILLI + 1)

    def fit_mask(self, demand: GpuDemand, idx: np.ndarray) -> np.ndarray:
        """Nodes of ``idx`` with GPUs for ``demand`` (model constraint included)."""
        if not demand.is_gpu:
            return np.full(len(idx), demand.kind is DemandKind.NONE, dtype=bool)
        if demand.exclusive:
            ok = self.full[idx] >= demand.count
        elif demand.kind is DemandKind.SHARE:
            ok = self.max_free[idx] >= demand.milli
        else:
            room = self.mem_cap[idx, None] - self.mem_used[idx]
            ok = ((room >= demand.memory) & self.present[idx]).any(axis=1) & (self.mem_cap[idx] > 0)
        if demand.models:
            ok &= self.model_mask(demand.models)[self.model[idx]]
        return ok

    def fits_on(self, demand: GpuDemand, i: int, gpus: Sequence[int]) -> bool:
        """Whether ``demand`` fits on exactly the GPUs ``gpus`` of node ``i``."""
        if len(gpus) != demand.count or len(set(gpus)) != len(gpus):
            return False
        if any(not 0 <= g < self.width or not self.present[i, g] for g in gpus):
            return False
        if demand.exclusive:
            return all(self.holders[i, g] == 0 for g in gpus)
        if demand.kind is DemandKind.MEMORY:
            return all(self.mem_cap[i] - self.mem_used[i, g] >= demand.memory > 0 for g in gpus)
        return all(self.free[i, g] >= demand.milli for g in gpus)

    def fully_free(self, i: int) -> np.ndarray:
        return np.flatnonzero(self.present[i] & (self.holders[i] == 0))

    def fitting_gpus(self, demand: GpuDemand, i: int) -> np.ndarray:
        """GPU indices of node ``i`` that can take a shared demand."""
        if demand.kind is DemandKind.MEMORY:
            if self.mem_cap[i] <= 0:
                return np.zeros(0, dtype=np.int64)
            return np.flatnonzero(self.present[i] & (self.mem_cap[i] - self.mem_used[i] >= demand.memory))
        return np.flatnonzero(self.free[i] >= demand.milli)

    def exclusive_choice(self, i: int, count: int) -> tuple[int, ...] | None:
        """The first ``count`` fully free GPUs by index (the artifact's AllocateExclusiveGpuId)."""
        free = self.fully_free(i)
        if len(free) < count:
            return None
        return tuple(int(g) for g in free[:count])

    def best_fit_choice(self, demand: GpuDemand, i: int) -> tuple[int, ...] | None:
        """The fitting GPU with the least free milli, lowest index on ties (gpusel "best")."""
        cands = self.fitting_gpus(demand, i)
        if not len(cands):
            return None
        return (int(cands[np.argmin(self.free[i, cands])]),)

    def default_choice(self, demand: GpuDemand, i: int) -> tuple[int, ...] | None:
        """GPUs for ``demand`` on node ``i`` when no placement policy chooses.

        Exclusive: the first free GPUs by index. Memory (upstream gpushare Allocate): the
        lowest-index card that fits. Milli share: the tightest fit.
        """
        if demand.exclusive:
            return self.exclusive_choice(i, demand.count)
        if demand.kind is DemandKind.MEMORY:
            cands = self.fitting_gpus(demand, i)
            return (int(cands[0]),) if len(cands) else None
        if demand.kind is DemandKind.SHARE:
            return self.best_fit_choice(demand, i)
        return None

    # ------------------------------------------------------------------ updates
    def _uses(self, demand: GpuDemand, i: int) -> tuple[int, int]:
        cap = int(self.mem_cap[i])
        if demand.kind is DemandKind.MEMORY:
            milli = -(-demand.memory * MILLI // cap) if cap > 0 else MILLI
            return milli, demand.memory
        return demand.milli, demand.milli * cap // MILLI

    def assign(self, uid: str, i: int, gpus: Sequence[int], demand: GpuDemand) -> Assignment:
        """Record that pod ``uid`` uses ``gpus`` of node ``i`` (replacing an earlier record)."""
        if uid in self.assignments:
            self.release(uid)
        milli, memory = self._uses(demand, i)
        rec = Assignment(i, tuple(int(g) for g in gpus), milli, memory, demand.tag)
        for g in rec.gpus:
            self.used[i, g] += milli
            self.mem_used[i, g] += memory
            self.holders[i, g] += 1
        self.tags[i, rec.tag] += 1
        self.assignments[uid] = rec
        self._refresh(i)
        return rec

    def release(self, uid: str) -> Assignment | None:
        rec = self.assignments.pop(uid, None)
        if rec is None:
            return None
        i = rec.node
        for g in rec.gpus:
            self.used[i, g] -= rec.milli
            self.mem_used[i, g] -= rec.memory
            self.holders[i, g] -= 1
        self.tags[i, rec.tag] -= 1
        self._refresh(i)
        return rec

    def _refresh(self, i: int) -> None:
        present = self.present[i].tolist()
        used = self.used[i].tolist()
        holders = self.holders[i].tolist()
        free = [min(max(MILLI - u, 0), MILLI) if p else 0 for p, u in zip(present, used)]
        self.free[i] = free
        self.full[i] = sum(1 for p, h in zip(present, holders) if p and h == 0)
        self.max_free[i] = max(free)
        self.total_free[i] = sum(free)
        self.version[i] += 1

    # ------------------------------------------------------------------ reporting
    @property
    def capacity_milli(self) -> int:
        return int(self.n_gpus.sum()) * MILLI

    @property
    def allocated_milli(self) -> int:
        return self.capacity_milli - int(self.total_free.sum())
