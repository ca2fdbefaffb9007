"""``pyvolcano experiment fgd``: the FGD paper's experiment on an openb-format trace.

Runs every (seed, policy) pair of :func:`pyvolcano.gpu.experiment.run_experiment` and prints
either one JSON or YAML document (``-o json|yaml``: ``{"runs": [...]}``, one entry per run
with its curve; each run's wall-clock ``seconds`` only with ``--timings``) or a summary table
per policy with the published values alongside (``-o wide`` adds the mean unscheduled pods
and the published fragmentation). ``--report DIR`` also
writes CSV, JSON and PNG files (:func:`pyvolcano.gpu.report.write_report`). Progress goes to
stderr. Without ``--nodes``/``--pods`` the packaged default openb trace is used.

Exit codes: 0 success, 2 bad input (unknown policy, bad seed range, unreadable trace).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pyvolcano.cli.options import SEED_LIMIT
from pyvolcano.cli.output import TIMING_KEYS, console, emit, error, strip_timings, warn
from pyvolcano.gpu.experiment import RunResult, run_experiment
from pyvolcano.gpu.openb import DEFAULT_NODES, DEFAULT_PODS, TraceError, default_trace_dir, load_nodes, load_pods
from pyvolcano.gpu.policies import POLICIES
from pyvolcano.gpu.report import ALLOCATION_POINTS, FRAGMENTATION_POINTS, runs_json, summarize, write_report

__all__ = ["parse_policies", "parse_seeds", "run_experiment_fgd"]


MAX_SEEDS = 10_000
MAX_TUNE = 100.0  # the workload is inflated to tune × GPU capacity: beyond this a run never ends


class UsageError(ValueError):
    """A bad command-line value; the message is one line for stderr."""


def parse_seeds(text: str) -> list[int]:
    """``"42-51"``, ``"42,45"`` or a mix (``"42-44,50"``) → seeds in the order given."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise UsageError(f"--seed: got {part!r}; expected integers such as 42, 42-51 or 42,43") from None
        if b < a:
            raise UsageError(f"--seed: got {part!r}; expected a range low-high with low ≤ high")
        if a < 0 or b >= SEED_LIMIT:
            raise UsageError(f"--seed: got {part!r}; expected seeds from 0 to 2**64-1")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise UsageError(f"--seed: got {text!r}; expected at most {MAX_SEEDS} seeds")
        seeds.extend(range(a, b + 1))
    if not seeds:
        raise UsageError(f"--seed: got {text!r}; expected at least one seed, such as 42-51")
    return seeds


def parse_policies(text: str) -> list[str]:
    """Comma-separated policy names, or ``all`` for the paper's six in its order."""
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if names == ["all"]:
        return list(POLICIES)
    bad = [n for n in names if n not in POLICIES]
    if bad or not names:
        raise UsageError(f"--policy: got {text!r}; expected a comma-separated list of {', '.join(POLICIES)} "
                         "(or all)")
    return names


def _progress(res: RunResult) -> None:
    point = res.at(100)
    alloc = f", {point.allocated * 100:.2f}% allocated at 100% arrived" if point else ""
    print(f"{res.policy} seed {res.seed}: {res.pods} pods, {res.failed} unscheduled, {res.seconds:.2f}s{alloc}",
          file=sys.stderr, flush=True)


def _num(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def _print_table(results: Sequence[RunResult], capacity: int, *, wide: bool = False) -> None:
    from rich.table import Table

    summaries = summarize(results)
    t = Table(title=f"{results[0].trace}: GPU allocation % at arrived % ({summaries[0].runs} seed(s))", box=None)
    t.add_column("POLICY", no_wrap=True)
    for a in ALLOCATION_POINTS:
        t.add_column(f"{a}%", justify="right")
        if a == 100:
            t.add_column("±", justify="right")
            t.add_column("PAPER", justify="right")
    t.add_column("IDLE GPU", justify="right")
    for a in FRAGMENTATION_POINTS:
        t.add_column(f"FRAG@{a}", justify="right")
        if wide:
            t.add_column("PAPER", justify="right")
    if wide:
        t.add_column("UNSCHEDULED", justify="right")
    t.add_column("S/RUN", justify="right")
    for s in summaries:
        cells: list[str] = [s.policy]
        for a in ALLOCATION_POINTS:
            mean, std = s.allocated[a]
            cells.append(_num(mean))
            if a == 100:
                cells += [_num(std), _num(s.published(100))]
        unalloc = s.unallocated_gpus(capacity)
        cells.append("-" if unalloc is None or unalloc != unalloc else f"{unalloc:.0f}")
        for a in FRAGMENTATION_POINTS:
            cells.append(_num(s.fragmentation[a][0]))
            if wide:
                cells.append(_num(s.published_fragmentation(a)))
        if wide:
            cells.append(f"{s.failed:.1f}")
        cells.append(f"{s.seconds:.2f}")
        t.add_row(*cells)
    console().print(t)


def run_experiment_fgd(
    nodes: Path | None,
    pods: Path | None,
    policies: list[str],
    seeds: list[int],
    tune: float,
    output: str,
    report: Path | None,
    *,
    tie_break: str = "rank",
    timings: bool = False,
) -> int:
    """Run the experiment and print a table (``output="table"``) or one JSON object.

    ``tie_break``: ``rank`` (the paper artifact: equal scores go to the node first in a
    per-run random order) or ``random`` (a fresh uniform draw per tie, as kube-scheduler and
    Volcano do).
    """
    try:
        if tie_break not in ("rank", "random"):
            raise UsageError(f"--tie-break: got {tie_break!r}; expected rank or random")
        if output not in ("json", "yaml", "table", "wide"):
            raise UsageError(f"--output: got {output!r}; expected json, yaml, table or wide")
        if not policies or any(p not in POLICIES for p in policies):
            raise UsageError(f"--policy: got {','.join(policies)!r}; expected names from {', '.join(POLICIES)}")
        if not seeds:
            raise UsageError("--seed: expected at least one seed")
        if not 0 < tune <= MAX_TUNE:
            raise UsageError(f"--tune: got {tune}; expected a ratio above 0 and at most {MAX_TUNE:g}, such as 1.3")
        trace_dir = default_trace_dir()
        node_path = nodes if nodes is not None else trace_dir / DEFAULT_NODES
        pod_path = pods if pods is not None else trace_dir / DEFAULT_PODS
        node_rows = load_nodes(node_path)
        pod_rows = load_pods(pod_path)
    except (UsageError, TraceError) as err:
        error(str(err))
        return 2
    capacity = sum(n.gpus for n in node_rows)
    if capacity == 0:
        error(f"{node_path}: no node has a GPU; expected a GPU cluster")
        return 2
    if sum(p.total_milli for p in pod_rows) == 0:
        error(f"{pod_path}: no pod asks for a GPU; expected a GPU workload")
        return 2
    results = run_experiment(node_rows, pod_rows, policies, seeds, tune=tune, trace=pod_path.stem,
                             tie_break=tie_break, progress=_progress)
    if report is not None:
        written, warning = write_report(results, report)
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
        if warning:
            warn(warning)
    if output in ("json", "yaml"):
        data = runs_json(results)
        emit(data if timings else strip_timings(data, TIMING_KEYS | {"seconds"}), output)
    else:
        _print_table(results, capacity, wide=output == "wide")
    return 0
