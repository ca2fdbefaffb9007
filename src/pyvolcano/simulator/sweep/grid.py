"""The grid of a sweep: its axes, read from a sweep file or given directly, and its cells.

A sweep has four axes; each cell is one ``pyvolcano simulate`` invocation on one value of each:

* ``configs`` — scheduler configuration files (``default`` = simulate without ``--config``);
* ``seeds`` — integers, or ranges such as ``2-5``;
* the input: ``traces`` (trace files, or the name of a packaged trace such as ``philly``), or
  ``workloads`` (WORKLOAD.yaml files, with ``clusters``), or neither (the built-in scenario);
* the cluster: ``nodes`` (machine lists for the traces: one per cluster size) or ``clusters``
  (CLUSTER.yaml files); without it a trace runs on its own machines.

Settings shared by every cell: ``trace_format``, ``until``, ``default_duration``,
``schedule_period``; and of the sweep itself: ``workers``.

Invariants: :meth:`SweepSpec.cells` lists the cells in one fixed order (input, cluster,
config, seed, each in the order given), so cell ids are stable for the same grid; every
problem with the grid is a :class:`SweepFileError` naming the file (or the option), the field
and what was expected, found before anything runs. Paths in a sweep file are relative to the
file's directory; paths given as options are relative to the working directory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pyvolcano.api.duration import DurationError, parse_duration_strict

__all__ = ["FIELDS", "MAX_CELLS", "Cell", "SweepFileError", "SweepSpec", "load_sweep_file", "parse_seed_values"]

SEED_LIMIT = 2**64
MAX_CELLS = 100_000
MAX_WORKERS = 4096
DEFAULT_CONFIG = "default"

FIELDS: dict[str, str] = {
    "configs": "a list of volcano-scheduler.conf files (or default)",
    "seeds": "a list of seeds: integers from 0 to 2**64-1 or ranges such as 2-5",
    "traces": "a list of trace files (or a packaged trace: philly, openb, kalos, dlrm)",
    "trace_format": "one of philly, openb, kalos, dlrm, csv",
    "nodes": "a list of machine lists (CSV) or CLUSTER.yaml files for the traces",
    "clusters": "a list of CLUSTER.yaml files (Nodes, Queues, PriorityClasses) or snapshots",
    "workloads": "a list of WORKLOAD.yaml files (Jobs, PodGroups, Pods)",
    "until": "a positive duration such as 24h",
    "default_duration": "a positive duration such as 10m",
    "schedule_period": "a number of seconds of at least 0.001",
    "workers": f"an integer from 1 to {MAX_WORKERS}",
}
_PACKAGED_TRACES = ("philly", "openb", "kalos", "dlrm")


class SweepFileError(ValueError):
    """A sweep file or option that cannot describe a grid: ``where: field: problem; expected ...``."""

    def __init__(self, where: str, field_name: str, problem: str, expected: str | None = None):
        self.where = where
        self.field = field_name
        self.problem = problem
        self.expected = expected
        tail = f"; expected {expected}" if expected else ""
        super().__init__(f"{where}: {field_name}: {problem}{tail}")


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid: the options of the ``simulate`` command it stands for."""

    index: int
    config: Path | None
    seed: int
    trace: Path | None = None
    nodes: Path | None = None
    cluster: Path | None = None
    workload: Path | None = None
    trace_format: str | None = None
    until: str | None = None
    default_duration: str | None = None
    schedule_period: float = 1.0

    @property
    def id(self) -> str:
        return f"{self.index + 1:03d}"

    @property
    def input_name(self) -> str:
        if self.trace is not None:
            return self.trace.name
        if self.workload is not None:
            return self.workload.name
        return "built-in scenario" if self.cluster is None else "-"

    @property
    def cluster_name(self) -> str:
        if self.nodes is not None:
            return self.nodes.name
        if self.cluster is not None:
            return self.cluster.name
        return "-"

    @property
    def config_name(self) -> str:
        return self.config.name if self.config is not None else DEFAULT_CONFIG

    @property
    def label(self) -> str:
        parts = [self.config_name, f"seed {self.seed}", self.input_name]
        if self.cluster_name != "-":
            parts.append(self.cluster_name)
        return " · ".join(parts)

    def coordinates(self) -> dict[str, Any]:
        """The cell's place in the grid, as the CSV and the JSON document name it."""
        return {"cell": self.id, "config": self.config_name, "seed": self.seed, "input": self.input_name,
                "cluster": self.cluster_name}

    def simulate_arguments(self) -> list[str]:
        """The ``pyvolcano simulate`` options that run this cell alone."""
        args: list[str] = []
        for flag, value in (("--cluster", self.cluster), ("--workload", self.workload), ("--trace", self.trace),
                            ("--trace-format", self.trace_format), ("--nodes", self.nodes),
                            ("--config", self.config), ("--until", self.until),
                            ("--default-duration", self.default_duration)):
            if value is not None:
                args += [flag, str(value)]
        args += ["--seed", str(self.seed)]
        if self.schedule_period != 1.0:
            args += ["--schedule-period", repr(self.schedule_period)]
        return args


@dataclass
class SweepSpec:
    """The axes and shared settings of a sweep (see the module docstring)."""

    configs: list[Path | None] = field(default_factory=lambda: [None])
    seeds: list[int] = field(default_factory=lambda: [0])
    traces: list[Path] = field(default_factory=list)
    trace_format: str | None = None
    nodes: list[Path] = field(default_factory=list)
    clusters: list[Path] = field(default_factory=list)
    workloads: list[Path] = field(default_factory=list)
    until: str | None = None
    default_duration: str | None = None
    schedule_period: float = 1.0
    workers: int | None = None
    source: str = "command line"

    def merged(self, **overrides: Any) -> SweepSpec:
        """This spec with the fields given (not None) replaced, as options override a file."""
        given = {k: v for k, v in overrides.items() if v is not None and v != []}
        return replace(self, **given)

    def check(self) -> None:
        """Refuse combinations that simulate refuses, before any cell runs."""
        where = self.source
        if self.traces and (self.clusters or self.workloads):
            raise SweepFileError(where, "traces", "given with clusters/workloads",
                                 "traces (with nodes) or clusters (with workloads), not both")
        if self.nodes and not self.traces:
            raise SweepFileError(where, "nodes", "given without traces", "traces for the machine lists to run")
        if self.trace_format is not None and not self.traces:
            raise SweepFileError(where, "trace_format", "given without traces", "traces")
        if self.workloads and not self.clusters:
            raise SweepFileError(where, "workloads", "given without clusters", "clusters (the Nodes to run on)")
        for name in ("configs", "seeds"):
            if not getattr(self, name):
                raise SweepFileError(where, name, "an empty list", f"at least one entry: {FIELDS[name]}")
        if len(self.cells()) > MAX_CELLS:
            raise SweepFileError(where, "grid", f"{len(self.cells()):,} cells", f"at most {MAX_CELLS:,}")

    def cells(self) -> list[Cell]:
        inputs: list[tuple[Path | None, Path | None]]  # (trace, workload)
        clusters: list[tuple[Path | None, Path | None]]  # (nodes, cluster)
        if self.traces:
            inputs = [(t, None) for t in self.traces]
            clusters = [(n, None) for n in self.nodes] or [(None, None)]
        elif self.clusters:
            inputs = [(None, w) for w in self.workloads] or [(None, None)]
            clusters = [(None, c) for c in self.clusters]
        else:
            inputs, clusters = [(None, None)], [(None, None)]
        out: list[Cell] = []
        for trace, workload in inputs:
            for nodes, cluster in clusters:
                for config in self.configs:
                    for seed in self.seeds:
                        out.append(Cell(index=len(out), config=config, seed=seed, trace=trace, nodes=nodes,
                                        cluster=cluster, workload=workload, trace_format=self.trace_format,
                                        until=self.until, default_duration=self.default_duration,
                                        schedule_period=self.schedule_period))
        return out


# ---------------------------------------------------------------------------- reading values


def parse_seed_values(values: list[Any], where: str, name: str = "seeds") -> list[int]:
    """Seeds and ``low-high`` ranges (inclusive) → seeds, in the order given."""
    seeds: list[int] = []
    for i, v in enumerate(values):
        item = f"{name}[{i}]"
        if isinstance(v, bool):
            raise SweepFileError(where, item, f"got {v!r}", "a seed such as 42 or a range such as 2-5")
        if isinstance(v, int):
            lo = hi = v
        elif isinstance(v, str):
            a, sep, b = v.strip().partition("-")
            try:
                lo, hi = (int(a), int(b)) if sep else (int(a), int(a))
            except ValueError:
                raise SweepFileError(where, item, f"got {v!r}", "a seed such as 42 or a range such as 2-5") from None
            if hi < lo:
                raise SweepFileError(where, item, f"got {v!r}", "a range low-high with low ≤ high")
        else:
            raise SweepFileError(where, item, f"got {type(v).__name__} {v!r}",
                                 "a seed such as 42 or a range such as 2-5")
        if lo < 0 or hi >= SEED_LIMIT:
            raise SweepFileError(where, item, f"got {v!r}", "seeds from 0 to 2**64-1")
        if len(seeds) + hi - lo + 1 > MAX_CELLS:
            raise SweepFileError(where, name, "too many seeds", f"at most {MAX_CELLS:,}")
        seeds.extend(range(lo, hi + 1))
    return seeds


def _duration(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise SweepFileError(where, name, f"got {value!r}", FIELDS[name])
    try:
        seconds = parse_duration_strict(value)
    except DurationError as e:
        raise SweepFileError(where, name, str(e), FIELDS[name]) from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise SweepFileError(where, name, f"got {value!r}", FIELDS[name])
    return value


def check_period(value: Any, where: str, name: str = "schedule_period") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value >= 0.001):
        raise SweepFileError(where, name, f"got {value!r}", FIELDS["schedule_period"])
    return float(value)


def check_workers(value: Any, where: str, name: str = "workers") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise SweepFileError(where, name, f"got {value!r}", FIELDS["workers"])
    return value


def check_trace_format(value: Any, where: str, name: str = "trace_format") -> str:
    from pyvolcano.simulator.traces import FORMATS

    if not isinstance(value, str) or value not in FORMATS:
        raise SweepFileError(where, name, f"got {value!r}", "one of " + ", ".join(FORMATS))
    return value


def check_path(value: Any, where: str, item: str, base: Path | None, *, packaged: tuple[str, ...] = ()) -> Path:
    """An existing file (relative to ``base``), or one of ``packaged``'s names."""
    if not isinstance(value, str) or not value:
        raise SweepFileError(where, item, f"got {value!r}", "a file name")
    path = Path(value)
    if base is not None and not path.is_absolute():
        path = base / path
    if value in packaged and not path.exists():
        return Path(value)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        extra = f" (or one of {', '.join(packaged)})" if packaged else ""
        raise SweepFileError(where, item, f"{str(path)!r} {what}", f"an existing file{extra}")
    return path


def check_paths(values: list[Any], where: str, name: str, base: Path | None, *,
                packaged: tuple[str, ...] = ()) -> list[Path]:
    return [check_path(v, where, f"{name}[{i}]", base, packaged=packaged) for i, v in enumerate(values)]


def check_configs(values: list[Any], where: str, base: Path | None, name: str = "configs") -> list[Path | None]:
    """Configuration files; ``default`` (or null) is simulate's default configuration."""
    return [None if v is None or v == DEFAULT_CONFIG else check_path(v, where, f"{name}[{i}]", base)
            for i, v in enumerate(values)]


def load_sweep_file(path: Path) -> SweepSpec:
    """Read and check a sweep file (YAML mapping; the fields of :data:`FIELDS`)."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SweepFileError(where, "file", f"cannot be read ({getattr(e, 'strerror', None) or e})",
                             "a readable YAML file") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "YAML"
        raise SweepFileError(where, at, f"not valid YAML ({getattr(e, 'problem', None) or e})",
                             "a YAML mapping of the sweep's fields") from None
    if not isinstance(doc, dict):
        raise SweepFileError(where, "document", f"got {type(doc).__name__}",
                             "a mapping with fields " + ", ".join(FIELDS))
    unknown = [k for k in doc if k not in FIELDS]
    if unknown:
        raise SweepFileError(where, str(unknown[0]), "unknown field", "one of " + ", ".join(FIELDS))
    base = Path(path).parent
    spec = SweepSpec(source=where)
    for name in ("configs", "seeds", "traces", "nodes", "clusters", "workloads"):
        if name not in doc:
            continue
        value = doc[name]
        if not isinstance(value, list):
            value = [value] if isinstance(value, str | int) and not isinstance(value, bool) else value
        if not isinstance(value, list) or not value:
            raise SweepFileError(where, name, f"got {value!r}", FIELDS[name])
        if name == "configs":
            spec.configs = check_configs(value, where, base)
        elif name == "seeds":
            spec.seeds = parse_seed_values(value, where)
        else:
            setattr(spec, name, check_paths(value, where, name, base,
                                            packaged=_PACKAGED_TRACES if name == "traces" else ()))
    if "trace_format" in doc:
        spec.trace_format = check_trace_format(doc["trace_format"], where)
    for name in ("until", "default_duration"):
        if name in doc:
            setattr(spec, name, _duration(doc[name], where, name))
    if "schedule_period" in doc:
        spec.schedule_period = check_period(doc["schedule_period"], where)
    if "workers" in doc:
        spec.workers = check_workers(doc["workers"], where)
    spec.check()
    return spec


def spec_from_options(base: SweepSpec | None, *, configs: list[str], seeds: list[str], traces: list[str],
                      trace_format: str | None, nodes: list[str], clusters: list[str], workloads: list[str],
                      until: str | None, default_duration: str | None, schedule_period: float | None,
                      workers: int | None) -> SweepSpec:
    """A sweep file's spec (or the defaults) with the options given on the command line in place
    of the file's fields; paths relative to the working directory."""
    where = "command line"
    spec = base or SweepSpec()
    over: dict[str, Any] = {}
    if configs:
        over["configs"] = check_configs(list(configs), where, None, "--config")
    if seeds:
        over["seeds"] = parse_seed_values(list(seeds), where, "--seed")
    if traces:
        over["traces"] = check_paths(list(traces), where, "--trace", None, packaged=_PACKAGED_TRACES)
    if nodes:
        over["nodes"] = check_paths(list(nodes), where, "--nodes", None)
    if clusters:
        over["clusters"] = check_paths(list(clusters), where, "--cluster", None)
    if workloads:
        over["workloads"] = check_paths(list(workloads), where, "--workload", None)
    if trace_format is not None:
        over["trace_format"] = check_trace_format(trace_format, where, "--trace-format")
    if until is not None:
        over["until"] = _duration(until, where, "until")
    if default_duration is not None:
        over["default_duration"] = _duration(default_duration, where, "default_duration")
    if schedule_period is not None:
        over["schedule_period"] = check_period(schedule_period, where, "--schedule-period")
    if workers is not None:
        over["workers"] = check_workers(workers, where, "--workers")
    merged = spec.merged(**over)
    if over and base is not None:
        merged.source = f"{base.source} with the command line's options"
    merged.check()
    return merged
