"""Where a sweep's cells run: local worker processes, or the workers of a Ray cluster.

* :func:`run_local` — a :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn``
  start method (each worker a fresh interpreter: nothing inherited from the caller's state, the
  same on every platform), ``workers`` processes at a time.
* :func:`run_ray` — one Ray task per cell (one CPU each, no retry), on the cluster at
  ``address`` (``auto``: the one this machine belongs to; ``local``: a new cluster on this
  machine with ``workers`` CPUs, stopped at the end). Ray is an optional dependency
  (``pip install 'pyvolcano[ray]'``), imported only here and only when called; its absence is
  an :class:`ExecutorError`. Cells' input files must be readable at the same paths on every
  node (a shared file system); results come back as values, never as files.

Both call ``on_done`` with each :class:`~pyvolcano.simulator.sweep.cell.CellOutcome` as it
arrives (in completion order) and return the outcomes in cell order. A cell whose worker dies
(killed, out of memory) comes back as a failed outcome; the other cells go on (locally, the
cells a dead worker's pool did not finish run again on a fresh pool, see :func:`run_local`).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pyvolcano.simulator.sweep.cell import CellOutcome, run_cell
from pyvolcano.simulator.sweep.grid import Cell

__all__ = ["ExecutorError", "run_local", "run_ray"]

OnDone = Callable[[CellOutcome], None]


class ExecutorError(RuntimeError):
    """The sweep cannot start its workers (e.g. Ray is not installed); one line for ``error:``."""


def _lost(cell: Cell, why: BaseException) -> CellOutcome:
    return CellOutcome(index=cell.index, error=f"the worker running this cell failed: {type(why).__name__}: "
                                                 f"{' '.join(str(why).split())}")


def run_local(cells: Sequence[Cell], *, workers: int, report: bool = False,
              on_done: OnDone | None = None) -> list[CellOutcome]:
    """Run ``cells`` on ``workers`` local processes.

    A worker that dies breaks its pool: every cell not finished on it fails with
    :class:`BrokenProcessPool`, whichever cell killed it. Those cells run again on a fresh
    pool; when a pool finishes none of its cells, each of them runs alone on a pool of its own,
    so a cell that kills its worker every time is the only one that fails."""
    outcomes: dict[int, CellOutcome] = {}
    context = multiprocessing.get_context("spawn")

    def record(outcome: CellOutcome) -> None:
        outcomes[outcome.index] = outcome
        if on_done is not None:
            on_done(outcome)

    todo = list(cells)
    while todo:
        broken = _pool_round(todo, workers, context, report, record)
        if len(broken) < len(todo) and len(broken) > 1:
            todo = broken
            continue
        for cell in broken:  # alone: a dead worker now names its own cell
            for lost in _pool_round([cell], 1, context, report, record):
                record(_lost(lost, BrokenProcessPool("the worker process died while running this cell")))
        break
    return [outcomes[c.index] for c in cells]


def _pool_round(cells: Sequence[Cell], workers: int, context: Any, report: bool,
                record: OnDone) -> list[Cell]:
    """Run ``cells`` on one pool; record what came back and return the cells a dead worker lost."""
    broken: list[Cell] = []
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(cells))), mp_context=context) as pool:
        futures: dict[Future[CellOutcome], Cell] = {pool.submit(run_cell, cell, report): cell for cell in cells}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: futures[f].index):
                cell = futures[fut]
                try:
                    record(fut.result())
                except BrokenProcessPool:
                    broken.append(cell)
                except Exception as e:  # e.g. an outcome that cannot be sent back
                    record(_lost(cell, e))
    return sorted(broken, key=lambda c: c.index)


def import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ExecutorError(f"--ray needs the ray package, which is not installed ({e}); "
                            "install it with: pip install 'pyvolcano[ray]'") from None
    return ray


def run_ray(cells: Sequence[Cell], *, address: str, workers: int | None = None, report: bool = False,
            on_done: OnDone | None = None) -> list[CellOutcome]:
    """Run ``cells`` as Ray tasks on the cluster at ``address`` (see the module docstring)."""
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        try:
            if address == "local":
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as e:  # connection refused, bad address: one line, exit 2
            raise ExecutorError(f"--ray {address}: cannot start or reach the Ray cluster: "
                                f"{type(e).__name__}: {' '.join(str(e).split())}") from None
        started_here = True
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
        refs: dict[Any, Cell] = {task.remote(cell, report): cell for cell in cells}
        outcomes: dict[int, CellOutcome] = {}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                cell = refs[ref]
                try:
                    outcome = ray.get(ref)
                except Exception as e:  # a lost worker or node fails its cell only
                    outcome = _lost(cell, e)
                outcomes[cell.index] = outcome
                if on_done is not None:
                    on_done(outcome)
        return [outcomes[c.index] for c in cells]
    finally:
        if started_here:
            ray.shutdown()
