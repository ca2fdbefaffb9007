"""HyperNodes in simulated clusters: from the cluster file or ``--topology``, in the cache, in the results."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.api.duration import parse_duration_strict
from pyvolcano.api.manifest import ManifestError
from pyvolcano.conf import default_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.hypernodes import ClusterTopology, apply_topology, load_cluster_topology
from pyvolcano.simulator.report.csv_files import JOBS_COLUMNS, TIMESERIES_COLUMNS
from pyvolcano.simulator.report.directory import write_report
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.workload import SUBMIT_AT, Submission


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    res = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": dict(res)}}


def hypernode(name: str, tier: int, members: list[str], kind: str = "Node") -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


def gang(name: str, pods: int, gpus: int = 8, at: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if at:
        md["annotations"] = {SUBMIT_AT: at}
    req = {"nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": md,
            "spec": {"schedulerName": "volcano", "minAvailable": pods, "tasks": [{
                "name": "w", "replicas": pods, "template": {
                    "metadata": {"annotations": {"pyvolcano.io/duration": "10m"}},
                    "spec": {"restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": req, "limits": req}}]}}}]}}


ONE_NODE_RACKS = [node("a0"), node("b0"), hypernode("rack-a", 1, ["a0"]), hypernode("rack-b", 1, ["b0"]),
                  hypernode("spine", 2, ["rack-a", "rack-b"], kind="HyperNode")]


def simulate(cluster: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> Simulation:
    sim = Simulation(config=default_configuration(), registry=default_registry())
    sim.submit([Submission(0.0, i, "cluster.yaml", o) for i, o in enumerate(cluster)])
    sim.submit([Submission(parse_duration_strict(o["metadata"].get("annotations", {}).get(SUBMIT_AT, "0s")), i,
                           "workload.yaml", o) for i, o in enumerate(jobs)])
    return sim


def test_hypernodes_of_the_cluster_file_reach_the_cache_tree_and_survive_the_run() -> None:
    sim = simulate(ONE_NODE_RACKS, [gang("j", 1)])
    res = sim.run()
    assert res.end_reason == "finished"
    tree = sim.cache.hypernode_tree
    assert tree.nodes("rack-a") == {"a0"}
    assert tree.nodes("spine") == {"a0", "b0"}
    assert tree.parent("rack-b") == "spine"
    assert {h["metadata"]["name"] for h in sim.store.list("HyperNode")} == {"rack-a", "rack-b", "spine"}


def test_a_gang_on_two_one_node_racks_spans_both_and_its_lowest_common_hypernode_is_the_spine() -> None:
    sim = simulate(ONE_NODE_RACKS, [gang("wide", 2), gang("narrow", 1, at="20m")])
    res = sim.run()
    assert res.jobs["default/wide"].span == {"nodes": 2, "domains": 2, "hypernode": "spine", "tier": 2}
    narrow = res.jobs["default/narrow"].span
    assert narrow is not None and (narrow["domains"], narrow["tier"]) == (1, 1)
    assert narrow["hypernode"] in ("rack-a", "rack-b")
    assert res.to_json()["jobs"]["default/wide"]["span"]["tier"] == 2


def test_while_a_hard_tier1_gang_no_rack_can_hold_waits_every_idle_gpu_is_fragmented() -> None:
    hard = gang("big", 2, at="1m")
    hard["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    sim = simulate(ONE_NODE_RACKS, [gang("filler", 1, gpus=4), hard])
    sim.run(until=300)
    waiting = [(s.topology_fragmentation, s.fragmented_domains) for s in sim.metrics.samples
               if s.t >= 60 and s.pending_jobs]
    # The filler's node has 4 idle GPUs, the other 8; the 2-node gang fits neither one-node rack.
    assert waiting and set(waiting) == {(12.0, 2)}


def test_a_run_without_hypernodes_writes_no_topology_fields(tmp_path: Path) -> None:
    sim = simulate([node("a0")], [gang("j", 1)])
    res = sim.run()
    assert not res.topology and "span" not in res.to_json()["jobs"]["default/j"]
    assert all(s.topology_fragmentation is None for s in sim.metrics.samples)
    write_report(sim.metrics, tmp_path)
    with (tmp_path / "jobs.csv").open() as fh:
        assert tuple(next(csv.reader(fh))) == JOBS_COLUMNS
    with (tmp_path / "timeseries.csv").open() as fh:
        header = tuple(next(csv.reader(fh)))
    assert header[:len(TIMESERIES_COLUMNS) + 1] == (*TIMESERIES_COLUMNS, "default_allocated_gpu")
    assert not (tmp_path / "topology.png").exists()
    assert "Network topology" not in (tmp_path / "report.html").read_text()


def test_the_report_of_a_topology_run_has_span_columns_a_fragmentation_series_and_a_plot(tmp_path: Path) -> None:
    sim = simulate(ONE_NODE_RACKS, [gang("wide", 2)])
    sim.run()
    write_report(sim.metrics, tmp_path)
    with (tmp_path / "jobs.csv").open() as fh:
        row = next(csv.DictReader(fh))
    assert (row["span_nodes"], row["span_domains"], row["span_tier"], row["span_hypernode"]) == ("2", "2", "2", "spine")
    with (tmp_path / "timeseries.csv").open() as fh:
        assert {"topology_fragmentation", "fragmented_domains"} <= set(next(csv.reader(fh)))
    assert (tmp_path / "topology.png").stat().st_size > 0
    assert "Network topology" in (tmp_path / "report.html").read_text()


# ------------------------------------------------------------------------------ --topology rules
def subs(objs: list[dict[str, Any]], source: str = "c.yaml") -> list[Submission]:
    return [Submission(0.0, i, source, o) for i, o in enumerate(objs)]


def test_topology_hosts_replace_a_traces_machines_sized_as_its_largest_gpu_machine() -> None:
    small = node("m-small", gpus=4)
    big = node("m-big", gpus=8)
    big["status"]["allocatable"]["cpu"] = "96"
    topo = ClusterTopology("t", [hypernode("r", 1, ["h0", "h1"])], [node("h0", gpus=2), node("h1", gpus=2)])
    out, notes = apply_topology(subs([small, big]), topo, own_nodes=False, replace_nodes=True)
    nodes = {s.key: s.obj for s in out if s.kind == "Node"}
    assert set(nodes) == {"h0", "h1"}
    assert nodes["h0"]["status"]["allocatable"]["cpu"] == "96"
    assert nodes["h0"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert any("sized as m-big" in n for n in notes)
    assert [s.key for s in out if s.kind == "HyperNode"] == ["r"]


def test_given_nodes_keep_and_a_hypernode_grouping_none_of_them_is_an_error_naming_it() -> None:
    topo = ClusterTopology("topo.yaml", [hypernode("r1", 1, ["n0"]), hypernode("r2", 1, ["elsewhere"])], [])
    with pytest.raises(ManifestError, match=r"topo.yaml: HyperNode r2 \(tier 1\) selects no node of the cluster "
                                            r"\(its members name elsewhere\)"):
        apply_topology(subs([node("n0")]), topo, own_nodes=True)


def test_nodes_given_in_the_workload_file_count_as_given_nodes() -> None:
    topo = ClusterTopology("t", [hypernode("r", 1, ["n0"])], [node("h0")])
    out, _ = apply_topology([], topo, own_nodes=True, other_nodes=subs([node("n0")], "w.yaml"))
    assert [s.key for s in out] == ["r"]


def test_given_nodes_and_hosts_missing_from_them_are_noted_not_refused() -> None:
    topo = ClusterTopology("t", [hypernode("r", 1, ["n0", "gone"])], [node("n0"), node("gone")])
    out, notes = apply_topology(subs([node("n0")]), topo, own_nodes=True)
    assert [s.key for s in out if s.kind == "Node"] == ["n0"]
    assert any("1 of its 2 hosts are not nodes of the cluster (e.g. gone)" in n for n in notes)


def test_a_malformed_hypernode_of_the_topology_is_an_error_naming_the_file_and_field() -> None:
    bad = hypernode("r", 1, ["n0"])
    bad["spec"]["members"][0]["selector"]["regexMatch"] = {"pattern": "n.*"}
    topo = ClusterTopology("topo.yaml", [bad], [])
    with pytest.raises(ManifestError, match=r"topo.yaml \(HyperNode r\): spec.members\[0\].selector: got exactMatch "
                                            r"and regexMatch"):
        apply_topology(subs([node("n0")]), topo, own_nodes=True)


def test_a_hypernode_in_both_the_cluster_file_and_the_topology_is_an_error() -> None:
    topo = ClusterTopology("t", [hypernode("r", 1, ["n0"])], [])
    with pytest.raises(ManifestError, match="HyperNode r is also defined in the cluster file"):
        apply_topology(subs([node("n0"), hypernode("r", 1, ["n0"])]), topo, own_nodes=True)


def test_a_topology_yaml_takes_only_hypernodes_and_nodes(tmp_path: Path) -> None:
    f = tmp_path / "topo.yaml"
    f.write_text(yaml.safe_dump_all([hypernode("r", 1, ["n0"]), {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {}}]))
    with pytest.raises(ManifestError, match=r"document 1 \(Queue q\): kind Queue is not allowed in a topology file"):
        load_cluster_topology(f)


def test_lingjun_by_name_has_its_hosts_and_three_tiers() -> None:
    topo = load_cluster_topology("lingjun")
    assert len(topo.hosts) == 847
    assert {h["spec"]["tier"] for h in topo.hypernodes} == {1, 2, 3}


# ------------------------------------------------------------------------------ the command
def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", *args], capture_output=True, text=True, check=False)


def write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_simulate_with_a_topology_csv_runs_on_its_hosts_and_reports_spans(tmp_path: Path) -> None:
    topo = tmp_path / "topo.csv"
    topo.write_text("node,leaf,spine\nn0,leaf-a,spine-a\nn1,leaf-a,spine-a\nn2,leaf-b,spine-a\n")
    cluster = write(tmp_path / "c.yaml", [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                           "metadata": {"name": "q"}, "spec": {"weight": 1}}])
    work = write(tmp_path / "w.yaml", [gang("j", 3)])
    proc = run("simulate", "--cluster", str(cluster), "--workload", str(work), "--topology", str(topo), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["jobs"]["default/j"]["span"] == {"nodes": 3, "domains": 2, "hypernode": "spine-a", "tier": 2}
    assert out["topology"]["multi_node_jobs"] == 1


def test_simulate_refuses_a_topology_that_groups_none_of_the_given_nodes(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", [node("n0")])
    work = write(tmp_path / "w.yaml", [gang("j", 1)])
    topo = write(tmp_path / "t.yaml", [hypernode("rack-x", 1, ["x0"])])
    proc = run("simulate", "--cluster", str(cluster), "--workload", str(work), "--topology", str(topo))
    assert proc.returncode == 2
    assert "HyperNode rack-x (tier 1) selects no node of the cluster" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_simulate_refuses_an_unknown_topology_name() -> None:
    proc = run("simulate", "--topology", "no-such-fabric")
    assert proc.returncode == 2
    assert "'no-such-fabric' is neither a file nor a shipped topology; expected one of lingjun" in proc.stderr
