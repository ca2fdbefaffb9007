"""Shared pieces of the trace adapters: the Trace record, errors, CSV reading with line
numbers, quantity and duration formatting, and builders for the manifests every adapter
emits (Node, Queue, PriorityClass, Volcano Job).

Manifests are built as plain dicts (no YAML round trip) so that the whole Philly trace
(82,247 jobs) loads in about a second.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar

from pyvolcano.api.duration import parse_duration_strict
from pyvolcano.api.names import JOB_API_VERSION
from pyvolcano.gpu.devices import GPU_MILLI_ANNOTATION, GPU_MODELS_ANNOTATION, GPU_PRODUCT_LABEL, NVIDIA_GPU
from pyvolcano.runtime.kubelet import DURATION, EXIT_CODE
from pyvolcano.simulator.workload import SUBMIT_AT, Submission
from pyvolcano.util.numbers import parse_float

__all__ = [
    "DEFAULT_QUEUE",
    "DURATION",
    "EXIT_CODE",
    "FINISHED_JOB_TTL",
    "GPU_MILLI_ANNOTATION",
    "GPU_MODELS_ANNOTATION",
    "GPU_PRODUCT_LABEL",
    "HOSTNAME_LABEL",
    "IMAGE",
    "MAX_REPLICAS",
    "NVIDIA_GPU",
    "SUBMIT_AT",
    "TRACE_LABEL",
    "TRACE_LINE",
    "Row",
    "Trace",
    "TraceError",
    "cpu_qty",
    "go_duration",
    "job_manifest",
    "mem_qty_mib",
    "node_manifest",
    "open_rows",
    "packaged",
    "pod_template",
    "priority_class_manifest",
    "queue_manifest",
    "select_window",
    "selection_note",
]

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
TRACE_LABEL: Final = "pyvolcano.io/trace"
TRACE_LINE: Final = "pyvolcano.io/trace-line"
IMAGE: Final = "pyvolcano/trace-replay:latest"
"""Image name put in every generated container (the simulator never pulls it)."""

FINISHED_JOB_TTL: Final = 60
"""``ttlSecondsAfterFinished`` of every generated Job: the garbage collector deletes a finished
job (and its pods and PodGroup) a minute after it ends, as a platform team would configure a
cluster that replays months of work; without it every finished job stays in the cluster."""

PACKAGE_DATA: Final = ("data", "traces")
DEFAULT_QUEUE: Final = "default"
"""Volcano creates this queue itself; adapters never emit a Queue manifest for it."""


MAX_REPLICAS: Final = 10_000
"""The most pods one trace row may ask for. Real traces stay far below (Philly's largest job has
128 GPUs); a row above it is a typo, and would otherwise create pods for minutes."""


class TraceError(ValueError):
    """A trace or machine list that cannot be read. The message names the file, the line,
    the column and what was expected; the same facts are kept as attributes."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: str | None = None, expected: str | None = None):
        self.file = file
        self.line = line
        self.column = column
        self.expected = expected
        self.reason = message
        where = ""
        if file is not None:
            where = file if line is None else f"{file}:{line}"
        parts = [where] if where else []
        if column is not None:
            parts.append(f"column {column!r}")
        text = ": ".join([*parts, message])
        if expected:
            text += f"; expected {expected}"
        super().__init__(text)


@dataclass
class Trace:
    """A workload built from a trace, ready for the simulator."""

    name: str
    format: str
    nodes: list[dict[str, Any]]
    """v1 Node manifests."""
    queues: list[dict[str, Any]]
    """scheduling.volcano.sh/v1beta1 Queue manifests."""
    priority_classes: list[dict[str, Any]]
    """scheduling.k8s.io/v1 PriorityClass manifests."""
    jobs: list[dict[str, Any]]
    """batch.volcano.sh/v1alpha1 Job manifests sorted by submit time; each carries
    ``metadata.annotations["pyvolcano.io/submit-at"]`` and task templates with
    ``pyvolcano.io/duration`` (absent: the pod runs until the end of the simulation); a Job
    whose templates all have one also carries the longest (``job_manifest``)."""
    notes: list[str] = field(default_factory=list)
    """Assumptions made while converting (for the CLI and the report)."""
    config: str | None = None
    """The scheduler configuration (``volcano-scheduler.conf`` YAML) the scenario is meant to
    run with when none is given; None: upstream's built-in default."""

    def objects(self) -> list[dict[str, Any]]:
        """Every manifest: cluster objects first (PriorityClasses, Queues, Nodes), then Jobs."""
        return [*self.priority_classes, *self.queues, *self.nodes, *self.jobs]

    def submissions(self) -> list[Submission]:
        """What a simulation is given: the cluster objects at time 0, then each Job at its
        submit-at time, numbered in that order (the tie-break between equal times)."""
        source = f"trace:{self.name}"
        subs = [Submission(0.0, i, source, obj) for i, obj in enumerate([*self.priority_classes, *self.queues,
                                                                          *self.nodes])]
        for obj in self.jobs:
            ann = (obj.get("metadata") or {}).get("annotations") or {}
            subs.append(Submission(parse_duration_strict(str(ann.get(SUBMIT_AT, "0s"))), len(subs), source, obj))
        return subs


# --------------------------------------------------------------------------- files
@contextmanager
def _local(path: str | os.PathLike[str] | Any) -> Iterator[Path]:
    if isinstance(path, (str, os.PathLike)):
        yield Path(path)
        return
    with resources.as_file(path) as p:  # a Traversable from importlib.resources
        yield Path(p)


def packaged(folder: str, name: str) -> Any:
    """A trace file shipped in ``pyvolcano/data/traces/<folder>/`` (an importlib Traversable)."""
    return resources.files("pyvolcano").joinpath(*PACKAGE_DATA, folder, name)


def display_name(path: Any) -> str:
    if isinstance(path, (str, os.PathLike)):
        return os.fspath(path)
    parts = str(path).replace("\\", "/").split("/")
    return "pyvolcano:" + "/".join(parts[-4:]) if len(parts) >= 4 else str(path)


Row = tuple[int, list[str]]


@contextmanager
def open_rows(path: Any, *, header: bool = True) -> Iterator[tuple[str, list[str], Iterator[Row]]]:
    """Open a CSV file; yields ``(display name, header columns, iterator of (line, cells))``.

    Header names are stripped of spaces. Blank lines are skipped. Lines are 1-based physical
    line numbers (the header is line 1)."""
    name = display_name(path)
    with _local(path) as p:
        try:
            f = open(p, encoding="utf-8", newline="")  # noqa: SIM115 — closed below
        except OSError as e:
            raise TraceError(f"cannot read: {e.strerror or e}", file=name) from None
        with f:
            reader = csv.reader(f)
            cols: list[str] = []
            if header:
                try:
                    first = next(reader)
                except StopIteration:
                    raise TraceError("the file is empty", file=name, line=1,
                                     expected="a CSV header line") from None
                except (csv.Error, UnicodeDecodeError) as e:
                    raise TraceError(f"not a CSV file ({e})", file=name, line=1) from None
                cols = [c.strip() for c in first]

            def rows() -> Iterator[Row]:
                try:
                    for cells in reader:
                        if not cells or (len(cells) == 1 and not cells[0].strip()):
                            continue
                        yield reader.line_num, cells
                except (csv.Error, UnicodeDecodeError) as e:
                    raise TraceError(f"not a CSV file ({e})", file=name, line=reader.line_num + 1) from None

            yield name, cols, rows()


def column_index(name: str, cols: Sequence[str], required: Sequence[str], optional: Sequence[str] = (),
                 *, what: str) -> dict[str, int]:
    idx = {c: i for i, c in enumerate(cols)}
    missing = [c for c in required if c not in idx]
    if missing:
        raise TraceError(f"the header lacks {', '.join(missing)} (got: {', '.join(cols) or 'nothing'})",
                         file=name, line=1, expected=f"the {what} columns {','.join(required)}")
    return {c: idx[c] for c in (*required, *optional) if c in idx}


class Cells:
    """Typed access to one CSV row, with errors naming file, line and column."""

    __slots__ = ("cells", "file", "idx", "line")

    def __init__(self, file: str, line: int, cells: list[str], idx: dict[str, int]):
        self.file = file
        self.line = line
        self.cells = cells
        self.idx = idx

    def has(self, col: str) -> bool:
        return col in self.idx

    def raw(self, col: str) -> str:
        i = self.idx[col]
        if i >= len(self.cells):
            raise TraceError(f"the row has only {len(self.cells)} cells; this column is number {i + 1}",
                             file=self.file, line=self.line, column=col, expected="one cell per header column")
        return self.cells[i].strip()

    def fail(self, col: str, got: str, expected: str) -> TraceError:
        return TraceError(f"got {got!r}", file=self.file, line=self.line, column=col, expected=expected)

    def str_(self, col: str, *, allow_empty: bool = False) -> str:
        v = self.raw(col)
        if not v and not allow_empty:
            raise self.fail(col, v, "a non-empty value")
        return v

    def float_(self, col: str, *, minimum: float | None = 0.0, allow_empty: bool = False) -> float | None:
        v = self.raw(col)
        if not v:
            if allow_empty:
                return None
            raise self.fail(col, v, "a number" + (f" ≥ {minimum:g}" if minimum is not None else ""))
        x = decimal(v)
        if x is None or (minimum is not None and x < minimum):
            raise self.fail(col, v, "a number" + (f" ≥ {minimum:g}" if minimum is not None else ""))
        return x

    def num(self, col: str, *, minimum: float | None = 0.0) -> float:
        x = self.float_(col, minimum=minimum)
        assert x is not None
        return x

    def int_(self, col: str, *, minimum: int = 0, maximum: int | None = None, allow_float: bool = False) -> int:
        v = self.raw(col)
        expected = f"an integer ≥ {minimum}" if maximum is None else f"an integer from {minimum} to {maximum:,}"
        if allow_float:
            f = decimal(v)
            if f is None or f != int(f):
                raise self.fail(col, v, expected)
            n = int(f)
        else:
            if not v.isascii() or not (v.lstrip("+-").isdigit() and len(v) <= 30):
                raise self.fail(col, v, expected)
            n = int(v)
        if n < minimum or (maximum is not None and n > maximum):
            raise self.fail(col, v, expected)
        return n


def decimal(text: str) -> float | None:
    """A finite number written with ASCII digits (``12``, ``-0.5``, ``1e3``), else None.

    Python's ``int``/``float`` also take ``'٣'`` (3), ``'1_000'``, ``'nan'`` and ``'inf'``, none of
    which a trace means: the grammar is :func:`pyvolcano.util.numbers.parse_float`'s."""
    try:
        x = parse_float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------- formatting
def go_duration(seconds: float) -> str:
    """Seconds as a Go duration string, to the millisecond: 66 → ``66s``, 0.5 → ``0.5s``."""
    ms = round(seconds * 1000)
    if ms <= 0:
        return "0s"
    whole, frac = divmod(ms, 1000)
    if frac == 0:
        return f"{whole}s"
    return f"{whole}.{frac:03d}".rstrip("0") + "s"


def cpu_qty(milli: float) -> str:
    """CPU milli-cores as a quantity: 12000 → ``12``, 12500 → ``12500m``."""
    m = math.ceil(milli - 1e-9)
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def mem_qty_mib(mib: float) -> str:
    """Memory in MiB as a quantity: 16384 → ``16Gi``, 12288.5 → ``12289Mi`` (rounded up)."""
    m = math.ceil(mib - 1e-9)
    return f"{m // 1024}Gi" if m % 1024 == 0 and m else f"{m}Mi"


def dns_label(text: str) -> str:
    """A DNS-1123 label made from ``text`` (lower case, ``_``/``.``/space → ``-``)."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return s[:63].rstrip("-") or "x"


# --------------------------------------------------------------------------- manifests
def node_manifest(name: str, *, cpu: str, memory: str, gpus: int, product: str | None = None,
                  labels: dict[str, str] | None = None, extra: dict[str, str] | None = None,
                  pods: int = 110) -> dict[str, Any]:
    lab = {HOSTNAME_LABEL: name}
    if product:
        lab[GPU_PRODUCT_LABEL] = product
    if labels:
        lab.update(labels)
    cap = {"cpu": cpu, "memory": memory, "pods": str(pods), NVIDIA_GPU: str(gpus)}
    if extra:
        cap.update(extra)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "status": {"capacity": cap, "allocatable": dict(cap)}}


def queue_manifest(name: str, weight: int, *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": md,
            "spec": {"weight": int(weight), "reclaimable": True}, "status": {"state": "Open"}}


def priority_class_manifest(name: str, value: int, description: str,
                            preemption_policy: str = "PreemptLowerPriority") -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": int(value), "preemptionPolicy": preemption_policy, "description": description}


def pod_template(requests: dict[str, str], *, duration: float | None, exit_code: int = 0,
                 annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
                 node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod template whose single container requests (and is limited to) ``requests``."""
    ann: dict[str, str] = {}
    if duration is not None:
        ann[DURATION] = go_duration(duration)
    if exit_code:
        ann[EXIT_CODE] = str(exit_code)
    if annotations:
        ann.update(annotations)
    md: dict[str, Any] = {"annotations": ann}
    if labels:
        md["labels"] = labels
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": IMAGE,
                        "resources": {"requests": dict(requests), "limits": dict(requests)}}],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {"metadata": md, "spec": spec}


def job_manifest(name: str, *, trace: str, submit: float, queue: str,
                 tasks: list[tuple[str, int, dict[str, Any]]], min_available: int | None = None,
                 priority_class: str | None = None, labels: dict[str, str] | None = None,
                 annotations: dict[str, str] | None = None, line: int | None = None) -> dict[str, Any]:
    """A Volcano Job; ``tasks`` are ``(task name, replicas, pod template)``; ``min_available``
    defaults to all replicas (a gang). When every template has a ``pyvolcano.io/duration``, the
    Job has the longest of them too: its declared runtime, which the job controller copies to
    its PodGroup, so the scheduler knows it before the pods exist."""
    ann = {SUBMIT_AT: go_duration(submit)}
    if line is not None:
        ann[TRACE_LINE] = str(line)
    if annotations:
        ann.update(annotations)
    runtimes = [((tpl.get("metadata") or {}).get("annotations") or {}).get(DURATION) for _, _, tpl in tasks]
    if runtimes and all(runtimes):
        ann.setdefault(DURATION, go_duration(max(parse_duration_strict(str(r)) for r in runtimes)))
    lab = {TRACE_LABEL: trace}
    if labels:
        lab.update(labels)
    total = sum(r for _, r, _ in tasks)
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": queue,
        "minAvailable": total if min_available is None else int(min_available),
        "ttlSecondsAfterFinished": FINISHED_JOB_TTL,
        "tasks": [{"name": t, "replicas": r, "template": tpl} for t, r, tpl in tasks],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": JOB_API_VERSION, "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": lab, "annotations": ann},
            "spec": spec}


# --------------------------------------------------------------------------- selection
T = TypeVar("T")


def select_window(items: list[T], submit: Callable[[T], float], window: tuple[float, float] | None,
                  limit: int | None, *, name: str = "trace") -> tuple[list[T], float]:
    """Keep the items submitted in ``[start, end)`` (all if no window), in submit order, then
    the first ``limit``. Returns the kept items and the shift to subtract from submit times:
    with a window, the first kept item's submit time (so it lands at 0), else 0."""
    if window is not None:
        start, end = window
        if not (math.isfinite(start) and end > start):
            raise TraceError(f"window {window!r} is empty", expected="(start, end) seconds with end > start")
        items = [it for it in items if start <= submit(it) < end]
    if limit is not None:
        if limit < 0:
            raise TraceError(f"limit {limit} is negative", expected="a non-negative job count")
        items = items[:limit]
    shift = submit(items[0]) if items and window is not None else 0.0
    return items, shift


def gpu_models(spec: str) -> str:
    """``V100M16|V100M32|V100M16`` → ``V100M16|V100M32`` (order kept, repeats dropped)."""
    seen: dict[str, None] = {}
    for part in spec.split("|"):
        p = part.strip()
        if p:
            seen.setdefault(p, None)
    return "|".join(seen)


def fmt_int(n: float) -> str:
    return f"{round(n):,}"


def selection_note(kind: str, kept: int, total: int, what: str, window: tuple[float, float] | None,
                   limit: int | None, shift: float) -> str:
    """``"Philly: 2,817 of 82,247 jobs (trace seconds 4,454,959 to 4,627,759, shifted by …)"``."""
    text = f"{kind}: {fmt_int(kept)} of {fmt_int(total)} {what}"
    extra = []
    if window is not None:
        extra.append(f"submitted in trace seconds {window[0]:,.0f} to {window[1]:,.0f}, "
                     f"shifted by {shift:,.0f}s so the first is at 0")
    if limit is not None:
        extra.append(f"the first {limit:,}")
    return text + (f" ({'; '.join(extra)})" if extra else "") + "."
