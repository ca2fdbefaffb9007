"""A simulation run as a dashboard source: the views at any instant ``t`` of the run.

:class:`ReportSource` reads the ``run.json`` that ``simulate --report DIR`` writes
(:mod:`pyvolcano.simulator.report.run_data`) and :class:`RunViews` rebuilds the state at ``t``
from it, in the shapes of the cluster views (:mod:`.queues`, :mod:`.jobs`, :mod:`.job_detail`,
:mod:`.nodes`), with what a run records:

* queues — the sample in force at ``t`` (the last one at or before it): allocated and deserved
  GPUs (proportion's, as the simulator sampled them) and allocated cores; the running and
  pending jobs at ``t`` from the jobs' times; a run records no queue guarantee or capability,
  so ``guarantee`` is None and ``capability`` is the cluster's capacity (the bars' scale);
* jobs — every job submitted by ``t``: Pending before its start, Running until its end, then
  its final phase; a pending job's ``start`` is when it really started in the run (None if it
  never did, with the reason of its last session), its position the order of submission among
  the jobs pending in its queue;
* job page — the job's row, its pods with the node each was on and when, and for a job that
  never started its last diagnosis' reason code and hint;
* nodes — each node's GPUs in use by the pods on it at ``t`` (whole GPUs first, then the
  fractional shares), grouped by HyperNode as recorded, with the sample's fragmentation figures;
* workflows — the run's JobFlows and CronJobs with each step's phase at ``t``
  (:func:`~pyvolcano.dashboard.workflows.run_workflows_view`).

``t`` defaults to the end of the run; values outside ``[0, end]`` are clamped. The page opens
at :func:`busiest_moment` instead (the end of a run that drained is an empty cluster): the first
sample with the most GPUs allocated; without GPUs, the most cores, else the most running jobs.
It is a function of the samples alone, so the same run always opens at the same instant.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyvolcano.dashboard.nodes import group_nodes
from pyvolcano.dashboard.sources import SourceError, Unchanging
from pyvolcano.dashboard.workflows import run_workflows_view
from pyvolcano.simulator.report.run_data import RUN_DATA_FILE, RUN_DATA_VERSION
from pyvolcano.store.base import Store, to_rfc3339

__all__ = ["MAX_TIMELINE_POINTS", "BusiestMoment", "ReportSource", "RunViews", "busiest_moment"]

MAX_TIMELINE_POINTS = 2000
GPU = "nvidia.com/gpu"
FINAL = {"Completed", "Failed", "Terminated", "Aborted"}


@dataclass(frozen=True, slots=True)
class BusiestMoment:
    """Where a run is busiest: the instant ``t``, the sampled series it was judged by
    (``gpu_allocated``, ``cpu_allocated`` or ``running_jobs``; ``end`` for a run with no sample
    where anything ran) and that series' value there."""

    t: float
    measure: str
    value: float

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "measure": self.measure, "value": self.value}


_BUSY_MEASURES = ("gpu_allocated", "cpu_allocated", "running_jobs")


def busiest_moment(samples: dict[str, Any], end: float) -> BusiestMoment:
    """The first sample with the highest value of the first measure that is ever above zero
    (:data:`_BUSY_MEASURES` in order); ``end`` when none is."""
    times = samples.get("t") or []
    for measure in _BUSY_MEASURES:
        values = samples.get(measure) or []
        best_i, best = -1, 0.0
        for i, v in enumerate(values[:len(times)]):
            if v is not None and v > best:  # strictly greater: ties keep the earliest
                best_i, best = i, float(v)
        if best_i >= 0:
            return BusiestMoment(float(times[best_i]), measure, best)
    return BusiestMoment(end, "end", 0.0)


def _rows(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*(columns[n] for n in names), strict=True)]


class RunViews:
    """The views of a run at ``t``."""

    def __init__(self, data: dict[str, Any], t: float):
        self.data = data
        self.t = t
        samples = data["samples"]
        self.index = bisect.bisect_right(samples["t"], t) - 1  # the sample in force at t (-1: none yet)

    # ------------------------------------------------------------------ jobs
    def _job_rows(self) -> list[dict[str, Any]]:
        t = self.t
        rows = []
        for j in _rows(self.data["jobs"]):
            if j["submit"] > t:
                continue
            started = j["start"] is not None and j["start"] <= t
            ended = j["end"] is not None and j["end"] <= t
            phase = (j["phase"] if j["phase"] in FINAL else "Completed") if ended else (
                "Running" if started else "Pending")
            ns, _, name = j["key"].partition("/")
            pending = phase == "Pending"
            never = j["start"] is None
            rows.append({
                "key": j["key"], "namespace": ns, "name": name, "job": name, "queue": j["queue"], "phase": phase,
                "min_member": j["pods"], "age_seconds": round(t - j["submit"], 3),
                "reason": (j["pending_reason"] or None) if pending and never else None,
                "hint": (j["pending_hint"] or None) if pending and never else None,
                "position": None, "queue_position": None,
                "start": to_rfc3339(j["start"]) if pending and not never else None,
                "start_in_seconds": round(j["start"] - t, 3) if pending and not never else None,
                "start_message": ("never started in the run" if never else "started then in the run") if pending
                else None,
                "gpus": j["gpus"], "submit": j["submit"], "started": j["start"], "ended": j["end"],
            })
        waiting = sorted((r for r in rows if r["phase"] == "Pending"), key=lambda r: (r["submit"], r["key"]))
        per_queue: dict[str, int] = {}
        for i, r in enumerate(waiting, start=1):
            per_queue[r["queue"]] = per_queue.get(r["queue"], 0) + 1
            r["position"], r["queue_position"] = i, per_queue[r["queue"]]
        return sorted(rows, key=lambda r: r["key"])

    def jobs(self) -> dict[str, Any]:
        return {"now": to_rfc3339(self.t), "jobs": self._job_rows()}

    def job(self, key: str) -> dict[str, Any] | None:
        row = next((r for r in self._job_rows() if r["key"] == key), None)
        if row is None:
            return None
        t = self.t
        pods = []
        for p in _rows(self.data["pods"]):
            if p["job"] != key or p["start"] > t:
                continue
            on = p["end"] is None or p["end"] > t
            pods.append({"name": p["key"].partition("/")[2], "namespace": row["namespace"], "role": "",
                         "status": "Running" if on else "Ended", "phase": "Running" if on else "Ended",
                         "node": p["node"], "requests": {k: v for k, v in (("cpu", p["cpu"]), (GPU, p["gpu"])) if v},
                         "start": p["start"], "end": p["end"]})
        diagnosis = None
        if row["reason"]:
            diagnosis = {"stage": None, "reason": row["reason"], "message": "the job's last session in the run",
                         "hint": row["hint"], "tasks": None, "task": None, "resources": [], "node_failures": {},
                         "preemption": None}
        return {"key": key, "row": row, "min_member": row["min_member"], "phase": row["phase"], "queue": row["queue"],
                "annotations": {}, "diagnosis": diagnosis, "pods": pods,
                "nodes": sorted({p["node"] for p in pods if p["status"] == "Running"}), "conditions": [], "events": []}

    # ------------------------------------------------------------------ workflows
    def workflows(self) -> dict[str, Any]:
        jobs = {j["key"]: j for j in _rows(self.data["jobs"])}
        return run_workflows_view(self.data.get("workflows") or [], jobs, self.t)

    # ------------------------------------------------------------------ queues
    def queues(self) -> dict[str, Any]:
        rows = self._job_rows()
        samples = self.data["samples"]
        i = self.index
        specs = _rows(self.data["queues"])
        names = {q["name"] for q in specs}
        parent_of = {q["name"]: (q["parent"] or ("root" if "root" in names and q["name"] != "root" else None))
                     for q in specs}
        parent_of = {n: (p if p in names else None) for n, p in parent_of.items()}
        children: dict[str | None, list[str]] = {}
        for name in sorted(names):
            children.setdefault(parent_of[name], []).append(name)
        by_name = {q["name"]: q for q in specs}
        out: list[dict[str, Any]] = []

        def figure(q: str, column: str) -> float | None:
            series = samples["queues"].get(q)
            if series is None or i < 0:
                return 0.0 if column != "deserved_gpu" else None
            value: float | None = series[column][i]
            return value

        def visit(name: str, depth: int) -> None:
            q = by_name[name]
            mine = [r for r in rows if r["queue"] == name]
            phases: dict[str, int] = {}
            for r in mine:
                phases[r["phase"]] = phases.get(r["phase"], 0) + 1
            resources = [{"name": "cpu", "allocated": figure(name, "allocated_cpu"), "deserved": None,
                          "guarantee": None, "capability": samples["cpu_capacity"][i] if i >= 0 else None}]
            if any(samples["gpu_capacity"]):
                resources.append({"name": GPU, "allocated": figure(name, "allocated_gpu"),
                                  "deserved": figure(name, "deserved_gpu"), "guarantee": None,
                                  "capability": samples["gpu_capacity"][i] if i >= 0 else None})
            out.append({"name": name, "parent": parent_of[name], "depth": depth, "children": children.get(name, []),
                        "state": q["state"], "weight": q["weight"], "priority": 0, "reclaimable": True,
                        "running": phases.get("Running", 0), "pending": phases.get("Pending", 0),
                        "phases": dict(sorted(phases.items())), "resources": resources})
            for child in children.get(name, []):
                visit(child, depth + 1)

        for root in children.get(None, []):
            visit(root, 0)
        return {"queues": out, "plugin": "proportion" if any(
            v is not None for q in samples["queues"].values() for v in q["deserved_gpu"]) else None}

    # ------------------------------------------------------------------ nodes
    def nodes(self) -> dict[str, Any]:
        t = self.t
        on: dict[str, list[float]] = {}
        cpu_on: dict[str, float] = {}
        pods_on: dict[str, int] = {}
        for p in _rows(self.data["pods"]):
            if p["start"] <= t and (p["end"] is None or p["end"] > t):
                on.setdefault(p["node"], []).append(p["gpu"])
                cpu_on[p["node"]] = cpu_on.get(p["node"], 0.0) + p["cpu"]
                pods_on[p["node"]] = pods_on.get(p["node"], 0) + 1
        rows = []
        paths: dict[str, list[str]] = {}
        for n in _rows(self.data["nodes"]):
            used = [0] * n["gpus"]
            holders = [0] * n["gpus"]
            gpus = sorted(on.get(n["name"], []), reverse=True)
            slot = 0
            for g in gpus:  # whole GPUs one per slot, then shares packed first-fit
                whole, part = int(g), round((g - int(g)) * 1000)
                for _ in range(whole):
                    while slot < len(used) and used[slot]:
                        slot += 1
                    if slot < len(used):
                        used[slot], holders[slot] = 1000, holders[slot] + 1
                if part:
                    k = next((k for k in range(len(used)) if used[k] + part <= 1000), None)
                    if k is not None:
                        used[k] += part
                        holders[k] += 1
            total = sum(used) / 1000
            paths[n["name"]] = list(n["hypernodes"])
            rows.append({
                "name": n["name"], "gpu_model": n["gpu_model"] or None, "gpu_count": n["gpus"], "gpu_memory": None,
                "gpus": [{"index": k, "used": used[k], "memory_used": 0, "holders": holders[k], "healthy": True}
                         for k in range(n["gpus"])],
                "gpu_allocated": round(total, 3), "gpu_free": round(n["gpus"] - total, 3),
                "gpu_free_whole": sum(1 for u in used if u == 0),
                "shared": any(0 < u < 1000 or h > 1 for u, h in zip(used, holders, strict=True)),
                "cpu": {"allocatable": n["cpu"], "used": round(cpu_on.get(n["name"], 0.0), 3)},
                "memory": {"allocatable": None, "used": None}, "pods": pods_on.get(n["name"], 0),
                "unschedulable": False, "hypernodes": paths[n["name"]],
            })
        s = self.data["samples"]
        i = self.index
        frag = {
            "gpu_capacity": s["gpu_capacity"][i] if i >= 0 else sum(n["gpus"] for n in rows),
            "gpu_allocated": s["gpu_allocated"][i] if i >= 0 else 0.0,
            "gpu_idle": round((s["gpu_capacity"][i] - s["gpu_allocated"][i]) if i >= 0 else 0.0, 3),
            "gpu_fragmentation": s["gpu_fragmentation"][i] if i >= 0 else 0.0,
            "topology_fragmentation": (s["topology_fragmentation"] or [None] * (i + 1))[i] if i >= 0 and
            s["topology_fragmentation"] else None,
            "fragmented_domains": (s["fragmented_domains"] or [None] * (i + 1))[i] if i >= 0 and
            s["fragmented_domains"] else None,
        }
        groups = group_nodes([r["name"] for r in rows], paths, self.data["hypernode_tiers"]) if self.data[
            "topology"] else []
        return {"nodes": rows, "groups": groups, "fragmentation": frag}


class ReportSource(Unchanging):
    """``--report DIR``: the run in ``DIR/run.json``."""

    kind = "report"

    def __init__(self, directory: str | Path):
        d = Path(directory)
        if not d.is_dir():
            raise SourceError(f"--report {d}: no such directory (expected what `pyvolcano simulate --report DIR` "
                              "writes)")
        path = d / RUN_DATA_FILE
        if not path.is_file():
            raise SourceError(f"--report {d}: no {RUN_DATA_FILE}, the run data the dashboard reads; run `pyvolcano "
                              f"simulate --report {d}` again with this version")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SourceError(f"{path}: not readable as JSON ({e})") from None
        if not isinstance(data, dict) or data.get("version") != RUN_DATA_VERSION:
            raise SourceError(f"{path}: version {data.get('version') if isinstance(data, dict) else None!r}; "
                              f"expected {RUN_DATA_VERSION} (run `pyvolcano simulate --report {d}` again)")
        self.data = data
        self.name = f"{d.name or d} ({data.get('name')}, {data.get('config')}, seed {data.get('seed')})"
        self.end = float(data.get("end") or 0.0)
        self.busiest = busiest_moment(data["samples"], self.end)

    def views(self, t: float | None = None) -> RunViews:
        at = self.end if t is None or not math.isfinite(t) else min(max(t, 0.0), self.end)
        return RunViews(self.data, at)

    def timeline(self) -> dict[str, Any]:
        """The run's series, at most :data:`MAX_TIMELINE_POINTS` samples (evenly picked, the last kept)."""
        s = self.data["samples"]
        n = len(s["t"])
        step = max(1, math.ceil(n / MAX_TIMELINE_POINTS))
        picks = list(range(0, n, step))
        if n and picks[-1] != n - 1:
            picks.append(n - 1)

        def take(values: list[Any] | None) -> list[Any] | None:
            return None if values is None else [values[i] for i in picks]

        cap = s["gpu_capacity"]
        share = {q: [(v / cap[i]) if cap[i] else None for i, v in enumerate(series["allocated_gpu"])]
                 for q, series in s["queues"].items()}
        return {
            "t": take(s["t"]), "gpu_allocated": take(s["gpu_allocated"]), "gpu_capacity": take(cap),
            "gpu_fragmentation": take(s["gpu_fragmentation"]), "pending_jobs": take(s["pending_jobs"]),
            "running_jobs": take(s["running_jobs"]), "topology_fragmentation": take(s["topology_fragmentation"]),
            "queue_share": {q: take(v) for q, v in share.items()},
        }

    def meta(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "notes": [], "start": 0.0, "end": self.end,
                "end_reason": self.data.get("end_reason"), "busiest": self.busiest.to_json()}

    def writer(self) -> Store | None:
        return None

    def close(self) -> None:
        pass
