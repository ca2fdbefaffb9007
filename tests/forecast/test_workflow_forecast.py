"""Forecasts of a cluster with workflows: ``queue top`` and ``job run --dry-run`` know the jobs a
JobFlow or a CronJob has still to create. The state is a snapshot taken in the middle of a
simulated run of our training pipeline (its prepare step completed, train running) or of our
nightly CronJob."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyvolcano.conf import default_configuration
from pyvolcano.forecast.dryrun import dry_run_document
from pyvolcano.forecast.queue_top import queue_top_document
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import state_from_snapshot
from sim_builders import snapshot_at, vcjob
from workflow_examples import OWN_WORKFLOWS, load


def _snapshot(tmp_path: Path, docs: list[dict[str, Any]], until: float) -> Path:
    return snapshot_at(tmp_path / "snapshot.yaml", docs, until)


def _flow_snapshot(tmp_path: Path) -> Path:
    docs = load(OWN_WORKFLOWS.templates, "2m") + load(OWN_WORKFLOWS.flow, "2m")
    docs[-1]["spec"]["jobRetainPolicy"] = "retain"
    return _snapshot(tmp_path, docs, until=200)  # prepare ran 0-2m; train runs from 2m01s


def test_queue_top_lists_a_flows_next_steps_with_when_they_come(tmp_path: Path) -> None:
    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    doc = queue_top_document(state, default_configuration(), registry, queue=None, policy=RuntimePolicy())
    upcoming = {u["job"]: u for u in doc["upcoming"]}
    # prepare's job is not made again
    assert list(upcoming) == [f"default/training-pipeline-{s}" for s in ("evaluate", "quantize", "publish")]
    assert {u["created_by"] for u in upcoming.values()} == {"JobFlow default/training-pipeline"}
    # The snapshot's now is train's pod start (its newest timestamp): evaluate and quantize come
    # when its 2 minutes end.
    evaluate, quantize, publish = upcoming.values()
    assert evaluate["created_in_seconds"] == quantize["created_in_seconds"] == 120
    assert publish["created_in_seconds"] > 240
    assert evaluate["start_in_seconds"] is not None


def test_a_dry_run_names_the_flow_jobs_created_before_it_starts(tmp_path: Path) -> None:
    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    whole_node = vcjob("eval", cpu="8", duration="5m")
    doc = dry_run_document(state, [whole_node], "eval.yaml", default_configuration(), registry,
                           policy=RuntimePolicy())
    assert doc["placed_now"] is False
    assert [u["job"] for u in doc["upcoming"]] == ["default/training-pipeline-evaluate",
                                                    "default/training-pipeline-quantize"]


def test_queue_top_lists_a_cronjobs_next_run(tmp_path: Path) -> None:
    registry = default_registry()
    snap = _snapshot(tmp_path, load(OWN_WORKFLOWS.cronjob, "1m"), until=7300)  # one run at 2h
    state = state_from_snapshot([snap], registry)
    doc = queue_top_document(state, default_configuration(), registry, queue=None, policy=RuntimePolicy(),
                             horizon=3 * 86400)
    # Its next run, not every run of the horizon: the forecast then suspends the CronJob.
    [(job, at)] = [(u["job"], round(u["created_in_seconds"] + state.now)) for u in doc["upcoming"]]
    assert job.startswith("default/nightly-retrain-") and at == 86400 + 7200


def test_the_tables_name_the_upcoming_jobs(tmp_path: Path) -> None:
    from pyvolcano.cli.job_run import render_dry_run
    from pyvolcano.cli.queue import render_top

    registry = default_registry()
    state = state_from_snapshot([_flow_snapshot(tmp_path)], registry)
    top = render_top(queue_top_document(state, default_configuration(), registry, queue=None,
                                        policy=RuntimePolicy()))
    assert "UPCOMING JOB                        CREATED BY                         CREATED" in top
    assert ("default/training-pipeline-publish   JobFlow default/training-pipeline  2024-01-01T00:06:03Z (in 4m1s)"
            in top)
    doc = dry_run_document(state, [vcjob("eval", cpu="8", duration="5m")], "eval.yaml", default_configuration(),
                           registry, policy=RuntimePolicy())
    assert ("BEFORE IT  default/training-pipeline-evaluate from JobFlow default/training-pipeline (created in 2m)"
            in render_dry_run(doc))
