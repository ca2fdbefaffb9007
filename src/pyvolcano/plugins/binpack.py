"""binpack plugin (upstream pkg/scheduler/plugins/binpack/binpack.go).

NodeOrder only. For a task and a node, every resource the task requests (``resreq``
dimensions ≥ ε, ``pods`` included) that has a configured weight ``w`` contributes
``w × (request + used) / allocatable``, where ``used`` is the node's Volcano ``Used`` (it
includes releasing tasks, not pipelined ones). A resource the node does not have
(allocatable 0) contributes 0 but its weight still counts; if any weighted resource does not
fit (``request + used > allocatable``) the node scores 0. The score is
``Σ terms / Σ weights × 100 × binpack.weight``.

Arguments (upstream keys): ``binpack.weight`` (1; 0 registers nothing), ``binpack.cpu`` (1),
``binpack.memory`` (1), ``binpack.resources`` (comma-separated extra resource names),
``binpack.resources.<name>`` (1). A negative cpu, memory or resource weight becomes 1.
``binpack.cpu`` / ``binpack.memory`` override ``cpu`` / ``memory`` listed in
``binpack.resources``, as upstream does.

Design: the per-task terms (table dimension, request, weight) and the weight sum are computed
once per task and cached for the session; a score is then a few numpy operations per weighted
resource over the candidate nodes' ``allocatable`` and ``used`` columns. Terms are summed in
the order cpu, memory, then scalar names sorted (upstream iterates a Go map there, so its
float sum order is not fixed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.plugins._scoring import MAX_NODE_SCORE, volcano_resource_term

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "Binpack", "new", "resource_weights"]

NAME: Final = "binpack"
_WEIGHT: Final = "binpack.weight"
_CPU: Final = "binpack.cpu"
_MEMORY: Final = "binpack.memory"
_RESOURCES_KEY: Final = "binpack.resources"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(_WEIGHT), honoured(_CPU), honoured(_MEMORY), honoured(_RESOURCES_KEY),
    honoured(f"{_RESOURCES_KEY}.", prefix=True),
))

# (table dimension or None when no node has it, request, weight) per weighted resource
Terms = tuple[tuple[tuple[int | None, float, int], ...], int]


def resource_weights(args: Arguments) -> dict[str, int]:
    """The per-resource weights (``cpu`` and ``memory`` always present)."""

    def non_negative(key: str) -> int:
        weight = args.get_int(key, 1)
        return 1 if weight < 0 else weight

    weights: dict[str, int] = {}
    for name in args.get_str(_RESOURCES_KEY, "").split(","):
        name = name.strip()
        if name:
            weights[name] = non_negative(f"{_RESOURCES_KEY}.{name}")
    weights[CPU] = non_negative(_CPU)
    weights[MEMORY] = non_negative(_MEMORY)
    return weights


class Binpack:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.weight = args.get_int(_WEIGHT, 1)
        self.resource_weights = resource_weights(args)

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return
        table = ssn.node_table
        weights = self.resource_weights
        scale = float(MAX_NODE_SCORE * self.weight)
        cache: dict[object, Terms] = {}

        def terms_of(task: TaskInfo) -> Terms:
            # Keyed by the request vector: identical replicas share their terms.
            vec = table.task_vector(task)
            terms = cache.get(vec)
            if terms is None:
                req = task.resreq
                names = [n for n in req.resource_names() if n in weights]
                names.sort(key=lambda n: (n not in (CPU, MEMORY), n != CPU, n))
                rows = tuple((table.dim_index.get(n), req.get(n), weights[n]) for n in names)
                terms = cache[vec] = (rows, sum(w for _d, _r, w in rows))
            return terms

        def scalar(rows: tuple[tuple[int | None, float, int], ...], weight_sum: float, i: int) -> float:
            # One node in plain Python: the same float operations as the numpy kernel.
            score = 0.0
            for d, request, weight in rows:
                if d is None or weight == 0:
                    continue
                capacity = float(table.allocatable[d][i])
                if capacity == 0:
                    continue
                used_finally = request + float(table.used[d][i])
                if used_finally > capacity:
                    return 0.0
                score += used_finally * float(weight) / capacity
            if weight_sum > 0:
                score /= weight_sum
            return score * scale

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            rows, weight_sum = terms_of(task)
            if len(idx) <= 4:
                return np.array([scalar(rows, weight_sum, i) for i in idx.tolist()], dtype=np.float64)
            score = np.zeros(len(idx), dtype=np.float64)
            over = np.zeros(len(idx), dtype=bool)
            for d, request, weight in rows:
                if d is None:
                    continue
                term, fails = volcano_resource_term(request, table.used[d][idx], table.allocatable[d][idx],
                                                    weight, most=True)
                score += term
                over |= fails
            if weight_sum > 0:
                score /= weight_sum
            score *= scale
            score[over] = 0.0
            return score

        config_key = (self.weight, tuple(sorted(weights.items())))

        def cache_key(task: TaskInfo) -> tuple[object, ...]:
            # The score depends only on the node's own used/allocatable: cacheable per request.
            return (config_key, table.task_vector(task))

        ssn.add_node_order_fn(NAME, node_order, cache_key=cache_key, projectable=lambda _task: True)

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> Binpack:
    return Binpack(arguments)
