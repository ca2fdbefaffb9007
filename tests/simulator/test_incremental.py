"""The simulator's incremental shortcuts change no decision.

Every shortcut of the cache's memo (cache/memo.py: per-queue sums kept by deltas, settled jobs
left alone at session close, the kept values such as proportion's water-filling and the
predicates' stable filters, the feasibility masks kept across sessions, the passes that visit
only the jobs the change feed reported: the status keys, the fit-error reset, enqueue's,
allocate's and backfill's job queues, gang's close, the diagnosis, the writer's and the
collector's walks) is switched back to its from-scratch form with the memo's one switch, and
the whole simulation — every job's phase and times, every timeline entry, the session count —
must come out the same. The metrics collector's GPU ledger, kept
between samples, must give the fragmentation a fresh ledger gives at every sample; and the
watch events handed out without copies must come back unchanged from every consumer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.simulator.test_runtime import PREEMPT_CONF, job, node

from pyvolcano.api.job import JobChanges
from pyvolcano.cache.memo import SessionMemo
from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator import collector
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.traces import load_trace
from pyvolcano.simulator.workload import Submission
from pyvolcano.store.base import clone
from pyvolcano.store.memory import InMemoryStore


def _from_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SessionMemo, "incremental", False)


def _outcome(sim: Simulation) -> str:
    res = sim.run()
    assert all(r.phase == "Completed" for r in res.jobs.values())
    out = res.to_json()
    out["stats"].pop("wall_seconds")
    out["timeline"] = res.timeline
    return json.dumps(out, sort_keys=True)


def _philly_slice() -> Simulation:
    sim = Simulation(config=default_configuration(), registry=default_registry(), seed=0)
    sim.submit(load_trace("philly", limit=150).submissions())
    return sim


def _preemption() -> Simulation:
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
           for n, v in (("high", 1000), ("low", 1))]
    objs: list[dict[str, Any]] = [*pcs, node("n1", cpu="4")]
    objs += [job(f"low{i}", replicas=4, duration="300s", priority_class="low",
                 policies=[{"event": "PodEvicted", "action": "RestartJob"}]) for i in range(2)]
    subs = [Submission(0.0, i, "test", o) for i, o in enumerate(objs)]
    subs += [Submission(30.0 + 40 * i, 100 + i, "test", job(f"high{i}", replicas=2, duration="60s",
                                                            priority_class="high")) for i in range(3)]
    sim = Simulation(config=load_scheduler_conf(PREEMPT_CONF), registry=default_registry(), seed=0)
    sim.submit(subs)
    return sim


@pytest.mark.parametrize("scenario", [_philly_slice, _preemption], ids=["philly-150", "preemption"])
def test_incremental_session_state_matches_recomputing_from_scratch(
    scenario: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    incremental = _outcome(scenario())
    if scenario is _preemption:
        assert '"evict ' in incremental  # the scenario exercises evictions and restarts
    _from_scratch(monkeypatch)
    assert _outcome(scenario()) == incremental


@pytest.mark.parametrize("scenario", [_philly_slice, _preemption], ids=["philly-150", "preemption"])
def test_fragmentation_sampled_from_the_kept_ledger_matches_a_fresh_ledger(
    scenario: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept_value = collector.FragmentationTracker.value
    compared: list[tuple[float, float]] = []

    def value(self: collector.FragmentationTracker) -> float:
        got = kept_value(self)
        compared.append((got, collector.fragmentation(self.cache)))
        return got

    monkeypatch.setattr(collector.FragmentationTracker, "value", value)
    scenario().run()
    assert compared and all(got == fresh for got, fresh in compared)
    if scenario is _philly_slice:
        assert any(got > 0 for got, _ in compared)  # the slice does fragment its GPUs


@pytest.mark.parametrize("scenario", [_philly_slice, _preemption], ids=["philly-150", "preemption"])
def test_watch_consumers_leave_the_shared_event_objects_unchanged(
    scenario: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded: list[tuple[dict[str, Any], dict[str, Any]]] = []
    record = InMemoryStore._record

    def keep_a_copy(self: InMemoryStore, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        recorded.append((obj, clone(obj)))
        record(self, event_type, kind, obj)

    monkeypatch.setattr(InMemoryStore, "_record", keep_a_copy)
    scenario().run()
    assert recorded and all(obj == copy for obj, copy in recorded)


def test_an_overflowing_change_feed_falls_back_to_walking_every_job(monkeypatch: pytest.MonkeyPatch) -> None:
    incremental = _outcome(_philly_slice())
    init = JobChanges.__init__

    def tiny(self: JobChanges, limit: int = 1) -> None:
        init(self, 1)  # every subscriber overflows at its second uid

    monkeypatch.setattr(JobChanges, "__init__", tiny)
    assert _outcome(_philly_slice()) == incremental
