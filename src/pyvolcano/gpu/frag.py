"""GPU fragmentation (FGD, USENIX ATC'23) and its target workload, the "typical pods".

Mirrors the paper artifact (hkust-adsl/kubernetes-scheduler-simulator) ``pkg/utils/frag.go``:
``GetTypicalPods``, ``GetNodePodFrag``, ``NodeGpuShareFragAmount`` and
``FragAmountSumExceptQ3``.

Typical pods (:func:`typical_pods`). Pods are reduced to a :class:`PodSpec` (CPU milli,
per-GPU milli, GPU count, allowed models; memory is ignored), counted, and sorted by count,
most popular first (ties: the larger spec first, comparing CPU, milli, count, models). The
most popular specs are taken one by one until they cover ``threshold`` % of all pods (the
paper: 95 %, CPU-only pods included); their weights are their counts.

Fragmentation of a node for one typical pod m (GPU free milli ``f_g`` per GPU):

* m asks for no GPU, or the node's model is not allowed, or fewer than ``count_m`` GPUs
  have ``f_g ≥ milli_m``, or the node's free CPU is below ``cpu_m``: every free GPU milli
  on the node is fragment (``Σ f_g``).
* otherwise ("Q3", m fits): only the GPUs too small for m are fragment
  (``Σ_{f_g < milli_m} f_g``).

Node fragmentation ``F_n = Σ_m p_m · frag_n(m)`` with ``p_m = w_m / W``. It is kept here
as the exact integer ``W · F_n`` (:func:`node_terms`), so equal states give equal values and
differences are exact; divide by ``W`` for milli. Rewriting the rule,
``W · F_n = W · Σ_g f_g − Σ_m w_m · [Q3_m] · Σ_{f_g ≥ milli_m} f_g``; the per-node,
per-typical-pod terms ``cnt_m = #{g: f_g ≥ milli_m}`` and ``sum_m = Σ_{f_g ≥ milli_m} f_g``
are what FGD's score updates incrementally (:mod:`pyvolcano.gpu.policies`).

Invariant: every function here is a pure function of its arrays; nothing is cached across
calls except per-vocabulary model masks inside a :class:`TypicalPods` value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DEFAULT_POPULARITY_THRESHOLD", "NodeTerms", "PodSpec", "TypicalPods", "node_terms", "typical_pods"]

DEFAULT_POPULARITY_THRESHOLD = 95.0


@dataclass(frozen=True, slots=True, order=True)
class PodSpec:
    """A pod's shape as FGD sees it (the artifact's ``PodResource``)."""

    cpu: int
    milli: int
    count: int
    models: tuple[str, ...] = ()

    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.cpu, self.milli, self.count, "|".join(self.models))


@dataclass(frozen=True)
class TypicalPods:
    """The target workload: specs with integer weights (pod counts)."""

    specs: tuple[PodSpec, ...]
    weights: tuple[int, ...]
    cpu: np.ndarray = field(init=False, compare=False, repr=False)
    milli: np.ndarray = field(init=False, compare=False, repr=False)
    count: np.ndarray = field(init=False, compare=False, repr=False)
    weight: np.ndarray = field(init=False, compare=False, repr=False)
    total: int = field(init=False, compare=False, repr=False)
    _acc_cache: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.specs) != len(self.weights):
            raise ValueError("typical pods: specs and weights differ in length")
        if not self.specs or sum(self.weights) <= 0:
            raise ValueError("typical pods: the target workload is empty")
        # Column arrays, built once (the dataclass is frozen).
        for name, values in (("cpu", [s.cpu for s in self.specs]), ("milli", [s.milli for s in self.specs]),
                             ("count", [s.count for s in self.specs]), ("weight", list(self.weights))):
            arr = np.array(values, dtype=np.int64)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "total", sum(self.weights))

    def accessible(self, models: Sequence[str]) -> np.ndarray:
        """Bool ``(len(models), M)``: can typical pod m use a node of model ``models[k]``.

        GPU-less typical pods are accessible everywhere; pods restricted to models cannot
        use a node without a model (``""``).
        """
        key = tuple(models)
        acc = self._acc_cache.get(key)
        if acc is None:
            acc = np.ones((len(key), len(self.specs)), dtype=bool)
            for m, spec in enumerate(self.specs):
                if spec.models:
                    allowed = set(spec.models)
                    acc[:, m] = [name in allowed for name in key]
            self._acc_cache[key] = acc
        return acc

    def digest(self) -> tuple[tuple[PodSpec, int], ...]:
        return tuple(zip(self.specs, self.weights))

    def probabilities(self) -> list[tuple[PodSpec, float]]:
        total = self.total
        return [(s, w / total) for s, w in zip(self.specs, self.weights)]


def typical_pods(
    specs: Iterable[PodSpec], *, threshold: float = DEFAULT_POPULARITY_THRESHOLD, include_cpu: bool = True
) -> TypicalPods:
    """The artifact's ``GetTypicalPods`` (increase step 1, no GPU-resource weighting)."""
    counts = Counter(s for s in specs if include_cpu or s.count > 0)
    if not counts:
        raise ValueError("typical pods: no pods to derive the target workload from")
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0].sort_key()), reverse=True)
    total = sum(counts.values())
    # Upstream (pkg/utils/frag.go GetTypicalPods): a float comparison against threshold% of
    # the total, adding one spec at a time.
    expected = float(threshold) * total / 100.0
    chosen: list[tuple[PodSpec, int]] = []
    cum = 0
    for spec, n in ranked:
        if cum >= expected:
            break
        chosen.append((spec, n))
        cum += n
    return TypicalPods(tuple(s for s, _ in chosen), tuple(n for _, n in chosen))


@dataclass(frozen=True, slots=True)
class NodeTerms:
    """Per-node FGD terms for the typical pods (rows = nodes, columns = typical pods)."""

    cnt: np.ndarray   # (n, M) GPUs with free ≥ milli_m
    big: np.ndarray   # (n, M) Σ free over those GPUs
    frag: np.ndarray  # (n,)  W · F_n


def node_terms(
    typ: TypicalPods, acc: np.ndarray, free: np.ndarray, cpu_left: np.ndarray, model: np.ndarray
) -> NodeTerms:
    """FGD terms for nodes with per-GPU free milli ``free`` (n, G), free CPU and model ids.

    ``acc`` is ``typ.accessible(vocabulary)``; absent GPU slots must hold 0.
    """
    milli = typ.milli
    ge = free[:, :, None] >= milli[None, None, :]
    cnt = ge.sum(axis=1, dtype=np.int64)
    big = (free[:, :, None] * ge).sum(axis=1, dtype=np.int64)
    frag = fragmentation_from(typ, acc, free.sum(axis=1, dtype=np.int64), cpu_left, model, cnt, big)
    return NodeTerms(cnt, big, frag)


def q3_mask(
    typ: TypicalPods, acc: np.ndarray, cpu_left: np.ndarray, model: np.ndarray, cnt: np.ndarray
) -> np.ndarray:
    """Where typical pod m fits the node by CPU, GPU and model (the artifact's Q3)."""
    gpu_pod = typ.milli > 0
    fits_cpu = cpu_left[..., None] >= typ.cpu
    return acc[model] & gpu_pod & (cnt >= typ.count) & fits_cpu


def fragmentation_from(
    typ: TypicalPods,
    acc: np.ndarray,
    total_free: np.ndarray,
    cpu_left: np.ndarray,
    model: np.ndarray,
    cnt: np.ndarray,
    big: np.ndarray,
) -> np.ndarray:
    """``W · F`` from precomputed terms; leading dimensions of the arguments broadcast."""
    q3 = q3_mask(typ, acc, cpu_left, model, cnt)
    saved = (np.where(q3, big, 0) * typ.weight).sum(axis=-1, dtype=np.int64)
    return typ.total * total_free - saved
