"""CronJobs, JobTemplates and JobFlows in ``pyvolcano simulate``: our workflow manifests (and
upstream's examples, when ``VOLCANO_EXAMPLES_DIR`` names them) run with a duration annotation added
(their only change), the virtual clock drives the cron schedule, the flow's jobs start in
dependency order, and the result groups each workflow's jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from pyvolcano.simulator.inputs import InputError, load_inputs, result_document, run_simulation
from workflow_examples import ORIGINS, OWN_WORKFLOWS, load, workflow_files

MIN = 60.0
HOUR = 3600.0
DAY = 24 * HOUR

def run(tmp_path: Path, docs: list[dict[str, Any]], until: str | None = None) -> dict[str, Any]:
    cluster, workload = tmp_path / "cluster.yaml", tmp_path / "workload.yaml"
    cluster.write_text(yaml.safe_dump(node("n1", cpu="8", memory="32Gi")), encoding="utf-8")
    workload.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    inputs = load_inputs(cluster=cluster, workload=workload, trace=None, trace_format=None, nodes=None, config=None,
                         until=until)
    return result_document(inputs, *run_simulation(inputs))


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_example_jobflow_runs_its_jobs_in_dependency_order(origin: str, tmp_path: Path) -> None:
    files = workflow_files(origin)
    flow, steps, layers = files.flow_name(), files.steps(), files.layers()
    out = run(tmp_path, load(files.templates, "2m") + load(files.flow, "2m"))
    jobs = out["jobs"]
    assert set(jobs) == {f"default/{flow}-{s}" for s in steps}
    assert all(j["phase"] == "Completed" and j["group"] == f"JobFlow default/{flow}" for j in jobs.values())

    def at(step: str, field: str) -> float:
        value: float = jobs[f"default/{flow}-{step}"][field]
        return value

    for step, targets in steps.items():
        assert all(at(step, "submitted") >= at(t, "finished") for t in targets), step
    [result] = out["workflows"]
    assert (result["kind"], result["name"], result["phase"], result["jobs"]) == ("JobFlow", f"default/{flow}",
                                                                                 "Succeed", len(steps))
    assert [(s["name"], s["layer"], s["phase"]) for s in result["steps"]] == [
        (s, layers[s], "Completed") for s in steps]
    assert out["stats"]["end_reason"] == "finished"


def test_our_pipelines_steps_start_as_their_targets_complete(tmp_path: Path) -> None:
    out = run(tmp_path, load(OWN_WORKFLOWS.templates, "2m") + load(OWN_WORKFLOWS.flow, "2m"))

    def at(step: str, field: str) -> float:
        value: float = out["jobs"][f"default/training-pipeline-{step}"][field]
        return value

    assert at("train", "submitted") >= at("prepare", "finished")
    assert at("evaluate", "submitted") == at("quantize", "submitted") >= at("train", "finished")
    assert at("publish", "submitted") >= max(at("evaluate", "finished"), at("quantize", "finished"))
    [flow] = out["workflows"]
    assert [(s["name"], s["layer"]) for s in flow["steps"]] == [
        ("prepare", 0), ("train", 1), ("evaluate", 2), ("quantize", 2), ("publish", 3)]


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_example_cronjob_creates_jobs_on_its_schedule_that_complete(origin: str, tmp_path: Path) -> None:
    files = workflow_files(origin)
    name = files.cronjob_name()
    out = run(tmp_path, load(files.cronjob, "1m"), until="2h30m")
    jobs = out["jobs"]
    assert jobs
    for key, job in jobs.items():
        # <cronjob>-<scheduled time in minutes since the Unix epoch>; virtual time 0 is 2024-01-01T00:00:00Z
        minutes = int(key.rsplit("-", 1)[1]) - 28401120
        assert job["submitted"] == pytest.approx(minutes * MIN, abs=1.0), key
        assert (job["group"], job["phase"]) == (f"CronJob default/{name}", "Completed"), key
    [cron] = out["workflows"]
    assert (cron["kind"], cron["name"], cron["phase"], cron["jobs"]) == ("CronJob", f"default/{name}", "Active",
                                                                         len(jobs))
    assert cron["next_run"] >= 2.5 * HOUR


def test_our_cronjob_runs_every_virtual_night_at_two(tmp_path: Path) -> None:
    out = run(tmp_path, load(OWN_WORKFLOWS.cronjob, "1m"), until="99h")  # four days and three hours
    jobs = out["jobs"]
    assert [round(j["submitted"]) for _, j in sorted(jobs.items())] == [2 * HOUR + d * DAY for d in range(5)]
    assert {j["group"] for j in jobs.values()} == {"CronJob default/nightly-retrain"}
    assert all(j["phase"] == "Completed" for j in jobs.values())
    [cron] = out["workflows"]
    assert (cron["kind"], cron["phase"], cron["schedule"], cron["next_run"]) == ("CronJob", "Active", "0 2 * * *",
                                                                                 5 * DAY + 2 * HOUR)
    # successfulJobsHistoryLimit 4: the oldest completed job was deleted, its record stays.
    assert cron["jobs"] == 5
    assert out["stats"]["end_reason"] == "until"


def test_forbid_skips_a_night_while_the_previous_run_is_active(tmp_path: Path) -> None:
    docs = load(OWN_WORKFLOWS.cronjob, "25h")  # concurrencyPolicy: Forbid
    jobs = run(tmp_path, docs, until="51h")["jobs"]
    # The first night's run lasts to 27h: the second night's is held back past its 300 s starting
    # deadline and skipped; the third night's runs.
    assert [round(j["submitted"]) for _, j in sorted(jobs.items())] == [2 * HOUR, 2 * HOUR + 2 * DAY]


def test_a_cronjob_without_until_is_refused_before_running(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"document 0 \(CronJob default/nightly-retrain\): a CronJob creates "
                                         r"jobs for as long as the run lasts; give --until"):
        run(tmp_path, load(OWN_WORKFLOWS.cronjob, "1m"))


def test_a_suspended_cronjob_lets_the_run_finish(tmp_path: Path) -> None:
    docs = load(OWN_WORKFLOWS.cronjob, "1m")
    docs[0]["spec"]["suspend"] = True
    out = run(tmp_path, docs)
    assert out["jobs"] == {}
    assert out["workflows"][0]["phase"] == "Suspended"


def test_the_same_workflow_run_gives_the_same_document(tmp_path: Path) -> None:
    docs = load(OWN_WORKFLOWS.templates, "90s") + load(OWN_WORKFLOWS.flow, "90s") + \
        load(OWN_WORKFLOWS.cronjob, "1m")

    def strip(d: dict[str, Any]) -> dict[str, Any]:
        d["stats"].pop("wall_seconds", None)
        for key in ("session_mean_s", "session_p50_s", "session_p99_s", "session_max_s", "wall_seconds"):
            d["stats"].pop(key, None)
        return d

    assert strip(run(tmp_path, docs, until="26h")) == strip(run(tmp_path, docs, until="26h"))


def test_the_table_lists_a_workflows_jobs_together_and_the_workflows(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pyvolcano.cli.simulate import run_simulate_command

    docs = load(OWN_WORKFLOWS.templates, "2m") + load(OWN_WORKFLOWS.flow, "2m")
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(node("n1", cpu="8", memory="32Gi")), encoding="utf-8")
    (tmp_path / "flow.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    code = run_simulate_command(cluster=tmp_path / "cluster.yaml", workload=tmp_path / "flow.yaml", trace=None,
                                trace_format=None, nodes=None, config=None, compare=None, until=None, seed=0,
                                report=None, output="table")
    out = capsys.readouterr().out
    assert code == 0
    assert "CREATED BY" in out and out.count("JobFlow default/training-pipeline") >= 6
    assert ("prepare:Completed -> train:Completed -> evaluate:Completed, quantize:Completed -> publish:Completed"
            in out)
