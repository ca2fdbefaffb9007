"""GPU placement policies as scheduler plugins: random, dotprod, gpuclustering, gpupacking,
bestfit, fgd (the FGD paper's six; no upstream Volcano counterpart).

One submodule per plugin name (``pyvolcano.plugins.gpu_policies.fgd`` …) exposes the
registry's ``new(arguments)``; the implementation is shared here.

Each plugin scores nodes with the scorer of the same name in :mod:`pyvolcano.gpu.policies`
(0..100, as the paper artifact's kube-scheduler score plugins) times ``<name>.weight``
(default 1), and chooses the GPU inside the chosen node for a shared pod (random: a random
fitting GPU; fgd: the GPU with the best FGD score; the others: the tightest fit). When
several policies are configured, the one with the highest weight chooses GPUs (the first
configured on a tie); scores add up as for any node-order plugins.

``random`` gives the maximum score to one uniformly random candidate node (the artifact's
PreScore/Score pair), drawn from the session's random generator. ``fgd`` needs a target
workload: the "typical pods" of every task the session knows (pending and placed), covering
``fgd.popularityThreshold`` percent of them (default 95; ``fgd.includeCpuPods``, default
true, counts CPU-only pods); memory-share pods are not part of it.

Ties. Scores are integers, so many nodes tie. Volcano breaks ties uniformly at random; the
paper's simulator gives them to the node first in a fixed (per-run random) order, and that
matters: with random ties CPU-only pods, which FGD scores 50 almost everywhere, spread over
all GPU nodes and starve GPU pods of CPU (FGD falls from 95.3 % to 89.8 % GPU allocation on the
openb trace). With ``<name>.tieBreak: ordered`` (the default) the policy that chooses GPUs
adds a bonus below 0.5 that ranks nodes in a stable pseudo-random order (CRC-32 of the node
name), reproducing the paper; ``random`` leaves ties to Volcano.

GPU state and GPU-fit checks come from the session's shared GPU state
(:mod:`pyvolcano.plugins.gpu_session`); when ``deviceshare`` is not configured, a policy plugin
registers the same GPU predicate itself, so fractional pods never land on a GPU without room.

Scores of every policy but ``random`` depend only on the node's own state and are cached
across sessions per (pod shape, node version) by the session's node-order cache.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKey, ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.gpu.devices import DemandKind, GpuDemand
from pyvolcano.gpu.frag import DEFAULT_POPULARITY_THRESHOLD, node_terms
from pyvolcano.gpu.policies import (
    MAX_NODE_SCORE,
    NodeView,
    Request,
    bestfit_scores,
    dotprod_scores,
    fgd_scores,
    gpuclustering_scores,
    gpupacking_scores,
    random_gpu,
)
from pyvolcano.plugins.gpu_session import SessionGpus

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["BestFit", "DotProd", "Fgd", "GpuClustering", "GpuPacking", "GpuPolicy", "RandomPolicy", "policy_factory",
           "policy_keys"]

DEVICESHARE: Final = "deviceshare"
_SCORERS: Final[dict[str, Callable[[Request, NodeView], np.ndarray]]] = {
    "dotprod": dotprod_scores,
    "gpuclustering": gpuclustering_scores,
    "gpupacking": gpupacking_scores,
    "bestfit": bestfit_scores,
}


def policy_keys(name: str, *extra: ArgumentKey) -> ArgumentKeys:
    """A policy plugin's arguments: ``<name>.weight``, ``<name>.tieBreak`` and its own."""
    return ArgumentKeys(f"plugin {name}", (honoured(f"{name}.weight"), honoured(f"{name}.tieBreak"), *extra))


class GpuPolicy:
    """Shared plumbing: weight argument, GPU predicate fallback, score registration."""

    name: ClassVar[str] = ""
    ARGUMENTS: ClassVar[ArgumentKeys]

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.args = Arguments(arguments, keys=self.ARGUMENTS)
        self.weight = self.args.get_float(f"{self.name}.weight", 1.0)
        self.tie_break = self.args.get_str(f"{self.name}.tieBreak", "ordered")
        if self.tie_break not in ("ordered", "random"):
            raise ArgumentError.bad(f"plugin {self.name}", f"{self.name}.tieBreak", f"got {self.tie_break!r}",
                                    "ordered or random")
        self.session_gpus: SessionGpus | None = None

    def scores(self, gpus: SessionGpus, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        """Integer scores over the candidates (None: nothing to say for this task)."""
        return _SCORERS[self.name](gpus.request(task, idx), gpus.view(idx))

    def cache_key(self, gpus: SessionGpus, task: TaskInfo) -> Hashable | None:
        d = gpus.demand(task)
        return (self.weight, d, gpus.active(d), int(task.nonzero_request()[0]))

    def select(self, gpus: SessionGpus, task: TaskInfo, demand: GpuDemand, i: int) -> tuple[int, ...] | None:
        return gpus.ledger.default_choice(demand, i)

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return
        gpus = SessionGpus.of(ssn, self)
        if DEVICESHARE not in ssn.config.plugin_names():
            gpus.enable(sharing=True, number=True)
            ssn.add_predicate_fn(self.name, gpus.predicate(), cache_key=gpus.predicate_key, batchable=False)
        gpus.install_selector(self.weight, lambda task, d, i: self.select(gpus, task, d, i), self)
        weight = self.weight

        def breaks_ties() -> bool:
            return self.tie_break == "ordered" and gpus.selector_owner is self

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            out = np.zeros(len(idx), dtype=np.float64)
            if gpus.demand(task).kind is not DemandKind.INVALID:
                raw = self.scores(gpus, task, idx)
                if raw is not None:
                    out = raw.astype(np.float64) * weight
            if breaks_ties():
                out += gpus.tie_bonus(idx)
            return out

        def key(task: TaskInfo) -> Hashable | None:
            base = self.cache_key(gpus, task)
            return None if base is None else (base, breaks_ties(), len(ssn.node_list))

        ssn.add_node_order_fn(self.name, node_order, cache_key=key, batchable=False)

    def on_session_close(self, ssn: Session) -> None:
        self.session_gpus = None


class RandomPolicy(GpuPolicy):
    name = "random"
    ARGUMENTS = policy_keys("random")

    def scores(self, gpus: SessionGpus, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        out = np.zeros(len(idx), dtype=np.int64)
        if len(idx):
            out[int(gpus.ssn.rng.integers(len(idx)))] = MAX_NODE_SCORE
        return out

    def cache_key(self, gpus: SessionGpus, task: TaskInfo) -> Hashable | None:
        return None

    def select(self, gpus: SessionGpus, task: TaskInfo, demand: GpuDemand, i: int) -> tuple[int, ...] | None:
        led = gpus.ledger
        if demand.kind is DemandKind.SHARE:
            g = random_gpu(led.free[i], demand.milli, gpus.ssn.rng)
            return None if g is None else (g,)
        if demand.kind is DemandKind.MEMORY:
            cands = led.fitting_gpus(demand, i)
            return (int(cands[int(gpus.ssn.rng.integers(len(cands)))]),) if len(cands) else None
        return led.default_choice(demand, i)


class DotProd(GpuPolicy):
    name = "dotprod"
    ARGUMENTS = policy_keys("dotprod")


class GpuClustering(GpuPolicy):
    name = "gpuclustering"
    ARGUMENTS = policy_keys("gpuclustering")


class GpuPacking(GpuPolicy):
    name = "gpupacking"
    ARGUMENTS = policy_keys("gpupacking")


class BestFit(GpuPolicy):
    name = "bestfit"
    ARGUMENTS = policy_keys("bestfit")


class Fgd(GpuPolicy):
    name = "fgd"
    ARGUMENTS = policy_keys("fgd", honoured("fgd.popularityThreshold"), honoured("fgd.includeCpuPods"))

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        super().__init__(arguments)
        self.threshold = self.args.get_float("fgd.popularityThreshold", DEFAULT_POPULARITY_THRESHOLD)
        self.include_cpu = self.args.get_bool("fgd.includeCpuPods", True)
        if not 0 < self.threshold <= 100:
            raise ArgumentError.bad("plugin fgd", "fgd.popularityThreshold", f"got {self.threshold}",
                                    "a percentage in (0, 100]")

    def _fgd(self, gpus: SessionGpus, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        typ = gpus.typical(self.threshold, self.include_cpu)
        if typ is None:
            return None
        led = gpus.ledger
        acc = typ.accessible(led.models)
        view = gpus.view(idx)
        terms = node_terms(typ, acc, view.free, view.cpu_left, view.model)
        full = NodeView(view.cpu_left, view.free, view.total_free, view.n_gpus, view.model, view.tags, terms)
        return fgd_scores(gpus.request(task, idx), full, typ, acc)

    def scores(self, gpus: SessionGpus, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        out = self._fgd(gpus, task, idx)
        return None if out is None else out[0]

    def cache_key(self, gpus: SessionGpus, task: TaskInfo) -> Hashable | None:
        typ = gpus.typical(self.threshold, self.include_cpu)
        d = gpus.demand(task)
        return (self.weight, d, gpus.active(d), int(task.nonzero_request()[0]), None if typ is None else typ.digest())

    def select(self, gpus: SessionGpus, task: TaskInfo, demand: GpuDemand, i: int) -> tuple[int, ...] | None:
        if demand.shared:
            out = self._fgd(gpus, task, np.array([i], dtype=np.int64))
            if out is not None and out[1][0] >= 0:
                return (int(out[1][0]),)
        return gpus.ledger.default_choice(demand, i)


_POLICIES: Final[dict[str, type[GpuPolicy]]] = {
    cls.name: cls for cls in (RandomPolicy, DotProd, GpuClustering, GpuPacking, BestFit, Fgd)
}


def policy_factory(name: str) -> Callable[[Mapping[str, Any]], GpuPolicy]:
    """The plugin factory for a policy name (``random``, ``dotprod``, … ``fgd``)."""
    return _POLICIES[name]
