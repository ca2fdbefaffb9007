"""resource-strategy-fit plugin (upstream pkg/scheduler/plugins/resource-strategy-fit/).

Three parts, as upstream (``resource_strategy_fit.go``, ``sra.go``, ``proportional.go``):

Resource strategy score (NodeOrder, when ``resourceStrategyFitWeight`` > 0)
    For each resource the task requests (``resreq`` dimensions ≥ ε, ``pods`` included) that
    has a strategy, ``MostAllocated`` contributes ``(request + used) × w / allocatable`` and
    ``LeastAllocated`` ``(allocatable − request − used) × w / allocatable``; allocatable 0 or
    weight 0 contributes 0 (the weight still counts); a resource that does not fit
    (``request + used > allocatable``) zeroes the node. Score =
    ``Σ terms / Σ w × 100 × resourceStrategyFitWeight`` (no division when ``Σ w ≤ 0``).
    The strategy of a resource is the ``resources`` entry with its exact name, else the
    wildcard entry (``prefix*``) with the longest matching prefix. A pod annotation
    ``volcano.sh/resource-strategy-scoring-type`` replaces all of that for the pod: its
    value is the strategy for every resource and ``volcano.sh/resource-strategy-weight``
    (a JSON object ``{"cpu": 2, ...}``) gives the weights; a missing weight annotation or
    invalid JSON scores 0 everywhere; an unknown strategy name contributes 0 per resource
    while its weight still counts.

SRA — scarce resource avoidance (NodeOrder, when ``sra.enable`` and ``sra.weight`` > 0)
    A node lacking (allocatable 0) any resource the task requests scores 0. Otherwise
    ``(1 − Σ_{scarce r on node} w_r / Σ w_r) × 100 × sra.weight``: nodes without the scarce
    resources are preferred for pods that do not need them.

Proportional (Predicate, when ``proportional.enable``)
    A task requesting none of the listed scarce resources may use a node only if, for every
    listed resource ``r`` the node has, the node's idle cpu and memory minus the task's request
    stay at or above ``idle_r × rate`` (cpu ``<r>.cpu`` cores per unit, memory ``<r>.memory``
    GB (10⁹ bytes) per unit; rates default to 1). Failure is UnschedulableAndUnresolvable
    ``proportional of resource <r> check failed``.

Arguments::

    resourceStrategyFitWeight: 10          # missing or negative => 10; 0 disables the score
    resources:                             # missing or empty => cpu and memory LeastAllocated, weight 1
      nvidia.com/gpu: {type: MostAllocated, weight: 2}
      example.com/*: {type: LeastAllocated, weight: 1}
    sra: {enable: true, resources: "nvidia.com/gpu", weight: 10, resourceWeight: {nvidia.com/gpu: 1}}
    proportional: {enable: true, resources: "nvidia.com/gpu",
                   resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 8}}

Invalid wildcard patterns (``*`` alone, a ``*`` not at the end, more than one ``*``) are
dropped; a weight ≤ 0 becomes 1; a type other than LeastAllocated/MostAllocated becomes
LeastAllocated. Field names inside the nested mappings match case-insensitively (upstream
decodes them with mapstructure).

Design: per-task terms (table dimension, request, weight, strategy) are resolved once per
task and cached for the session; scores are numpy operations over the candidate nodes'
``allocatable``/``used``/``idle`` columns. Where upstream iterates Go maps (scalar resources,
proportional resources) we iterate in sorted name order; this only changes the last bits of a
float sum or which of several failing resources a message names.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.plugins._scoring import MAX_NODE_SCORE, volcano_resource_term

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures

__all__ = ["ARGUMENTS", "NAME", "Proportion", "ResourceStrategyFit", "Sra", "Strategy", "new"]

NAME: Final = "resource-strategy-fit"
DEFAULT_WEIGHT: Final = 10
LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
SCORING_TYPE_ANNOTATION: Final = "volcano.sh/resource-strategy-scoring-type"
SCORING_WEIGHT_ANNOTATION: Final = "volcano.sh/resource-strategy-weight"
_OWNER: Final = f"plugin {NAME}"
_WEIGHT: Final = "resourceStrategyFitWeight"
ARGUMENTS: Final = ArgumentKeys(_OWNER, (honoured(_WEIGHT), honoured("resources"), honoured("sra"),
                                         honoured("proportional")))

# (table dimension or None, request, weight, most: True/False/None for an unknown strategy)
Row = tuple[int | None, float, int, bool | None]


@dataclass(frozen=True, slots=True)
class Strategy:
    type: str
    weight: int


@dataclass(frozen=True, slots=True)
class Sra:
    weight: int
    resources: tuple[tuple[str, int], ...]

    @property
    def weight_sum(self) -> int:
        return sum(w for _n, w in self.resources)


@dataclass(frozen=True, slots=True)
class Proportion:
    resource: str
    cpu: float
    memory: float


# ----------------------------------------------------------------------------- arguments


def _not_a_mapping(raw: Any, path: str) -> ArgumentError:
    return ArgumentError.bad(_OWNER, path, f"got {raw!r} ({type(raw).__name__})", "a mapping")


def _fields(raw: Any, path: str, names: tuple[str, ...]) -> Arguments:
    """Typed access to a nested mapping decoded like mapstructure decodes a struct: each field
    is the exact key, else a case-insensitive match. Upstream ignores any other key; here it is
    an error naming the closest field, as a typo (``enabel``) would otherwise switch nothing on."""
    if not isinstance(raw, Mapping):
        raise _not_a_mapping(raw, path)
    lowered = {n.lower() for n in names}
    for key in raw:
        if not isinstance(key, str) or key.lower() not in lowered:
            close = difflib.get_close_matches(str(key), list(names), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problem = f"{_OWNER}: {path}: unknown field {key!r}"
            expected = f"one of {', '.join(names)}{hint}"
            raise ArgumentError(f"{problem}; expected {expected}", problem=problem, expected=expected)
    picked: dict[str, Any] = {}
    for name in names:
        if name in raw:
            picked[name] = raw[name]
            continue
        for key in sorted(k for k in raw if isinstance(k, str)):
            if key.lower() == name.lower():
                picked[name] = raw[key]
                break
    return Arguments(picked, owner=_OWNER, within=path)


def _mapping(raw: Any, path: str) -> Arguments:
    if not isinstance(raw, Mapping):
        raise _not_a_mapping(raw, path)
    return Arguments(raw, owner=_OWNER, within=path)


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def valid_wildcard_pattern(pattern: str) -> bool:
    """Only a single trailing ``*`` after a non-empty prefix is a valid pattern."""
    if "*" not in pattern:
        return True
    return pattern != "*" and pattern.endswith("*") and pattern.count("*") == 1


def parse_strategies(args: Arguments) -> dict[str, Strategy]:
    raw = args.get_mapping("resources")
    if not raw:
        return {CPU: Strategy(LEAST_ALLOCATED, 1), MEMORY: Strategy(LEAST_ALLOCATED, 1)}
    out: dict[str, Strategy] = {}
    for name in sorted(raw):
        if not valid_wildcard_pattern(name):
            continue
        entry = _fields(raw[name], f"resources.{name}", ("type", "weight"))
        typ = entry.get_str("type", "")
        weight = entry.get_int("weight", 0)
        out[name] = Strategy(typ if typ in (LEAST_ALLOCATED, MOST_ALLOCATED) else LEAST_ALLOCATED,
                             weight if weight > 0 else 1)
    return out


def parse_sra(args: Arguments) -> Sra | None:
    raw = args.raw.get("sra")
    if raw is None:
        return None
    cfg = _fields(raw, "sra", ("enable", "resources", "weight", "resourceWeight"))
    if not cfg.get_bool("enable", False):
        return None
    per = _mapping(cfg.get_mapping("resourceWeight") or {}, "sra.resourceWeight")
    resources: dict[str, int] = {}
    for name in _names(cfg.get_str("resources", "")):
        weight = per.get_int(name, 1)
        resources[name] = 1 if weight < 0 else weight
    return Sra(cfg.get_int("weight", 0), tuple(resources.items()))


def parse_proportional(args: Arguments) -> tuple[Proportion, ...] | None:
    raw = args.raw.get("proportional")
    if raw is None:
        return None
    cfg = _fields(raw, "proportional", ("enable", "resources", "resourceProportion"))
    if not cfg.get_bool("enable", False):
        return None
    rates = _mapping(cfg.get_mapping("resourceProportion") or {}, "proportional.resourceProportion")
    out: dict[str, Proportion] = {}
    for name in _names(cfg.get_str("resources", "")):
        cpu = rates.get_float(f"{name}.cpu", 1.0)
        mem = rates.get_float(f"{name}.memory", 1.0)
        out[name] = Proportion(name, 1.0 if cpu < 0 else cpu, 1.0 if mem < 0 else mem)
    return tuple(out[n] for n in sorted(out))


def find_strategy(resource: str, strategies: Mapping[str, Strategy]) -> Strategy | None:
    """Exact name first, else the wildcard entry with the longest matching prefix."""
    exact = strategies.get(resource)
    if exact is not None:
        return exact
    best: Strategy | None = None
    best_len = 0
    for pattern, strategy in strategies.items():
        if "*" in pattern:
            prefix = pattern[:-1]
            if resource.startswith(prefix) and len(prefix) > best_len:
                best, best_len = strategy, len(prefix)
    return best


def _pod_level_weights(text: str) -> dict[str, int] | None:
    """The weight annotation as Go's ``json.Unmarshal`` into ``map[ResourceName]int`` sees it."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        return None
    out: dict[str, int] = {}
    for k, v in data.items():
        if v is None:
            out[k] = 0
        elif isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63:
            out[k] = v
        else:
            return None
    return out


# ----------------------------------------------------------------------------- plugin


class ResourceStrategyFit:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        weight = args.get_int(_WEIGHT, DEFAULT_WEIGHT)
        self.weight = DEFAULT_WEIGHT if weight < 0 else weight
        self.strategies = parse_strategies(args)
        self.sra = parse_sra(args)
        self.proportional = parse_proportional(args)

    # ------------------------------------------------------------------ per-task terms
    def _rows(self, task: TaskInfo, dim_index: Mapping[str, int]) -> tuple[tuple[Row, ...], int] | None:
        """The task's scored resources and the weight sum; ``None`` when the pod scores 0 everywhere."""
        req = task.resreq
        names = req.resource_names()
        names.sort(key=lambda n: (n not in (CPU, MEMORY), n != CPU, n))
        annotations = task.pod.annotations
        pod_type = annotations.get(SCORING_TYPE_ANNOTATION, "")
        rows: list[Row] = []
        if pod_type:
            pod_weights = _pod_level_weights(annotations.get(SCORING_WEIGHT_ANNOTATION, "") or "")
            if not annotations.get(SCORING_WEIGHT_ANNOTATION) or pod_weights is None:
                return None
            most = {MOST_ALLOCATED: True, LEAST_ALLOCATED: False}.get(pod_type)
            for n in names:
                if n in pod_weights:
                    rows.append((dim_index.get(n), req.get(n), pod_weights[n], most))
        else:
            for n in names:
                strategy = find_strategy(n, self.strategies)
                if strategy is not None:
                    most = strategy.type == MOST_ALLOCATED
                    rows.append((dim_index.get(n), req.get(n), strategy.weight, most))
        return tuple(rows), sum(r[2] for r in rows)

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        table = ssn.node_table
        rows_cache: dict[str, tuple[tuple[Row, ...], int] | None] = {}
        strategy_scale = float(MAX_NODE_SCORE) * float(self.weight)
        sra = self.sra if self.sra is not None and self.sra.weight > 0 else None

        def rows_of(task: TaskInfo) -> tuple[tuple[Row, ...], int] | None:
            if task.uid not in rows_cache:
                rows_cache[task.uid] = self._rows(task, table.dim_index)
            return rows_cache[task.uid]

        def strategy_score(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            score = np.zeros(len(idx), dtype=np.float64)
            entry = rows_of(task)
            if entry is None:
                return score
            rows, weight_sum = entry
            over = np.zeros(len(idx), dtype=bool)
            for d, request, weight, most in rows:
                if d is None:
                    continue
                term, fails = volcano_resource_term(request, table.used[d][idx], table.allocatable[d][idx],
                                                    weight, most)
                score += term
                over |= fails
            if weight_sum > 0:
                score /= weight_sum
            score *= strategy_scale
            score[over] = 0.0
            return score

        def sra_score(task: TaskInfo, idx: np.ndarray, sra: Sra) -> np.ndarray:
            has_all = np.ones(len(idx), dtype=bool)
            for n in task.resreq.resource_names():
                d = table.dim_index.get(n)
                if d is None:
                    return np.zeros(len(idx), dtype=np.float64)
                has_all &= table.allocatable[d][idx] != 0
            score = np.zeros(len(idx), dtype=np.float64)
            for n, w in sra.resources:
                d = table.dim_index.get(n)
                if d is not None:
                    score += np.where(table.allocatable[d][idx] > 0, float(w), 0.0)
            if sra.weight_sum > 0:
                score /= float(sra.weight_sum)
                score = 1.0 - score
            score *= float(MAX_NODE_SCORE * sra.weight)
            return np.where(has_all, score, 0.0)

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            total = np.zeros(len(idx), dtype=np.float64)
            if self.weight > 0:
                total += strategy_score(task, idx)
            if sra is not None:
                total += sra_score(task, idx, sra)
            return total

        if self.proportional is not None:
            ssn.add_predicate_fn(NAME, self._proportional_predicate(ssn, self.proportional))
        if self.weight > 0 or sra is not None:
            ssn.add_node_order_fn(NAME, node_order)

    @staticmethod
    def _proportional_predicate(ssn: Session, rules: tuple[Proportion, ...]) -> Any:
        table = ssn.node_table

        def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
            req = task.resreq
            if any(req.scalars.get(r.resource, 0.0) > 0 for r in rules):
                return []
            failed = np.zeros(len(idx), dtype=bool)
            out: NodeFailures = []
            cpu_left = table.idle[0][idx] - req.milli_cpu
            mem_left = table.idle[1][idx] - req.memory
            for rule in rules:
                d = table.dim_index.get(rule.resource)
                if d is None:
                    continue
                value = table.idle[d][idx]
                present = table.declared[d][idx] | (value != 0)
                cpu_reserved = value * rule.cpu
                mem_reserved = value * rule.memory * 1000 * 1000
                bad = present & ~failed & ((cpu_left < cpu_reserved) | (mem_left < mem_reserved))
                if bad.any():
                    reason = f"proportional of resource {rule.resource} check failed"
                    out.append((Status(Code.UnschedulableAndUnresolvable, reason), bad))
                    failed |= bad
            return out

        return predicate

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> ResourceStrategyFit:
    return ResourceStrategyFit(arguments)
