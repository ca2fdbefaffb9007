"""The dashboard's Workflows view: a JobFlow as a DAG of its steps with each step's phase (and
when a step still to come is created), a CronJob with its runs and next run; from a snapshot,
from a simulation run at a time t, over HTTP, and drawn in a real browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from dashboard_serving import serving
from starlette.testclient import TestClient
from typer.testing import CliRunner

from builders import node
from pyvolcano.cli.app import app
from pyvolcano.dashboard.run_views import ReportSource
from pyvolcano.dashboard.server import create_app
from pyvolcano.dashboard.sources import SnapshotSource
from pyvolcano.runtime.registry import default_registry
from sim_builders import snapshot_at
from workflow_examples import OWN_WORKFLOWS, load


def _flow_and_cron(step: str) -> list[dict[str, Any]]:
    """The training pipeline (each step running for ``step``, its jobs kept) and the nightly
    CronJob (each run one minute)."""
    docs = load(OWN_WORKFLOWS.templates, step) + load(OWN_WORKFLOWS.flow, step)
    docs[-1]["spec"]["jobRetainPolicy"] = "retain"
    return docs + load(OWN_WORKFLOWS.cronjob, "1m")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # At 2h00m30s: prepare (0-50m) and train (50m-1h40m) completed, evaluate and quantize run
    # (1h40m-2h30m), publish is still to come; the CronJob's first run started at 2h.
    return snapshot_at(tmp_path_factory.mktemp("wf") / "snapshot.yaml", _flow_and_cron("50m"), until=7230)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("wf-run")
    (d / "cluster.yaml").write_text(yaml.safe_dump(node("n1", cpu="8", memory="32Gi")))
    (d / "workload.yaml").write_text(yaml.safe_dump_all(_flow_and_cron("2m")))
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(d / "cluster.yaml"), "--workload",
                                      str(d / "workload.yaml"), "--until", "51h", "--report", str(d / "report"),
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    return d / "report"


def _by_kind(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["kind"]: w for w in view["workflows"]}


def test_a_snapshots_flow_shows_each_steps_phase_and_when_the_rest_comes(snapshot: Path) -> None:
    view = SnapshotSource(snapshot, default_registry()).views().workflows()
    flow = _by_kind(view)["JobFlow"]
    assert (flow["name"], flow["phase"]) == ("default/training-pipeline", "Running")
    steps = {s["name"]: s for s in flow["steps"]}
    assert [(n, s["phase"], s["layer"]) for n, s in steps.items()] == [
        ("prepare", "Completed", 0), ("train", "Completed", 1), ("evaluate", "Running", 2), ("quantize", "Running", 2),
        ("publish", "", 3)]
    assert steps["publish"]["created"] is not None and steps["publish"]["created"] > view["now"]
    assert steps["publish"]["targets"] == ["evaluate", "quantize"]


def test_a_snapshots_cronjob_shows_its_runs_and_next_run(snapshot: Path) -> None:
    cron = _by_kind(SnapshotSource(snapshot, default_registry()).views().workflows())["CronJob"]
    assert (cron["name"], cron["phase"], cron["schedule"]) == ("default/nightly-retrain", "Active", "0 2 * * *")
    assert [s["phase"] for s in cron["steps"]] == ["Running"]
    assert cron["next_run"] == "2024-01-02T02:00:00Z"
    assert cron["upcoming"][0]["created"].startswith("2024-01-02T02:00:00")


def test_a_runs_workflows_at_time_t(report: Path) -> None:
    source = ReportSource(report)
    early = _by_kind(source.views(150.0).workflows())
    assert [s["phase"] for s in early["JobFlow"]["steps"]] == ["Completed", "Running", "", "", ""]
    assert early["JobFlow"]["phase"] == "Running"
    assert early["CronJob"]["steps"] == [] and early["CronJob"]["next_run"].startswith("2024-01-01T02:00:00")
    end = _by_kind(source.views().workflows())
    assert end["JobFlow"]["phase"] == "Succeed"
    assert len(end["CronJob"]["steps"]) == 3  # at 2h, 26h and 50h


def test_the_workflows_route_answers_json(snapshot: Path) -> None:
    client = TestClient(create_app(SnapshotSource(snapshot, default_registry())), base_url="http://127.0.0.1")
    body = client.get("/api/workflows").json()
    assert [w["kind"] for w in body["workflows"]] == ["CronJob", "JobFlow"]


@pytest.fixture(scope="module")
def snapshot_url(snapshot: Path) -> Iterator[str]:
    with serving(SnapshotSource(snapshot, default_registry())) as url:
        yield url


def test_the_browser_draws_the_flow_as_a_dag_and_the_cronjobs_next_run(page: Any, snapshot_url: str) -> None:
    page.goto(f"{snapshot_url}/#/workflows")
    page.wait_for_selector('body[data-view="workflows"]', state="attached")
    flow = page.locator('section.jobflow[data-workflow="default/training-pipeline"]')
    assert flow.locator("svg.dag g.step").count() == 5
    # prepare→train, train→evaluate, train→quantize, evaluate→publish, quantize→publish
    assert flow.locator("svg.dag line.edge").count() == 5
    assert flow.locator('g.step[data-step="evaluate"]').get_attribute("data-phase") == "Running"
    assert flow.locator('g.step[data-step="publish"]').get_attribute("class") == "step waiting"
    assert "comes" in flow.locator('g.step[data-step="publish"] text.step-phase').text_content()
    cron = page.locator('section.cronjob[data-workflow="default/nightly-retrain"]')
    assert cron.locator("dd.next-run").text_content() == "2024-01-02T02:00:00Z"
    flow.locator('g.step[data-step="prepare"]').click()
    page.wait_for_selector('body[data-view="job"]', state="attached")
    assert page.url.endswith("#/job/default/training-pipeline-prepare")
