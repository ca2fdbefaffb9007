"""CronJobs, JobTemplates and JobFlows in ``pyvolcano simulate``: upstream's examples run with a
duration annotation added (their only change), the virtual clock drives the cron schedule, the
flow's jobs start in dependency order, and the result groups each workflow's jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from pyvolcano.simulator.inputs import InputError, load_inputs, result_document, run_simulation
from sim_builders import upstream_example

MIN = 60.0


def run(tmp_path: Path, docs: list[dict[str, Any]], until: str | None = None) -> dict[str, Any]:
    cluster, workload = tmp_path / "cluster.yaml", tmp_path / "workload.yaml"
    cluster.write_text(yaml.safe_dump(node("n1", cpu="8", memory="32Gi")), encoding="utf-8")
    workload.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    inputs = load_inputs(cluster=cluster, workload=workload, trace=None, trace_format=None, nodes=None, config=None,
                         until=until)
    return result_document(inputs, *run_simulation(inputs))


def test_upstreams_jobflow_runs_its_jobs_in_dependency_order(tmp_path: Path) -> None:
    docs = upstream_example("jobflow/JobTemplate.yaml", "2m") + \
        upstream_example("jobflow/JobFlow.yaml", "2m")
    out = run(tmp_path, docs)
    jobs = out["jobs"]
    assert set(jobs) == {f"default/test-{s}" for s in "abcde"}
    assert all(j["phase"] == "Completed" and j["group"] == "JobFlow default/test" for j in jobs.values())

    def at(step: str, field: str) -> float:
        value: float = jobs[f"default/test-{step}"][field]
        return value

    assert at("b", "submitted") >= at("a", "finished")
    assert at("c", "submitted") == at("d", "submitted") >= at("b", "finished")
    assert at("e", "submitted") >= max(at("c", "finished"), at("d", "finished"))
    [flow] = out["workflows"]
    assert (flow["kind"], flow["name"], flow["phase"], flow["jobs"]) == ("JobFlow", "default/test", "Succeed", 5)
    assert [(s["name"], s["layer"], s["phase"]) for s in flow["steps"]] == [
        ("a", 0, "Completed"), ("b", 1, "Completed"), ("c", 2, "Completed"), ("d", 2, "Completed"),
        ("e", 3, "Completed")]
    assert out["stats"]["end_reason"] == "finished"


def test_upstreams_cronjob_runs_every_five_virtual_minutes(tmp_path: Path) -> None:
    out = run(tmp_path, upstream_example("cronjob/cronjob.yaml", "1m"), until="31m")
    jobs = out["jobs"]
    assert [round(j["submitted"]) for _, j in sorted(jobs.items())] == [300, 600, 900, 1200, 1500, 1800]
    assert {j["group"] for j in jobs.values()} == {"CronJob default/volcano-cronjob-example"}
    assert all(j["phase"] == "Completed" for k, j in jobs.items() if j["submitted"] < 1800)
    [cron] = out["workflows"]
    assert (cron["kind"], cron["phase"], cron["next_run"]) == ("CronJob", "Active", 35 * MIN)
    # successfulJobsHistoryLimit 5: the oldest completed job was deleted, its record stays.
    assert cron["jobs"] == 6
    assert out["stats"]["end_reason"] == "until"


def test_forbid_skips_runs_while_a_long_job_is_active(tmp_path: Path) -> None:
    docs = upstream_example("cronjob/cronjob.yaml", "7m")  # concurrencyPolicy: Forbid
    jobs = run(tmp_path, docs, until="21m")["jobs"]
    # 5m runs to 12m: the 10m run is held back past its 60 s starting deadline; 15m runs.
    assert [round(j["submitted"]) for _, j in sorted(jobs.items())] == [300, 900]


def test_a_cronjob_without_until_is_refused_before_running(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"document 0 \(CronJob default/volcano-cronjob-example\): a CronJob creates "
                                         r"jobs for as long as the run lasts; give --until"):
        run(tmp_path, upstream_example("cronjob/cronjob.yaml", "1m"))


def test_a_suspended_cronjob_lets_the_run_finish(tmp_path: Path) -> None:
    docs = upstream_example("cronjob/cronjob.yaml", "1m")
    docs[0]["spec"]["suspend"] = True
    out = run(tmp_path, docs)
    assert out["jobs"] == {}
    assert out["workflows"][0]["phase"] == "Suspended"


def test_the_same_workflow_run_gives_the_same_document(tmp_path: Path) -> None:
    docs = upstream_example("jobflow/JobTemplate.yaml", "90s") + \
        upstream_example("jobflow/JobFlow.yaml", "90s") + \
        upstream_example("cronjob/cronjob.yaml", "1m")

    def strip(d: dict[str, Any]) -> dict[str, Any]:
        d["stats"].pop("wall_seconds", None)
        for key in ("session_mean_s", "session_p50_s", "session_p99_s", "session_max_s", "wall_seconds"):
            d["stats"].pop(key, None)
        return d

    assert strip(run(tmp_path, docs, until="20m")) == strip(run(tmp_path, docs, until="20m"))


def test_the_table_lists_a_workflows_jobs_together_and_the_workflows(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pyvolcano.cli.simulate import run_simulate_command

    docs = upstream_example("jobflow/JobTemplate.yaml", "2m") + upstream_example("jobflow/JobFlow.yaml", "2m")
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(node("n1", cpu="8", memory="32Gi")), encoding="utf-8")
    (tmp_path / "flow.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    code = run_simulate_command(cluster=tmp_path / "cluster.yaml", workload=tmp_path / "flow.yaml", trace=None,
                                trace_format=None, nodes=None, config=None, compare=None, until=None, seed=0,
                                report=None, output="table")
    out = capsys.readouterr().out
    assert code == 0
    assert "CREATED BY" in out and out.count("JobFlow default/test") >= 6
    assert "a:Completed -> b:Completed -> c:Completed, d:Completed -> e:Completed" in out
