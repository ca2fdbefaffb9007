"""The merged rows of a sweep: one per cell from its document, and means over seeds."""

import csv
from pathlib import Path

from pyvolcano.simulator.sweep.cell import CellOutcome
from pyvolcano.simulator.sweep.comparison import cell_rows, group_rows, write_csv
from pyvolcano.simulator.sweep.grid import SweepSpec


def _doc(mean_wait: float, jobs: int = 4) -> dict[str, object]:
    return {"summary": {"jobs": jobs, "mean_wait_s": mean_wait, "gpu_allocation_ratio": 0.5}, "stats": {"sessions": 9}}


def test_a_failed_cell_keeps_its_row_and_counts_in_its_group_but_not_in_the_means(tmp_path: Path) -> None:
    cells = SweepSpec(seeds=[0, 1, 2]).cells()
    outcomes = [CellOutcome(0, document=_doc(10.0)), CellOutcome(1, error="boom"), CellOutcome(2, document=_doc(30.0))]
    rows = cell_rows(cells, outcomes)
    assert [(r["cell"], r["status"], r["mean_wait_s"], r["error"]) for r in rows] == [
        ("001", "ok", 10.0, None), ("002", "failed", None, "boom"), ("003", "ok", 30.0, None)]
    (group,) = group_rows(rows)
    assert (group["seeds"], group["runs"], group["failed"], group["mean_wait_s"], group["jobs"]) == (
        "0,1,2", 2, 1, 20.0, 4.0)
    written = list(csv.DictReader(write_csv(rows, tmp_path / "cells.csv").open()))
    assert [(r["cell"], r["mean_wait_s"], r["error"]) for r in written] == [
        ("001", "10", ""), ("002", "", "boom"), ("003", "30", "")]


def test_wall_seconds_appear_only_with_timings() -> None:
    cells = SweepSpec().cells()
    outcomes = [CellOutcome(0, document=_doc(1.0), seconds=2.5)]
    assert "wall_seconds" not in cell_rows(cells, outcomes)[0]
    assert cell_rows(cells, outcomes, timings=True)[0]["wall_seconds"] == 2.5
