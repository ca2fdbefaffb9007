"""Forecasts of a cluster with workflows: ``queue top`` and ``job run --dry-run`` know the jobs a
JobFlow or a CronJob has still to create. The state is a snapshot taken in the middle of a
simulated run of upstream's JobFlow example (test-a completed, test-b running) or of a CronJob."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyvolcano.conf import default_configuration
from pyvolcano.forecast.dryrun import dry_run_document
from pyvolcano.forecast.queue_top import queue_top_document
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import state_from_snapshot
from sim_builders import snapshot_at, upstream_example, vcjob


def _snapshot(tmp_path: Path, docs: list[dict[str, Any]], until: float) -> Path:
    return snapshot_at(tmp_path / "snapshot.yaml", docs, until)


def _flow_snapshot(tmp_path: Path) -> Path:
    docs = upstream_example("jobflow/JobTemplate.yaml", "2m") + upstream_example("jobflow/JobFlow.yaml", "2m")
    docs[-1]["spec"]["jobRetainPolicy"] = "retain"
    return _snapshot(tmp_path, docs, until=200)  # test-a ran 0-2m; test-b runs from 2m01s


def test_queue_top_lists_a_flows_next_steps_with_when_they_come(tmp_path: Path) -> None:
    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    doc = queue_top_document(state, default_configuration(), registry, queue=None, policy=RuntimePolicy())
    upcoming = {u["job"]: u for u in doc["upcoming"]}
    assert list(upcoming) == ["default/test-c", "default/test-d", "default/test-e"]  # test-a is not made again
    assert {u["created_by"] for u in upcoming.values()} == {"JobFlow default/test"}
    # The snapshot's now is test-b's pod start (its newest timestamp): c and d come when its 2 minutes end.
    assert upcoming["default/test-c"]["created_in_seconds"] == upcoming["default/test-d"]["created_in_seconds"] \
        == 120
    assert upcoming["default/test-e"]["created_in_seconds"] > 240
    assert upcoming["default/test-c"]["start_in_seconds"] is not None


def test_a_dry_run_names_the_flow_jobs_created_before_it_starts(tmp_path: Path) -> None:
    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    whole_node = vcjob("eval", cpu="8", duration="5m")
    doc = dry_run_document(state, [whole_node], "eval.yaml", default_configuration(), registry,
                           policy=RuntimePolicy())
    assert doc["placed_now"] is False
    assert [u["job"] for u in doc["upcoming"]] == ["default/test-c", "default/test-d"]


def test_queue_top_lists_a_cronjobs_next_run(tmp_path: Path) -> None:
    registry = default_registry()
    snap = _snapshot(tmp_path, upstream_example("cronjob/cronjob.yaml", "1m"), until=400)  # one run at 5m
    state = state_from_snapshot([snap], registry)
    doc = queue_top_document(state, default_configuration(), registry, queue=None, policy=RuntimePolicy(),
                             horizon=700)
    # Its next run, not every run of the horizon: the forecast then suspends the CronJob.
    [(job, at)] = [(u["job"], round(u["created_in_seconds"] + state.now)) for u in doc["upcoming"]]
    assert job.startswith("default/volcano-cronjob-example-") and at == 600


def test_the_tables_name_the_upcoming_jobs(tmp_path: Path) -> None:
    from pyvolcano.cli.job_run import render_dry_run
    from pyvolcano.cli.queue import render_top

    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    top = render_top(queue_top_document(state, default_configuration(), registry, queue=None,
                                        policy=RuntimePolicy()))
    assert "UPCOMING JOB    CREATED BY            CREATED" in top
    assert "default/test-e  JobFlow default/test  2024-01-01T00:06:03Z (in 4m1s)" in top
    doc = dry_run_document(state, [vcjob("eval", cpu="8", duration="5m")], "eval.yaml", default_configuration(),
                           registry, policy=RuntimePolicy())
    assert "BEFORE IT  default/test-c from JobFlow default/test (created in 2m)" in render_dry_run(doc)
