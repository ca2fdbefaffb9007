"""A JobFlow's graph: its steps, their dependencies, and the names of the jobs they become.

A ``flow.volcano.sh/v1alpha1`` JobFlow lists ``spec.flows``; each flow names a JobTemplate of
the JobFlow's namespace and, in ``dependsOn.targets``, the flows whose jobs must have completed
before its own job is created. The job of flow ``f`` of JobFlow ``x`` is named ``x-f``
(``getJobName`` in ``pkg/controllers/jobflow``), and it and the JobTemplate's status find each
other through ``<namespace>.<name>`` strings (``GenerateObjectString``).

:func:`flow_steps` reads the flows as upstream's webhook builds its graph map: a flow named
twice counts once, with its last definition, in the position of its first. :func:`dag_problem`
is the webhook's verdict on that graph (``validateJobFlowDAG``): a target that is no flow's
name, else a cycle. Upstream walks a Go map, so which undefined target it names first varies
from call to call; here it is the first in the order of the flows and their targets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "FLOW_NOT_DAG",
    "VERTEX_NOT_DEFINED",
    "FlowStep",
    "dag_problem",
    "flow_job_name",
    "flow_steps",
    "object_string",
    "topological_order",
]

FLOW_NOT_DAG: Final = "jobflow Flow is not DAG"
VERTEX_NOT_DEFINED: Final = "vertex is not defined"


@dataclass(frozen=True, slots=True)
class FlowStep:
    """One flow of a JobFlow: its name (the JobTemplate's), the flows it waits for, and its
    ``dependsOn.probe`` (as written; None without one)."""

    name: str
    targets: tuple[str, ...] = ()
    probe: Mapping[str, Any] | None = field(default=None, compare=False)


def flow_job_name(jobflow: str, flow: str) -> str:
    """The name of the job flow ``flow`` of JobFlow ``jobflow`` creates."""
    return f"{jobflow}-{flow}"


def object_string(namespace: str, name: str) -> str:
    """``GenerateObjectString``: the value of the ``createdByJobFlow`` / ``createdByJobTemplate`` keys."""
    return f"{namespace}.{name}"


def flow_steps(jobflow: Mapping[str, Any]) -> list[FlowStep]:
    """The flows of ``jobflow`` in order (a repeated name once, its last definition wins);
    entries that are not mappings with a string name are skipped."""
    spec = jobflow.get("spec")
    flows = spec.get("flows") if isinstance(spec, Mapping) else None
    steps: dict[str, FlowStep] = {}
    for flow in flows if isinstance(flows, list) else []:
        if not isinstance(flow, Mapping) or not isinstance(flow.get("name"), str):
            continue
        deps = flow.get("dependsOn")
        deps = deps if isinstance(deps, Mapping) else {}
        targets = deps.get("targets")
        probe = deps.get("probe")
        steps[flow["name"]] = FlowStep(
            flow["name"],
            tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
            probe if isinstance(probe, Mapping) else None,
        )
    return list(steps.values())


def dag_problem(steps: Sequence[FlowStep]) -> tuple[str, str] | None:
    """``(step name, message)`` of what makes the flows not a DAG, or None: the webhook's
    ``jobflow Flow is not DAG: vertex is not defined: <target>`` or ``jobflow Flow is not DAG``
    (the step named is then one on a cycle)."""
    names = {s.name for s in steps}
    for s in steps:
        for t in s.targets:
            if t not in names:
                return s.name, f"{FLOW_NOT_DAG}: {VERTEX_NOT_DEFINED}: {t}"
    edges = {s.name: s.targets for s in steps}
    done: set[str] = set()
    for s in steps:
        on_cycle = _cycle_from(s.name, edges, done)
        if on_cycle is not None:
            return on_cycle, FLOW_NOT_DAG
    return None


def _cycle_from(start: str, edges: Mapping[str, Sequence[str]], done: set[str]) -> str | None:
    """A depth-first walk from ``start`` (iterative: a flow may be long); a step on a cycle, or None."""
    path: list[str] = []
    on_path: set[str] = set()
    stack: list[tuple[str, int]] = [(start, 0)]
    while stack:
        node, i = stack.pop()
        if i == 0:
            if node in on_path:
                return node
            if node in done:
                continue
            path.append(node)
            on_path.add(node)
        targets = edges.get(node, ())
        if i < len(targets):
            stack.append((node, i + 1))
            stack.append((targets[i], 0))
            continue
        path.pop()
        on_path.discard(node)
        done.add(node)
    return None


def topological_order(steps: Sequence[FlowStep]) -> list[list[str]]:
    """The steps in layers: each step's layer is one more than its deepest target's (a step
    without targets is in layer 0); within a layer, in flow order. Targets that are no step and
    cycles are ignored (an admitted JobFlow has neither)."""
    by_name = {s.name: s for s in steps}
    depth: dict[str, int] = {}

    def layer(name: str, seen: frozenset[str]) -> int:
        if name in depth:
            return depth[name]
        step = by_name[name]
        inner = [layer(t, seen | {name}) for t in step.targets if t in by_name and t not in seen]
        depth[name] = 1 + max(inner) if inner else 0
        return depth[name]

    for s in steps:
        layer(s.name, frozenset())
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for s in steps:
        layers[depth[s.name]].append(s.name)
    return layers
