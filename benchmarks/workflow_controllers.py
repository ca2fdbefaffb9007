"""Benchmark: what the CronJob, JobFlow and JobTemplate controllers cost a run that has none.

Runs the first ``--limit`` jobs of the Philly trace (no CronJob, JobTemplate or JobFlow) through
the simulator with every default controller, timing each controller's ``on_event`` and ``run``
calls, and prints the three workflow controllers' share of the run's CPU time next to the other
controllers' (less what timing the calls costs, measured on a controller that does nothing).
Then runs the tests' training pipeline JobFlow (five jobs) and nightly CronJob (a virtual week
of runs, ``tests/data/workflows``) to print what they cost when used. Not a test: it never fails
on timing.

    python benchmarks/workflow_controllers.py [--limit 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

from pyvolcano.conf import default_configuration
from pyvolcano.controllers import default_controllers
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.seeded_entropy import SeededEntropy
from pyvolcano.simulator.traces import load_trace
from pyvolcano.simulator.workload import Submission

WORKFLOW = ("cronjob-controller", "jobflow-controller", "jobtemplate-controller")
NULL = "(timing only)"


class Null:
    """A controller that does nothing: what timing a controller's calls costs by itself."""

    name = NULL

    def on_event(self, ev: Any) -> None:
        return None

    def run(self, now: float) -> float | None:
        return None


class Timed:
    """A controller whose calls are timed (CPU seconds of this process)."""

    def __init__(self, inner: Any, spent: dict[str, float]):
        self.inner = inner
        self.name = inner.name
        if hasattr(inner, "watches"):
            self.watches = inner.watches  # the simulator gives it only these kinds' events
        self.spent = spent
        spent.setdefault(self.name, 0.0)

    def on_event(self, ev: Any) -> None:
        t = time.process_time()
        self.inner.on_event(ev)
        self.spent[self.name] += time.process_time() - t

    def run(self, now: float) -> float | None:
        t = time.process_time()
        wake: float | None = self.inner.run(now)
        self.spent[self.name] += time.process_time() - t
        return wake


def _run(subs: list[Submission], until: float = float("inf")) -> tuple[float, dict[str, float], int]:
    spent: dict[str, float] = {}

    def factory(*, store: Any, entropy: Any) -> list[Any]:
        controllers = default_controllers(store=store, entropy=SeededEntropy(random.Random(0)))
        return [Timed(c, spent) for c in [*controllers, Null()]]

    sim = Simulation(config=default_configuration(), registry=default_registry(), controllers_factory=factory)
    sim.submit(subs)
    t0 = time.process_time()
    res = sim.run(until=until)
    return time.process_time() - t0, spent, len(res.jobs)


def _report(title: str, cpu: float, spent: dict[str, float], jobs: int) -> None:
    ours = sum(spent[n] for n in WORKFLOW) - len(WORKFLOW) * spent[NULL]
    print(f"{title}: {jobs:,} jobs, {cpu:.2f} CPU s in all")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:24s} {s * 1000:9.1f} ms  {s / cpu:6.2%}")
    print(f"  workflow controllers, less the timing: {ours * 1000:.1f} ms, {ours / cpu:.2%} of the run")


def _workflows() -> list[dict[str, Any]]:
    """The tests' training pipeline (JobTemplates, then the JobFlow; 2 minutes a task) and
    nightly CronJob (1 minute a task), read by the tests' own loader
    (``tests/workflow_examples.py``, which gives every task's pod template its duration)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from workflow_examples import OWN_WORKFLOWS, load

    return [*load(OWN_WORKFLOWS.templates, "2m"), *load(OWN_WORKFLOWS.flow, "2m"), *load(OWN_WORKFLOWS.cronjob, "1m")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=2000, help="Philly jobs to run (default 2000)")
    args = ap.parse_args()
    trace = load_trace("philly", limit=args.limit)
    _report(f"Philly, first {args.limit:,} jobs (no workflows)", *_run(trace.submissions()))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    docs = [node, *_workflows()]
    subs = [Submission(0.0, i, "bench", d) for i, d in enumerate(docs)]
    _report("a five-step JobFlow and a nightly CronJob, 1 virtual week", *_run(subs, until=7 * 86400.0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
