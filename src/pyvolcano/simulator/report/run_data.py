"""``run.json``: a simulation run's own data, compact, for tools that replay it (the dashboard).

Written next to ``report.html`` by :func:`~pyvolcano.simulator.report.directory.write_report`
(for the first run of a comparison). One JSON object, columns as arrays so that a long run
stays small:

* ``version`` (1), ``name``, ``config``, ``seed``, ``end`` (virtual seconds the run lasted),
  ``end_reason``, ``topology`` (the cluster had HyperNodes);
* ``samples``: the collector's samples (:class:`~pyvolcano.simulator.metrics.Sample`) as
  columns ``t``, ``gpu_allocated``, ``gpu_capacity``, ``cpu_allocated``, ``cpu_capacity``,
  ``gpu_fragmentation``, ``pending_jobs``, ``running_jobs``, ``topology_fragmentation`` and
  ``fragmented_domains`` (null without HyperNodes), and ``queues``: per queue
  ``allocated_gpu``, ``deserved_gpu`` (null where unknown), ``allocated_cpu``;
* ``jobs``: columns ``key``, ``queue``, ``submit``, ``start``, ``end`` (null: never), ``phase``
  (at the end), ``gpus``, ``pods``, ``pending_reason``, ``pending_hint``, ``reason``;
* ``pods``: columns ``key``, ``job``, ``node``, ``start``, ``end``, ``gpu``, ``cpu``
  (:class:`~pyvolcano.simulator.metrics.PodRecord`);
* ``nodes``: columns ``name``, ``gpus``, ``gpu_model``, ``cpu``, ``hypernodes``; ``queues``:
  columns ``name``, ``parent``, ``weight``, ``state``; ``hypernode_tiers``: name → tier;
* ``workflows`` (only when the run had JobFlows or CronJobs): each one as
  :meth:`~pyvolcano.simulator.workflows.Workflow.to_dict` gives it at the end of the run.

A sample holds from its ``t`` until the next one; a job is pending from ``submit`` until
``start``, running until ``end``; a pod is on its node from ``start`` until ``end``. So the
state at any instant is a lookup. The file depends only on the run (no wall-clock figure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyvolcano.simulator.metrics import RunMetrics

__all__ = ["RUN_DATA_FILE", "RUN_DATA_VERSION", "run_data", "write_run_data"]

RUN_DATA_FILE = "run.json"
RUN_DATA_VERSION = 1


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def run_data(run: RunMetrics) -> dict[str, Any]:
    """The run's data as the JSON object described above."""
    samples = sorted(run.samples, key=lambda s: s.t)
    queues = sorted({q for s in samples for q in s.queues})
    out = {
        "version": RUN_DATA_VERSION, "name": run.name, "config": run.config_name, "seed": run.seed,
        "end": _r(run.virtual_seconds), "end_reason": run.end_reason, "topology": run.topology,
        "samples": {
            "t": [_r(s.t) for s in samples],
            "gpu_allocated": [_r(s.gpu_allocated) for s in samples],
            "gpu_capacity": [_r(s.gpu_capacity) for s in samples],
            "cpu_allocated": [_r(s.cpu_allocated) for s in samples],
            "cpu_capacity": [_r(s.cpu_capacity) for s in samples],
            "gpu_fragmentation": [_r(s.gpu_fragmentation) for s in samples],
            "pending_jobs": [s.pending_jobs for s in samples],
            "running_jobs": [s.running_jobs for s in samples],
            "topology_fragmentation": [_r(s.topology_fragmentation) for s in samples] if run.topology else None,
            "fragmented_domains": [s.fragmented_domains for s in samples] if run.topology else None,
            "queues": {q: {
                "allocated_gpu": [_r(s.queues[q].allocated_gpu) if q in s.queues else 0.0 for s in samples],
                "deserved_gpu": [_r(s.queues[q].deserved_gpu) if q in s.queues else None for s in samples],
                "allocated_cpu": [_r(s.queues[q].allocated_cpu) if q in s.queues else 0.0 for s in samples],
            } for q in queues},
        },
        "jobs": {
            "key": [j.key for j in run.jobs], "queue": [j.queue for j in run.jobs],
            "submit": [_r(j.submit) for j in run.jobs], "start": [_r(j.start) for j in run.jobs],
            "end": [_r(j.end) for j in run.jobs], "phase": [j.phase for j in run.jobs],
            "gpus": [_r(j.gpus) for j in run.jobs], "pods": [j.pods for j in run.jobs],
            "pending_reason": [j.pending_reason for j in run.jobs], "pending_hint": [j.pending_hint for j in run.jobs],
            "reason": [j.reason for j in run.jobs],
        },
        "pods": {
            "key": [p.key for p in run.pods], "job": [p.job for p in run.pods], "node": [p.node for p in run.pods],
            "start": [_r(p.start) for p in run.pods], "end": [_r(p.end) for p in run.pods],
            "gpu": [_r(p.gpu) for p in run.pods], "cpu": [_r(p.cpu) for p in run.pods],
        },
        "nodes": {
            "name": [n.name for n in run.nodes], "gpus": [n.gpus for n in run.nodes],
            "gpu_model": [n.gpu_model for n in run.nodes], "cpu": [_r(n.cpu) for n in run.nodes],
            "hypernodes": [list(n.hypernodes) for n in run.nodes],
        },
        "queues": {
            "name": [q.name for q in run.queues], "parent": [q.parent for q in run.queues],
            "weight": [q.weight for q in run.queues], "state": [q.state for q in run.queues],
        },
        "hypernode_tiers": dict(sorted(run.hypernode_tiers.items())),
    }
    if run.workflows:
        out["workflows"] = [w.to_dict() for w in run.workflows]
    return out


def write_run_data(run: RunMetrics, path: Path) -> Path:
    path.write_text(json.dumps(run_data(run), separators=(",", ":"), allow_nan=False), encoding="utf-8")
    return path
