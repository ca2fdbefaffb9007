"""The built-in scenario shows what a batch scheduler does: queues compete, gangs wait, reclaim evicts.

The run stops at 13 virtual hours (about 5 s): enough for the first reclaim evictions, while
every queue has work and the large gangs are still waiting for whole machines.
"""

from __future__ import annotations

import statistics

import pytest

from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.report.stats import summarize
from pyvolcano.simulator.runtime import Simulation, SimulationResult
from pyvolcano.simulator.traces import builtin_scenario

HORIZON = 13 * 3600.0


@pytest.fixture(scope="module")
def first_hours() -> tuple[SimulationResult, dict]:
    tr = builtin_scenario()
    assert tr.config is not None
    sim = Simulation(config=load_scheduler_conf(tr.config), registry=default_registry())
    sim.submit(tr.submissions())
    res = sim.run(until=HORIZON)
    return res, summarize(sim.metrics)


def test_reclaim_evicts_pods_of_queues_above_their_deserved_share(first_hours: tuple[SimulationResult, dict]) -> None:
    res, summary = first_hours
    evictions = [what for _, what in res.timeline if what.startswith("evict ")]
    assert evictions and all(what.endswith("(reclaim)") for what in evictions)
    assert summary["summary"]["preemptions"] == len(evictions)


def test_the_largest_queue_gets_less_than_it_deserves_while_others_wait(
        first_hours: tuple[SimulationResult, dict]) -> None:
    _, summary = first_hours
    big = summary["queues"]["ee9e8c"]
    assert big["busy_mean_share"] < big["busy_mean_deserved_share"]
    waiting_queues = {name for name, q in summary["queues"].items() if q["mean_wait_s"] and q["mean_wait_s"] > 600}
    assert len(waiting_queues) >= 3
    assert summary["summary"]["busy_mean_pending_jobs"] > 5


def test_gangs_wait_longer_than_single_pod_jobs(first_hours: tuple[SimulationResult, dict]) -> None:
    res, _ = first_hours
    gang_keys = {"default/philly-80379", "default/philly-80380", "default/philly-80408"}  # 4, 16 and 4 pods
    single = [r.started - r.submitted for k, r in res.jobs.items()
              if k not in gang_keys and r.started is not None]
    for key in gang_keys:
        rec = res.jobs[key]
        waited = (rec.started if rec.started is not None else HORIZON) - rec.submitted
        assert waited > 4 * statistics.median(single)
