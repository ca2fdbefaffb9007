"""Why a simulation ends with unfinished jobs: pods without a duration, jobs that never start."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from builders import pod, podgroup
from pyvolcano.conf import default_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.metrics import ENDLESS
from pyvolcano.simulator.report.formatting import end_lines
from pyvolcano.simulator.report.stats import summarize
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.workload import load_workload, without_duration
from sim_builders import node, simulate, vcjob

NEVER_START = Path(__file__).resolve().parents[1] / "data" / "never-start"


def _never_start(example: str) -> Simulation:
    sim = Simulation(config=default_configuration(), registry=default_registry())
    cluster, _ = load_workload(NEVER_START / "cluster.yaml", cluster=True)
    work, _ = load_workload(NEVER_START / example)
    sim.submit(cluster)
    sim.submit(work)
    sim.run()
    return sim


def test_a_job_without_duration_runs_until_nothing_else_can_happen_and_says_so() -> None:
    res, sim = simulate([(0, node("n1")), (0, vcjob("forever", duration=None)), (0, vcjob("short", duration="30s"))])
    assert res.end_reason == "stalled" and res.virtual_seconds == 31.0
    forever = res.jobs["default/forever"]
    assert forever.phase == "Running" and forever.reason == ENDLESS
    assert res.jobs["default/short"].reason is None
    s = summarize(sim.metrics)
    assert (s["summary"]["running_at_end"], s["summary"]["running_without_duration"]) == (1, 1)
    assert s["unfinished"] == [{"job": "default/forever", "started": True, "phase": "Running", "reason": ENDLESS,
                                "pending_reason": None, "pending_hint": None}]
    assert "1 run(s) forever because their pods have no pyvolcano.io/duration" in end_lines(s)[0]


def test_default_duration_applies_to_pods_without_the_annotation_only() -> None:
    res, _ = simulate([(0, node("n1")), (0, vcjob("forever", duration=None)), (0, vcjob("long", duration="20m"))],
                      default_duration=600.0)
    assert res.end_reason == "finished"
    assert res.jobs["default/forever"].finished == 601.0
    assert res.jobs["default/long"].finished == 1201.0


def test_a_run_cut_at_until_says_the_horizon_stopped_it() -> None:
    res, sim = simulate([(0, node("n1")), (0, vcjob("long", duration="1h"))], until=600.0)
    assert res.end_reason == "until"
    assert res.jobs["default/long"].reason == "still running when the run stopped at --until"
    assert "the run stopped at its --until horizon" in end_lines(summarize(sim.metrics))[0]


def test_jobs_without_duration_are_found_in_job_templates_and_plain_pods() -> None:
    cluster, _ = load_workload(NEVER_START / "cluster.yaml", cluster=True)
    assert without_duration(cluster) == []
    work, _ = load_workload(NEVER_START / "node-selector-job.yaml")
    assert without_duration(work) == ["default/selective"]
    res, _ = simulate([(0, node("n1")), (0, vcjob("timed"))])
    assert res.end_reason == "finished" and math.isfinite(res.virtual_seconds)


def test_ephemeral_storage_job_never_starts_and_the_reason_names_the_resource() -> None:
    sim = _never_start("ephemeral-storage-job.yaml")
    rec = sim.jobs["default/storage-hungry"]
    assert rec.started is None
    assert rec.reason == ("PodGroup Pending: not enqueued "
                          "(Insufficient ephemeral-storage: minResources need 22Gi, the cluster has 0)")
    (jm,) = sim.metrics.jobs
    assert jm.reason == rec.reason


def test_node_selector_job_never_starts_with_the_schedulers_fit_error() -> None:
    sim = _never_start("node-selector-job.yaml")
    rec = sim.jobs["default/selective"]
    assert rec.started is None
    assert rec.reason is not None
    assert rec.reason.startswith("1/1 tasks in gang unschedulable: pod group is not ready")
    # upstream's message, then the diagnosis' hint (docs/reasons.md)
    assert ("Origin reason is selective-first-0: 0/2 nodes are unavailable: "
            "2 node(s) didn't match Pod's node affinity/selector. Hint: no node passes") in rec.reason
    assert summarize(sim.metrics)["unfinished"][0]["reason"] == rec.reason



def test_plain_podgroups_get_reasons_too() -> None:
    stuck = pod("stuck-0", "stuck", ns="default")
    stuck["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "10Gi"
    forever = pod("forever-0", "forever", ns="default")
    for p in (stuck, forever):
        p["spec"]["containers"][0]["image"] = "busybox"
    objs = [*(podgroup(name, ns="default", queue="default") for name in ("stuck", "forever")), stuck, forever]
    for obj in objs:
        del obj["status"]  # as submitted: the scheduler and kubelets write status
    _, sim = simulate([(0, node("n1")), *((0, o) for o in objs)])
    reasons = {j.key: j.reason for j in sim.metrics.jobs}
    assert reasons["default/forever"] == ENDLESS
    assert reasons["default/stuck"] is not None
    assert reasons["default/stuck"].endswith(
        "(Insufficient ephemeral-storage: a pod requests 10Gi, the largest node has 0)")


def test_a_cluster_node_with_a_bad_quantity_is_an_error_naming_the_file(tmp_path: Path) -> None:
    from pyvolcano.api.manifest import ManifestError

    path = tmp_path / "cluster.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"
                    "status: {capacity: {cpu: NaN}, allocatable: {cpu: NaN}}\n")
    with pytest.raises(ManifestError, match=r"cluster.yaml: document 0 \(Node n2\): status.capacity.cpu: got 'NaN'"):
        load_workload(path, cluster=True)
