"""Experiment: real multi-node gangs on the Lingjun fabric under no, soft and hard network-topology constraints.

    python benchmarks/topology_experiment.py

Workloads (both shipped with pyvolcano, see docs/traces.md): Philly's multi-node jobs and Acme
Kalos' multi-node jobs, each job a gang of whole 8-GPU nodes, keeping the gangs of 2 to 8 pods:
the largest Lingjun rack has 8 hosts, so a larger gang can never be placed under
``highestTierAllowed: 1`` (Philly's three 16-pod jobs and 183 larger Kalos gangs are left out).
Gang sizes, durations and arrival order are the traces'. Their arrivals span three months, at
which pace the fabric would be about 1 % busy and nothing would wait, so each trace's arrivals
are spread over one common window (keeping their order and relative spacing; the two traces
interleave) chosen so that the offered load, Σ GPUs × duration clipped to the window / (window ×
GPUs), is ``--load`` of the fabric's GPUs.

Fabric (``--fabric``): by default the largest aggregation block of the Lingjun fabric,
``agg-p10`` (362 hosts in 48 racks under one aggregation switch and the spine); ``all`` is the
whole fabric (847 hosts, 119 racks, 3 aggregation switches), on which these gangs never contend.
Hosts come from :func:`pyvolcano.simulator.traces.topology.load_topology`, each with 8 GPUs,
128 cores and 2 TiB (Kalos' node size; the topology file has no sizes).

Modes, set on every job as the Volcano Job's ``spec.networkTopology`` (the job controller copies it
to the PodGroup): ``none`` (no field), ``soft`` (``mode: soft``), ``hard`` (``mode: hard,
highestTierAllowed: 1``: the whole gang inside one rack). Every job goes to the ``default``
queue, so that only placement makes a job wait (the traces' queues would add fair-share waits).
Scheduler: upstream's chart configuration (:data:`CONFIG`), plus the ``network-topology-aware``
plugin when the scheduler has it. ``--reservation`` adds the ``reservation`` plugin with
``reservation.maxReservations: 1`` to the first tier, after ``conformance``, as
``examples/recommended.conf`` does (docs/recommended.md), to every run of either scenario; with it
the ``soft, fragmentation-aware`` run's configuration is ``recommended.conf``'s plugins.

A fourth run, ``soft, fragmentation-aware``, is soft mode with network-topology-aware's
``hypernode.fragmentation-aware.enable`` (docs/network-topology.md): among equal-score nodes a
gang takes the racks already in use first, so whole racks stay whole.

``--scenario burst`` asks the question that option answers: the first ``--jobs`` (default 40)
gangs of 2 to 32 pods of each trace (80 gangs) all arrive at once; every gang that fits a rack
(up to 8 pods) is rack-bound (``mode: hard, highestTierAllowed: 1``), the larger ones run under
no constraint, soft mode, or soft mode with the option. It prints, per seed, how many gangs are
placed in the first ``--horizon`` seconds (30: before any job ends, so this is pure packing),
how many of them rack-bound, and the idle GPUs stranded in racks no pending gang can use then.

``--write-sweep DIR`` writes the same experiment as ``pyvolcano sweep`` inputs instead of running
it: the fabric as a CLUSTER.yaml, the stream's gangs under each constraint and the burst's gangs
as WORKLOAD.yaml files, the configurations (upstream's chart + network-topology-aware, with the
fragmentation-aware option, with the reservation plugin, and ``examples/recommended.conf``) and
three sweep files over ``--seeds`` seeds from ``--seed``; it prints the sweep commands, whose
reports ``python benchmarks/recommended.py --summarise REPORT`` tabulates (docs/recommended.md).

Prints one Markdown table (per mode, for all jobs and per trace: jobs, never started, mean and p95 wait, mean
JCT, GPU allocation over the busy window, multi-node jobs inside one rack, mean racks per job,
topology fragmentation) and writes the figure ``--figure`` (default
``docs/img/topology-experiment.png``). The simulator does not slow down a job whose pods are
spread (its run time is the trace's), so JCT differs only by the wait; the spread columns show
the placement itself. Deterministic: the same arguments print the same table.
"""

from __future__ import annotations

import argparse
import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pyvolcano.api.duration import parse_duration_strict
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.metrics import JobMetrics
from pyvolcano.simulator.report.stats import summarize
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.traces import load_trace
from pyvolcano.simulator.traces._common import SUBMIT_AT, Trace, go_duration
from pyvolcano.simulator.traces.topology import load_topology
from pyvolcano.simulator.workload import Submission

MODES: dict[str, dict[str, Any] | None] = {
    "none": None,
    "soft": {"mode": "soft"},
    "hard": {"mode": "hard", "highestTierAllowed": 1},
}
FRAGMENTATION_AWARE = "hypernode.fragmentation-aware.enable"
SOFT_FA = "soft, fragmentation-aware"


@dataclass(frozen=True)
class Variant:
    """One run: the constraint (a key of :data:`MODES`) and whether network-topology-aware keeps racks whole."""

    constraint: str
    fragmentation_aware: bool = False


VARIANTS: dict[str, Variant] = {"none": Variant("none"), "soft": Variant("soft"), SOFT_FA: Variant("soft", True),
                                "hard": Variant("hard")}
BURST_VARIANTS = ("none", "soft", SOFT_FA)
RACK_PODS = 8  # the largest Lingjun rack: a gang of more pods never fits one
BURST_MAX_PODS = 32
WORKLOADS = ("philly", "kalos")
TOPOLOGY_PLUGIN = "network-topology-aware"
GPU = "nvidia.com/gpu"
MIN_PODS, MAX_PODS = 2, 8
LOAD = 1.5


@dataclass(frozen=True)
class Workload:
    traces: list[Trace]
    jobs: list[dict[str, Any]]
    window_s: float
    notes: list[str]


def _pods_and_gpus(job: dict[str, Any]) -> tuple[int, int, float, float]:
    """(pods, GPUs, duration s, submit s) of a trace Job."""
    tasks = job["spec"]["tasks"]
    pods = sum(t["replicas"] for t in tasks)
    gpus = sum(t["replicas"] * int(t["template"]["spec"]["containers"][0]["resources"]["requests"].get(GPU, "0"))
               for t in tasks)
    duration = parse_duration_strict(tasks[0]["template"]["metadata"]["annotations"]["pyvolcano.io/duration"])
    return pods, gpus, duration, parse_duration_strict(job["metadata"]["annotations"][SUBMIT_AT])


def _offered(facts: list[tuple[int, float]], window: float, capacity: int) -> float:
    """Σ GPUs × (duration clipped to the window) / (window × capacity)."""
    return sum(g * min(d, window) for g, d in facts) / (window * capacity)


def workload(formats: list[str], *, load: float, capacity_gpus: int, limit: int | None,
             max_pods: int = MAX_PODS) -> Workload:
    """The 2-8-pod gangs of each trace, every trace's arrivals spread over one window chosen so
    that the offered load is ``load`` (the traces interleave in that window)."""
    picked: list[tuple[dict[str, Any], tuple[int, int, float, float], float, float]] = []
    traces = []
    notes = []
    for fmt in formats:
        trace = load_trace(fmt)
        traces.append(trace)
        gangs = [j for j in trace.jobs if MIN_PODS <= sum(t["replicas"] for t in j["spec"]["tasks"]) <= max_pods]
        jobs = [(j, _pods_and_gpus(j)) for j in gangs]
        if limit is not None:
            jobs = jobs[:limit]
        first, last = jobs[0][1][3], jobs[-1][1][3]
        picked += [(j, f, first, max(last - first, 1.0)) for j, f in jobs]
        notes.append(f"{fmt}: {len(jobs)} gangs of {MIN_PODS}-{max_pods} pods ({sum(f[1] for _j, f in jobs):,} GPUs) "
                     f"of {len(trace.jobs):,} jobs, arriving over {(last - first) / 86400:.1f} days")
    facts = [(f[1], f[2]) for _j, f, _first, _span in picked]
    lo, hi = 60.0, 365 * 86400.0
    if _offered(facts, lo, capacity_gpus) < load:
        raise SystemExit(f"the gangs cannot offer a load of {load:.0%} of {capacity_gpus:,} GPUs; lower --load")
    for _ in range(60):  # the offered load falls as the window grows
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _offered(facts, mid, capacity_gpus) > load else (lo, mid)
    window = hi
    spread: list[dict[str, Any]] = []
    for job, f, first, span in sorted(picked, key=lambda p: ((p[1][3] - p[2]) / p[3], p[0]["metadata"]["name"])):
        job = copy.deepcopy(job)
        job["spec"]["queue"] = "default"
        job["metadata"]["annotations"][SUBMIT_AT] = go_duration((f[3] - first) / span * window)
        spread.append(job)
    notes.append(f"arrivals of each trace spread over the same {window / 3600:.1f} h, in their order and relative "
                 f"spacing: an offered load of {load:.0%} of {capacity_gpus:,} GPUs (GPU-time clipped to the window)")
    notes.append(f"{len(spread)} gangs arriving over {window / 3600:.1f} h, offered load {load:.0%}")
    return Workload(traces, spread, window, notes)


def fabric(block: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Hosts and HyperNodes of the Lingjun fabric, or of one of its aggregation blocks."""
    topo = load_topology("lingjun", gpus=8, cpu="128", memory="2Ti")
    if block == "all":
        return topo.nodes, topo.hypernodes, f"Lingjun: {len(topo.nodes)} hosts, 119 racks, 3 aggregation blocks"
    hosts = [n for n in topo.nodes if n["metadata"]["labels"].get("pyvolcano.io/topology-agg") == block]
    if not hosts:
        raise SystemExit(f"--fabric: no aggregation block {block!r}; expected all, agg-p8, agg-p10 or agg-p12")
    names = {n["metadata"]["name"] for n in hosts}
    kept: set[str] = set(names)
    hypernodes = []
    for hn in topo.hypernodes:  # lowest tier first: a parent sees its children's verdict
        members = [m for m in hn["spec"]["members"] if m["selector"]["exactMatch"]["name"] in kept]
        if members:
            hn = copy.deepcopy(hn)
            hn["spec"]["members"] = members
            hypernodes.append(hn)
            kept.add(hn["metadata"]["name"])
    racks = sum(1 for h in hypernodes if h["spec"]["tier"] == 1)
    return hosts, hypernodes, f"Lingjun aggregation block {block}: {len(hosts)} hosts in {racks} racks"


def with_constraint(jobs: list[dict[str, Any]], constraint: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for job in jobs:
        job = copy.deepcopy(job)
        if constraint is not None:
            job["spec"]["networkTopology"] = dict(constraint)
        out.append(job)
    return out


CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""Upstream's shipped chart configuration (installer/helm/chart/volcano/config/volcano-scheduler.conf)."""

RESERVATION_AFTER = "  - name: conformance\n"
RESERVATION = "  - name: reservation\n    arguments:\n      reservation.maxReservations: 1\n"
"""examples/recommended.conf's reservation plugin, inserted after :data:`RESERVATION_AFTER` (first tier)."""
RESERVATION_NOTE = " + reservation (maxReservations 1)"
"""What the printed notes add to the scheduler's description with ``--reservation``."""


def scheduler_conf_text(*, topology_plugin: bool, fragmentation_aware: bool = False, reservation: bool = False) -> str:
    """:data:`CONFIG`, with the reservation plugin and network-topology-aware (fragmentation-aware) as asked."""
    text = CONFIG.replace(RESERVATION_AFTER, RESERVATION_AFTER + RESERVATION) if reservation else CONFIG
    if topology_plugin:
        text += f"  - name: {TOPOLOGY_PLUGIN}\n"
        if fragmentation_aware:
            text += f"    arguments:\n      {FRAGMENTATION_AWARE}: true\n"
    return text


def scheduler_conf(registry: Any, *, fragmentation_aware: bool = False, reservation: bool = False) -> tuple[Any, bool]:
    has_plugin = TOPOLOGY_PLUGIN in registry.plugin_names
    text = scheduler_conf_text(topology_plugin=has_plugin, fragmentation_aware=fragmentation_aware,
                               reservation=reservation)
    return load_configuration(registry, text=text, source="topology experiment"), has_plugin


def _subset(jobs: list[JobMetrics], prefix: str | None) -> dict[str, Any]:
    sel = [j for j in jobs if prefix is None or j.key.startswith(f"default/{prefix}-")]
    waits = [w for j in sel if (w := j.wait) is not None]
    jcts = [c for j in sel if (c := j.jct) is not None]
    multi = [j for j in sel if j.span_nodes >= 2]
    return {"jobs": len(sel), "never_started": len(sel) - len(waits),
            "mean_wait_s": float(np.mean(waits)) if waits else None,
            "p95_wait_s": float(np.percentile(waits, 95)) if waits else None,
            "mean_jct_s": float(np.mean(jcts)) if jcts else None,
            "multi_node_jobs": len(multi), "in_one_rack": sum(1 for j in multi if j.span_domains == 1),
            "mean_racks": float(np.mean([j.span_domains for j in multi])) if multi else None}


def run_one(wl: Workload, mode: str, hosts: list[dict[str, Any]], hypernodes: list[dict[str, Any]],
            conf: Any, registry: Any, seed: int) -> list[dict[str, Any]]:
    """One simulation of the variant ``mode``; rows for all jobs, then per trace."""
    sim = Simulation(config=conf, registry=registry, seed=seed)
    cluster = [*hosts, *hypernodes]
    sim.submit([Submission(0.0, i, "cluster", o) for i, o in enumerate(cluster)])
    jobs = with_constraint(wl.jobs, MODES[VARIANTS[mode].constraint])
    sim.submit([Submission(parse_duration_strict(j["metadata"]["annotations"][SUBMIT_AT]), i, "jobs", j)
                for i, j in enumerate(jobs)])
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    topo = summarize(sim.metrics)["topology"]
    summ = summarize(sim.metrics)["summary"]
    rows = []
    for prefix in (None, *(t.format for t in wl.traces)):
        row = {"workload": prefix or "all", "mode": mode, **_subset(sim.metrics.jobs, prefix), "wall_s": wall,
               "busy_gpu_allocation_ratio": summ["busy_gpu_allocation_ratio"] if prefix is None else None,
               "topology_fragmentation_ratio": topo["busy_fragmentation_ratio"] if prefix is None else None}
        rows.append(row)
    return rows


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f} h"


def _pct(x: float | None, decimals: int = 1) -> str:
    return "-" if x is None else f"{x:.{decimals}%}"


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| jobs of | constraint | jobs | never started | mean wait | p95 wait | mean JCT | GPU allocation "
            "(busy window) | gangs inside one rack | racks per gang (mean) | topology fragmentation (busy window) |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        share = r["in_one_rack"] / r["multi_node_jobs"] if r["multi_node_jobs"] else None
        lines.append(f"| {r['workload']} | {r['mode']} | {r['jobs']} | {r['never_started']} | {_h(r['mean_wait_s'])} "
                     f"| {_h(r['p95_wait_s'])} | {_h(r['mean_jct_s'])} | {_pct(r['busy_gpu_allocation_ratio'])} "
                     f"| {r['in_one_rack']} of {r['multi_node_jobs']} ({_pct(share)}) "
                     f"| {r['mean_racks'] or 0:.2f} | {_pct(r['topology_fragmentation_ratio'], 2)} |")
    return "\n".join(lines)


def figure(rows: list[dict[str, Any]], path: Path, subtitle: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    panels = (
        ("mean wait (hours)", lambda r: (r["mean_wait_s"] or 0.0) / 3600, False),
        ("mean JCT (hours)", lambda r: (r["mean_jct_s"] or 0.0) / 3600, False),
        ("GPU allocation, busy window (all jobs)", lambda r: r["busy_gpu_allocation_ratio"] or 0.0, True),
        ("gangs inside one rack",
         lambda r: r["in_one_rack"] / r["multi_node_jobs"] if r["multi_node_jobs"] else 0.0, True),
        ("racks per gang (mean)", lambda r: r["mean_racks"] or 0.0, False),
        ("topology fragmentation, busy window (all jobs)", lambda r: r["topology_fragmentation_ratio"] or 0.0,
         True),
    )
    fig = Figure(figsize=(15, 7.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3).ravel()
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    rows_all = [r for r in rows if r["workload"] == "all"]
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    colours = {"none": "tab:gray", "soft": "tab:blue", SOFT_FA: "tab:green", "hard": "tab:orange"}
    x = np.arange(len(workloads))
    width = 0.8 / len(modes)
    by = {(r["workload"], r["mode"]): r for r in rows}
    for ax, (title, value, pct) in zip(axes, panels):
        shown = ["all"] if "all jobs" in title else workloads
        x = np.arange(len(shown))
        for k, mode in enumerate(modes):
            vals = [value(by[(w, mode)]) if (w, mode) in by else 0.0 for w in shown]
            bars = ax.bar(x + (k - (len(modes) - 1) / 2) * width, vals, width, color=colours[mode], label=mode)
            ax.bar_label(bars, labels=[f"{v:.1%}" if pct else f"{v:.2f}" for v in vals], fontsize=7, padding=2)
        ax.set_xticks(x, shown)
        ax.set_title(title, fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
        ax.margins(y=0.15)
        if pct:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, [f"networkTopology: {m}" for m in labels], loc="outside lower center", ncol=len(modes),
               frameon=False)
    fig.suptitle(f"Multi-node gangs of Philly and Acme Kalos: no, soft (also fragmentation-aware) and hard "
                 f"(highestTierAllowed 1) topology "
                 f"constraint\n{subtitle}", fontsize=11)
    del rows_all
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, facecolor="white")


def burst_jobs(wl: Workload, mode: str) -> list[dict[str, Any]]:
    """The burst's jobs under the variant ``mode``: rack-bound up to a rack's size, the rest ``mode``'s constraint."""
    out = []
    large = MODES[VARIANTS[mode].constraint]
    for job in wl.jobs:
        job = copy.deepcopy(job)
        constraint = MODES["hard"] if _pods_and_gpus(job)[0] <= RACK_PODS else large
        if constraint is not None:
            job["spec"]["networkTopology"] = dict(constraint)
        out.append(job)
    return out


def run_burst(wl: Workload, mode: str, hosts: list[dict[str, Any]], hypernodes: list[dict[str, Any]],
              registry: Any, seed: int, horizon: float, reservation: bool = False) -> dict[str, Any]:
    """One burst run: the gangs placed by ``horizon``, the rack-bound ones among them, and the
    stranded GPUs (the topology-fragmentation figure of the last sample)."""
    conf, _ = scheduler_conf(registry, fragmentation_aware=VARIANTS[mode].fragmentation_aware,
                             reservation=reservation)
    sim = Simulation(config=conf, registry=registry, seed=seed)
    sim.submit([Submission(0.0, i, "cluster", o) for i, o in enumerate([*hosts, *hypernodes])])
    jobs = burst_jobs(wl, mode)
    sim.submit([Submission(0.0, i, "jobs", j) for i, j in enumerate(jobs)])
    sim.run(until=horizon)
    rack_bound = {f"default/{j['metadata']['name']}" for j in jobs
                  if (j["spec"].get("networkTopology") or {}).get("mode") == "hard"}
    started = [j for j in sim.metrics.jobs if j.wait is not None]
    ended = sum(1 for j in sim.metrics.jobs if j.jct is not None)
    samples = sim.metrics.samples
    stranded = samples[-1].topology_fragmentation if samples else None
    large = [j for j in started if j.key not in rack_bound]
    return {"mode": mode, "seed": seed, "jobs": len(jobs), "rack_bound": len(rack_bound), "placed": len(started),
            "placed_rack_bound": sum(1 for j in started if j.key in rack_bound), "ended": ended,
            "stranded_gpus": stranded,
            "large_racks": float(np.mean([j.span_domains for j in large])) if large else None}


def burst_table(rows: list[dict[str, Any]]) -> str:
    head = ("| larger gangs | seed | gangs placed | rack-bound placed | larger placed | racks per larger gang (mean) "
            "| idle GPUs stranded in racks |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['seed']} | {r['placed']} of {r['jobs']} "
                     f"| {r['placed_rack_bound']} of {r['rack_bound']} "
                     f"| {r['placed'] - r['placed_rack_bound']} of {r['jobs'] - r['rack_bound']} "
                     f"| {r['large_racks'] or 0:.2f} "
                     f"| {'-' if r['stranded_gpus'] is None else round(r['stranded_gpus'])} |")
    return "\n".join(lines)


def burst_workload(args: argparse.Namespace, hosts: list[dict[str, Any]]) -> tuple[Workload, int]:
    """The burst's gangs (the first ``--jobs``, default 40, of each trace) and that count per trace."""
    per = 40 if args.jobs is None else args.jobs
    return workload([w.strip() for w in args.workloads.split(",")], load=0.01, capacity_gpus=8 * len(hosts),
                    limit=per, max_pods=BURST_MAX_PODS), per


def main_burst(args: argparse.Namespace) -> None:
    hosts, hypernodes, fabric_note = fabric(args.fabric)
    registry = default_registry()
    wl, per = burst_workload(args, hosts)
    rows = []
    for seed in range(args.seed, args.seed + args.seeds):
        for mode in BURST_VARIANTS:
            row = run_burst(wl, mode, hosts, hypernodes, registry, seed, args.horizon, args.reservation)
            if row["ended"]:
                raise SystemExit(f"a job ended before --horizon {args.horizon:g}s: lower it")
            rows.append(row)
            print(f"# {mode}, seed {seed}: {row['placed']} of {row['jobs']} placed", flush=True)
    print()
    print(burst_table(rows))
    print()
    sizes = [_pods_and_gpus(j)[0] for j in wl.jobs]
    print(f"* {fabric_note} (8 GPUs, 128 cores, 2 TiB each)")
    print(f"* {len(wl.jobs)} gangs ({sum(sizes)} pods) arriving at once: the first {per} gangs of {MIN_PODS}-"
          f"{BURST_MAX_PODS} pods of {args.workloads}; {sum(1 for n in sizes if n <= RACK_PODS)} of up to "
          f"{RACK_PODS} pods are rack-bound (hard, tier 1), the {sum(1 for n in sizes if n > RACK_PODS)} larger "
          f"ones run under the constraint of the first column")
    print(f"* placed: started within {args.horizon:g} s, before any job ends")
    print(f"* scheduler: upstream's chart configuration + {TOPOLOGY_PLUGIN}"
          + (RESERVATION_NOTE if args.reservation else ""))


SWEEP_CONFIGS = {"chart-nta": (False, False), "fragmentation-aware": (True, False), "reservation": (False, True)}
"""The sweep's configurations besides recommended.conf: (fragmentation-aware, reservation) on top
of upstream's chart configuration + network-topology-aware."""


def _dump(path: Path, docs: list[dict[str, Any]]) -> None:
    path.write_text(yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False))


def write_sweep(args: argparse.Namespace, out: Path) -> None:
    """Write the experiment as ``pyvolcano sweep`` inputs: the fabric as a CLUSTER.yaml, the stream's
    gangs under each constraint and the burst's gangs as WORKLOAD.yaml files, the configurations,
    and three sweep files (``stream-soft``, ``stream-none-hard``, ``burst``) over seeds
    ``--seed`` .. ``--seed + --seeds - 1``; prints the commands that run them."""
    out.mkdir(parents=True, exist_ok=True)
    hosts, hypernodes, fabric_note = fabric(args.fabric)
    cluster = out / f"lingjun-{args.fabric}.yaml"
    _dump(cluster, [*hosts, *hypernodes])
    registry = default_registry()
    for name, (fa, res) in SWEEP_CONFIGS.items():
        text = scheduler_conf_text(topology_plugin=True, fragmentation_aware=fa, reservation=res)
        load_configuration(registry, text=text, source=name)
        (out / f"{name}.conf").write_text(f"# upstream's chart configuration + {TOPOLOGY_PLUGIN}"
                                          f"{' (fragmentation-aware)' if fa else ''}"
                                          f"{RESERVATION_NOTE if res else ''}\n" + text)
    recommended = Path(__file__).resolve().parent.parent / "examples" / "recommended.conf"
    (out / "recommended.conf").write_text(recommended.read_text())
    wl = workload([w.strip() for w in args.workloads.split(",")], load=args.load, capacity_gpus=8 * len(hosts),
                  limit=args.jobs)
    for mode in MODES:
        _dump(out / f"stream-{mode}.yaml", with_constraint(wl.jobs, MODES[mode]))
    burst, _ = burst_workload(args, hosts)
    for mode in ("none", "soft"):
        jobs = burst_jobs(burst, mode)
        for job in jobs:
            job["metadata"]["annotations"].pop(SUBMIT_AT, None)
        _dump(out / f"burst-{mode}.yaml", jobs)
    seeds = [f"{args.seed}-{args.seed + args.seeds - 1}"]
    sweeps = {
        "stream-soft": {"configs": [*(f"{c}.conf" for c in SWEEP_CONFIGS), "recommended.conf"],
                        "workloads": ["stream-soft.yaml"]},
        "stream-none-hard": {"configs": ["chart-nta.conf", "recommended.conf"],
                             "workloads": ["stream-none.yaml", "stream-hard.yaml"]},
        "burst": {"configs": ["chart-nta.conf", "fragmentation-aware.conf", "recommended.conf"],
                  "workloads": ["burst-none.yaml", "burst-soft.yaml"], "until": f"{args.horizon:g}s"},
    }
    for name, body in sweeps.items():
        doc = {**body, "clusters": [cluster.name], "seeds": seeds}
        (out / f"{name}.sweep.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        print(f"pyvolcano sweep {out / name}.sweep.yaml --report {out / name} -o json > {out / name}.json")
    print(f"# {fabric_note}; {wl.notes[-1]}; burst: {len(burst.jobs)} gangs at once, counted at {args.horizon:g} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--fabric", default="agg-p10", help="all, or one aggregation block: agg-p8, agg-p10 (default), "
                                                         "agg-p12")
    ap.add_argument("--load", type=float, default=LOAD, help=f"offered load of the compressed arrivals ({LOAD})")
    ap.add_argument("--jobs", type=int, default=None, help="keep the first N gangs of each trace (all)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="philly,kalos")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--figure", type=Path, default=None,
                    help="stream: where to write the figure (docs/img/topology-experiment.png; with --reservation "
                         "docs/img/topology-experiment-reservation.png)")
    ap.add_argument("--reservation", action="store_true",
                    help="add examples/recommended.conf's reservation plugin (maxReservations 1) to every run")
    ap.add_argument("--scenario", choices=("stream", "burst"), default="stream",
                    help="stream: the table of docs/traces.md (default); burst: rack-bound gangs and larger ones "
                         "arriving at once")
    ap.add_argument("--seeds", type=int, default=3, help="burst: seeds from --seed on (3)")
    ap.add_argument("--horizon", type=float, default=30.0, help="burst: count the gangs placed by then (30 s)")
    ap.add_argument("--write-sweep", type=Path, metavar="DIR",
                    help="write the experiment as pyvolcano sweep inputs into DIR and print the sweep commands")
    args = ap.parse_args()
    if args.write_sweep is not None:
        write_sweep(args, args.write_sweep)
        return
    if args.scenario == "burst":
        main_burst(args)
        return
    hosts, hypernodes, fabric_note = fabric(args.fabric)
    capacity = 8 * len(hosts)
    registry = default_registry()
    conf, has_plugin = scheduler_conf(registry, reservation=args.reservation)
    with_reservation = RESERVATION_NOTE if args.reservation else ""
    plugin_note = (f"scheduler: upstream's chart configuration + {TOPOLOGY_PLUGIN}{with_reservation}, one queue"
                   if has_plugin else f"scheduler: upstream's chart configuration{with_reservation}, one queue; "
                                      f"no {TOPOLOGY_PLUGIN} plugin in this build")
    wl = workload([w.strip() for w in args.workloads.split(",")], load=args.load, capacity_gpus=capacity,
                  limit=args.jobs)
    rows = []
    for mode, variant in VARIANTS.items():
        if variant.fragmentation_aware and not has_plugin:
            continue
        run_conf = (scheduler_conf(registry, fragmentation_aware=True, reservation=args.reservation)[0]
                    if variant.fragmentation_aware else conf)
        got = run_one(wl, mode, hosts, hypernodes, run_conf, registry, args.seed)
        rows += got
        print(f"# {mode}: {got[0]['jobs']} jobs, {got[0]['wall_s']:.1f}s wall", flush=True)
    rows.sort(key=lambda r: (r["workload"] != "all", r["workload"]))
    notes = [fabric_note + " (8 GPUs, 128 cores, 2 TiB each)", *wl.notes[:-1], plugin_note]
    print()
    print(table(rows))
    print()
    for n in notes:
        print(f"* {n}")
    path = args.figure or Path("docs/img/topology-experiment" + ("-reservation" if args.reservation else "") + ".png")
    figure(rows, path, f"{fabric_note}; {wl.notes[-1]}{with_reservation}")
    print(f"\nfigure written to {path}")


if __name__ == "__main__":
    main()
