"""One cell of a sweep, run where a worker runs it: the same steps as ``pyvolcano simulate``.

:func:`run_cell` loads the cell's inputs with :func:`pyvolcano.simulator.inputs.load_inputs`,
runs them with :func:`~pyvolcano.simulator.inputs.run_simulation` and builds the document with
:func:`~pyvolcano.simulator.inputs.result_document`, so a cell's document is the one
``simulate -o json`` prints for the same options. It never raises: a failure becomes a
:class:`CellOutcome` with its one-line error (and, for an unexpected exception, the traceback),
so one bad cell costs the sweep nothing but itself.

With ``report=True`` the cell also writes simulate's report directory in a temporary
directory and returns its files' bytes, so workers need no file system shared with the
caller (a Ray cluster's nodes have none in general).
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.simulator.sweep.grid import Cell

__all__ = ["CellOutcome", "run_cell"]


@dataclass
class CellOutcome:
    """What came back from one cell: its document, or the error that stopped it."""

    index: int
    document: dict[str, Any] | None = None
    error: str | None = None
    detail: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0
    worker: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


def run_cell(cell: Cell, report: bool = False) -> CellOutcome:
    """Run ``cell`` to its end (see the module docstring)."""
    from pyvolcano.simulator.inputs import load_inputs, result_document, run_simulation

    started = time.perf_counter()
    outcome = CellOutcome(index=cell.index, worker=f"{socket.gethostname()}:{os.getpid()}")
    try:
        inputs = load_inputs(cluster=cell.cluster, workload=cell.workload, trace=cell.trace,
                             trace_format=cell.trace_format, nodes=cell.nodes, config=cell.config, until=cell.until,
                             seed=cell.seed, schedule_period=cell.schedule_period,
                             default_duration=cell.default_duration)
        res, metrics = run_simulation(inputs)
        outcome.document = result_document(inputs, res, metrics)
        if report:
            outcome.files = _report_files(metrics)
    except ValueError as e:  # bad input: the loaders' one-line messages
        outcome.error = " ".join(str(e).split())
    except Exception as e:  # any failure of one cell is reported, the others go on
        outcome.error = f"{type(e).__name__}: {' '.join(str(e).split())}"
        outcome.detail = traceback.format_exc()
    outcome.seconds = time.perf_counter() - started
    return outcome


def _report_files(metrics: Any) -> dict[str, bytes]:
    from pyvolcano.simulator.report.directory import write_report

    with tempfile.TemporaryDirectory(prefix="pyvolcano-cell-") as tmp:
        written = write_report(metrics, Path(tmp))
        return {p.name: p.read_bytes() for p in written}
