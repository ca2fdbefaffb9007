"""Loaders for the Alibaba GPU cluster trace v2023 ("openb") CSV files.

Node lists have the columns ``sn, cpu_milli, memory_mib, gpu, model``; pod lists
``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` and optionally ``gpu_spec`` (allowed GPU
models, ``A|B``) followed by columns we do not use (qos, phase, timestamps). The column
meanings are in ``data/traces/alibaba-gpu-v2023-openb/README.md``.

Conversions follow the paper artifact's ``data/pod_csv_to_yaml.py``: a pod's GPU share is
used only when ``num_gpu > 0``; ``gpu_milli`` above 1000 counts as 1000; the GPU model list
drops empty entries. A pod of ``num_gpu > 1`` must ask for whole GPUs (``gpu_milli`` 1000),
as the artifact assumes.

Every malformed value raises :class:`TraceError` naming the file, the line, the column and
what was expected; nothing is guessed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pyvolcano.util.numbers import parse_float, parse_int

__all__ = [
    "DEFAULT_NODES",
    "DEFAULT_PODS",
    "TraceError",
    "TraceNode",
    "TracePod",
    "default_trace_dir",
    "load_nodes",
    "load_pods",
]

DEFAULT_NODES = "openb_node_list_gpu_node.csv"
DEFAULT_PODS = "openb_pod_list_default.csv"
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceError(ValueError):
    """A trace file that cannot be read; the message names file, line and column."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...] = ()

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


def default_trace_dir() -> Path:
    """The openb trace shipped as package data."""
    return Path(str(resources.files("pyvolcano").joinpath("data/traces/alibaba-gpu-v2023-openb")))


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(f"{path}: file not found") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot read file ({err.strerror or type(err).__name__})") from None
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise TraceError(f"{path}: line 1: empty file; expected a header with {', '.join(required)}") from None
        except (csv.Error, UnicodeDecodeError) as err:
            raise TraceError(f"{path}: line 1: {err}; expected a CSV header") from None
        header = [h.strip() for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(f"{path}: line 1: missing column(s) {', '.join(missing)}; "
                             f"expected a header with {', '.join(required)}")
        try:
            for row in reader:
                line = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) < len(header):
                    row = row + [""] * (len(header) - len(row))
                yield line, dict(zip(header, row))
        except (csv.Error, UnicodeDecodeError) as err:
            raise TraceError(f"{path}: line {reader.line_num}: {err}; expected CSV text") from None


def _int(path: Path, line: int, row: dict[str, str], column: str, *, minimum: int = 0) -> int:
    text = row.get(column, "").strip()
    try:
        number = parse_int(text)
    except ValueError:
        try:
            as_float = parse_float(text)
        except ValueError:
            as_float = float("nan")
        if not as_float.is_integer():
            raise TraceError(f"{path}: line {line}: column {column}: got {text!r}; "
                             f"expected an integer ≥ {minimum}") from None
        number = int(as_float)
    if number < minimum:
        raise TraceError(f"{path}: line {line}: column {column}: got {text!r}; expected an integer ≥ {minimum}")
    return number


def load_nodes(path: Path) -> list[TraceNode]:
    """Read an openb node list; node names must be unique."""
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in _rows(path, _NODE_COLUMNS):
        name = row["sn"].strip()
        if not name:
            raise TraceError(f"{path}: line {line}: column sn: got ''; expected a node name")
        if name in seen:
            raise TraceError(f"{path}: line {line}: column sn: got {name!r} again; expected unique node names")
        seen.add(name)
        nodes.append(TraceNode(
            name=name,
            cpu_milli=_int(path, line, row, "cpu_milli"),
            memory_mib=_int(path, line, row, "memory_mib"),
            gpus=_int(path, line, row, "gpu"),
            model=row["model"].strip(),
        ))
    if not nodes:
        raise TraceError(f"{path}: no node rows; expected at least one node")
    return nodes


def load_pods(path: Path) -> list[TracePod]:
    """Read an openb pod list; pod names must be unique."""
    pods: list[TracePod] = []
    seen: set[str] = set()
    for line, row in _rows(path, _POD_COLUMNS):
        name = row["name"].strip()
        if not name:
            raise TraceError(f"{path}: line {line}: column name: got ''; expected a pod name")
        if name in seen:
            raise TraceError(f"{path}: line {line}: column name: got {name!r} again; expected unique pod names")
        seen.add(name)
        num_gpu = _int(path, line, row, "num_gpu")
        gpu_milli = _int(path, line, row, "gpu_milli") if num_gpu > 0 else 0
        gpu_milli = min(gpu_milli, 1000)
        if num_gpu > 0 and gpu_milli == 0:
            raise TraceError(f"{path}: line {line}: column gpu_milli: got {row['gpu_milli']!r} with num_gpu "
                             f"{num_gpu}; expected 1..1000")
        if num_gpu > 1 and gpu_milli != 1000:
            raise TraceError(f"{path}: line {line}: column gpu_milli: got {row['gpu_milli']!r} with num_gpu "
                             f"{num_gpu}; expected 1000 (multi-GPU pods take whole GPUs)")
        spec = row.get("gpu_spec", "") or ""
        models = tuple(m.strip() for m in spec.split("|") if m.strip()) if num_gpu > 0 else ()
        pods.append(TracePod(
            name=name,
            cpu_milli=_int(path, line, row, "cpu_milli"),
            memory_mib=_int(path, line, row, "memory_mib"),
            num_gpu=num_gpu,
            gpu_milli=gpu_milli,
            models=tuple(sorted(set(models))),
        ))
    if not pods:
        raise TraceError(f"{path}: no pod rows; expected at least one pod")
    return pods
