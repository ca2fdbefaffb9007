"""The dashboard's view models on a small GPU cluster (tests/dashboard/dashboard_cluster.py):
each figure is the one the scheduler's own code gives for the same state."""

from __future__ import annotations

from pathlib import Path

import pytest
from dashboard_cluster import GPU, HTML_NAME, analysis_of, documents, write

from builders import dump, queue
from pyvolcano.cli.job import why_document
from pyvolcano.dashboard.analysis import Analysis
from pyvolcano.dashboard.job_detail import job_detail
from pyvolcano.dashboard.jobs import jobs_view
from pyvolcano.dashboard.nodes import nodes_view
from pyvolcano.dashboard.queues import queues_view
from pyvolcano.forecast.queue_top import queue_top_document
from pyvolcano.simulator.collector import fragmentation


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return analysis_of(write(tmp_path_factory.mktemp("cluster") / "cluster.yaml"))


def _gpu(row: dict) -> dict:
    return next(r for r in row["resources"] if r["name"] == GPU)


def test_queues_show_allocated_and_proportions_deserved_per_resource(analysis: Analysis) -> None:
    view = queues_view(analysis)
    rows = {q["name"]: q for q in view["queues"]}
    assert view["plugin"] == "proportion"
    assert [q["name"] for q in view["queues"]] == ["infer", "train"]
    assert _gpu(rows["train"])["allocated"] == 16 and _gpu(rows["infer"])["allocated"] == 3
    # proportion: infer deserves what it asks (3 + 1 GPUs), train the rest of the 32, up to its 40
    assert _gpu(rows["infer"])["deserved"] == 4 and _gpu(rows["train"])["deserved"] == 28
    assert (rows["train"]["running"], rows["train"]["pending"]) == (1, 1)
    assert (rows["infer"]["running"], rows["infer"]["pending"]) == (1, 1)
    assert rows["train"]["state"] == "Open" and rows["train"]["weight"] == 3 and rows["train"]["reclaimable"]
    assert [r["name"] for r in rows["train"]["resources"]] == ["cpu", "memory", GPU]
    assert _gpu(rows["train"])["guarantee"] is None


def test_the_queue_hierarchy_is_a_depth_first_tree_with_guarantees(tmp_path: Path) -> None:
    docs = [queue("root"), queue("eng", parent="root", guarantee={"resource": {"cpu": "2"}}), queue("ml", parent="eng"),
            queue("ops", parent="root")]
    a = analysis_of(write(tmp_path / "q.yaml", docs))
    rows = queues_view(a)["queues"]
    assert [(q["name"], q["depth"], q["parent"]) for q in rows] == [
        ("root", 0, None), ("eng", 1, "root"), ("ml", 2, "eng"), ("ops", 1, "root")]
    assert rows[0]["children"] == ["eng", "ops"]
    eng_cpu = next(r for r in rows[1]["resources"] if r["name"] == "cpu")
    assert eng_cpu["guarantee"] == 2


def test_jobs_carry_queue_tops_position_reason_and_estimate(analysis: Analysis) -> None:
    view = jobs_view(analysis)
    rows = {r["key"]: r for r in view["jobs"]}
    assert sorted(rows) == sorted(["infer/serve", f"infer/{HTML_NAME}", "train/big", "train/llm"])
    top = queue_top_document(analysis.fresh_state(), analysis.config, analysis.registry, queue=None,
                             policy=analysis.policy, seed=0)
    for e in top["pending"]:
        r = rows[e["job"]]
        assert (r["position"], r["queue_position"], r["reason"], r["start"]) == (
            e["position"], e["queue_position"], e["reason"], e["start"])
    assert rows["train/big"]["reason"] is not None and rows["train/big"]["position"] is not None
    assert rows["train/llm"]["position"] is None and rows["train/llm"]["phase"] == "Running"
    assert rows["train/big"]["age_seconds"] == 1800 and rows["train/llm"]["age_seconds"] == 3600
    assert rows[f"infer/{HTML_NAME}"]["name"] == HTML_NAME


def test_a_job_page_shows_job_whys_diagnosis_pods_conditions_and_events(analysis: Analysis) -> None:
    page = job_detail(analysis, "train/big")
    assert page is not None
    expected = why_document(analysis.fresh_cache(), "train/big", analysis.config, analysis.registry, sessions=1, seed=0)
    assert page["diagnosis"] == expected["diagnosis"]
    assert page["diagnosis"]["reason"] == page["row"]["reason"]
    assert [p["name"] for p in page["pods"]] == ["big-0", "big-1", "big-2"]
    assert all(p["node"] is None and p["requests"][GPU] == 8 for p in page["pods"])
    assert [e["reason"] for e in page["events"]] == ["Unschedulable"]
    assert page["events"][0]["count"] == 4 and HTML_NAME in page["events"][0]["message"]
    running = job_detail(analysis, "train/llm")
    assert running is not None and running["diagnosis"] is None and running["nodes"] == ["g1", "g2"]
    assert job_detail(analysis, "train/nope") is None


def test_nodes_show_each_gpu_grouped_by_rack_with_the_simulators_fragmentation(analysis: Analysis) -> None:
    view = nodes_view(analysis)
    nodes = {n["name"]: n for n in view["nodes"]}
    assert nodes["g1"]["gpu_allocated"] == 8 and nodes["g1"]["gpu_free"] == 0
    assert nodes["g3"]["gpu_allocated"] == 3 and nodes["g3"]["gpu_free_whole"] == 5
    assert [g["used"] for g in nodes["g3"]["gpus"]] == [1000, 1000, 1000, 0, 0, 0, 0, 0]
    assert nodes["g4"]["gpu_allocated"] == 0 and not nodes["g4"]["shared"]
    assert [(g["name"], g["tier"], g["path"], g["nodes"]) for g in view["groups"]] == [
        ("rack-a", 1, ["rack-a", "spine"], ["g1", "g2"]), ("rack-b", 1, ["rack-b", "spine"], ["g3", "g4"])]
    frag = view["fragmentation"]
    assert (frag["gpu_capacity"], frag["gpu_allocated"], frag["gpu_idle"]) == (32, 19, 13)
    assert frag["gpu_fragmentation"] == round(fragmentation(analysis.fresh_cache()), 3)
    assert frag["topology_fragmentation"] is not None


def test_a_shared_gpu_shows_its_fraction(tmp_path: Path) -> None:
    docs = documents()
    share = next(d for d in docs if d["kind"] == "Pod" and d["metadata"]["name"] == "html-0")
    share["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    share["metadata"]["annotations"]["pyvolcano.io/gpu-milli"] = "500"  # half a GPU, as the openb trace asks
    share["spec"]["nodeName"] = "g4"
    share["status"]["phase"] = "Running"
    for d in docs:
        if d["kind"] == "Node" and d["metadata"]["name"] == "g4":
            d["status"]["capacity"].update({"volcano.sh/gpu-memory": "8192", "volcano.sh/gpu-number": "8"})
            d["status"]["allocatable"].update({"volcano.sh/gpu-memory": "8192", "volcano.sh/gpu-number": "8"})
    nodes = {n["name"]: n for n in nodes_view(analysis_of(write(tmp_path / "c.yaml", docs)))["nodes"]}
    g4 = nodes["g4"]
    assert g4["shared"] and g4["gpu_memory"] == 1024
    assert [(g["memory_used"], g["used"]) for g in g4["gpus"] if g["holders"]] == [(512, 500)]
    assert g4["gpu_allocated"] == 0.5


def test_dump_round_trip_keeps_the_html_name() -> None:
    assert HTML_NAME in dump(*documents())


def test_gpu_map_and_job_page_show_the_reservation_a_gang_holds(tmp_path: Path) -> None:
    from pyvolcano.conf import load_scheduler_conf

    base = analysis_of(write(tmp_path / "c.yaml"))
    conf = load_scheduler_conf("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
                               "  - name: proportion\n  - name: reservation\n    arguments:\n"
                               "      reservation.defaultRuntime: 2h\n")
    analysis = Analysis(base.state, conf, base.registry, events=base.events)
    view = nodes_view(analysis)
    [reservation] = view["reservations"]
    held = set(reservation["nodes"])
    assert reservation["job"] == "train/big" and len(held) == 3
    assert "reservations" not in nodes_view(base)
    page = job_detail(analysis, "train/big")
    assert page is not None and sorted(page["reservation"]["nodes"]) == sorted(held)
    assert page["reservation"]["start_in_seconds"] == 3600.0
    assert "reservation" not in job_detail(base, "train/big")  # type: ignore[operator]
