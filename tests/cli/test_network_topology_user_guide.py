"""Upstream's network-topology user guide, end to end: its cluster (eight 4-CPU nodes in two
tier-1 HyperNodes under one tier-2 HyperNode), its scheduler configuration (section 3.1) and its
Volcano Jobs (sections 3.3.1 and 3.3.2) pass ``validate``, run in ``simulate``, and the PodGroups
and Pods the job controller makes from them are scheduled by ``schedule`` as the guide shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.cli.app import run as pyvolcano
from pyvolcano.cli.snapshot import take_snapshot
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.snapshot import dump_documents
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.workload import load_workload

DATA = Path(__file__).parents[1] / "data"
CLUSTER = DATA / "network_topology_user_guide_cluster.yaml"
JOBS = DATA / "network_topology_user_guide.yaml"
CONF = DATA / "network_topology_user_guide.conf"
RACKS = {"hypernode0": {f"node{i}" for i in range(4)}, "hypernode1": {f"node{i}" for i in range(4, 8)}}


def _job(name: str) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(JOBS.read_text()) if d["metadata"]["name"] == name)


def _snapshot_of(tmp_path: Path, job: dict[str, Any]) -> Path:
    """The cluster with ``job``'s PodGroup and Pods as the job controller creates them, before any
    session has run (the simulator's first session is at 1 s)."""
    registry = default_registry()
    sim = Simulation(config=load_configuration(registry, CONF), registry=registry, seed=0)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    for path, cluster in ((CLUSTER, True), (tmp_path / "job.yaml", False)):
        sim.submit(load_workload(path, cluster=cluster)[0])
    sim.run(until=0.5)
    docs, _ = take_snapshot(sim.store, kinds=("PriorityClass", "Queue", "Node", "HyperNode", "PodGroup", "Pod"))
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(dump_documents(docs))
    return snapshot


def _schedule(capsys: pytest.CaptureFixture[str], snapshot: Path) -> dict[str, str]:
    assert pyvolcano(["schedule", str(snapshot), "-c", str(CONF), "-o", "json"]) == 0
    binds: dict[str, str] = json.loads(capsys.readouterr().out)["binds"]
    return {pod.rsplit("-", 1)[1]: node for pod, node in binds.items()}  # by task index


def _rack(nodes: set[str]) -> str | None:
    return next((name for name, members in RACKS.items() if nodes <= members), None)


def test_the_guides_cluster_and_jobs_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert pyvolcano(["validate", str(CLUSTER), str(JOBS)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        *(f"OK Node node{i}" for i in range(8)),
        "OK HyperNode hypernode0", "OK HyperNode hypernode1", "OK HyperNode hypernode2",
        "OK Job default/network-topology-job", "OK Job default/network-topology-partitioned-job",
    ]


def test_the_guides_scheduler_configuration_loads_with_the_plugins_arguments() -> None:
    conf = load_configuration(default_registry(), CONF)
    [nta] = [p for tier in conf.tiers for p in tier.plugins if p.name == "network-topology-aware"]
    assert nta.arguments["weight"] == 10 and nta.arguments["hypernode.binpack.normal-pod.fading"] == 0.8


def test_the_partitioned_job_is_scheduled_one_partition_per_tier1_hypernode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # section 3.3.2: pods 0-3 on HyperNode0 (node0-node3), pods 4-7 on HyperNode1 (node4-node7)
    placed = _schedule(capsys, _snapshot_of(tmp_path, _job("network-topology-partitioned-job")))
    assert sorted(placed) == [str(i) for i in range(8)]
    first, second = ({placed[str(i)] for i in part} for part in (range(4), range(4, 8)))
    assert {_rack(first), _rack(second)} == {"hypernode0", "hypernode1"}


# The guide's outcome is not what upstream's code does now: the job's default sub-job carries the
# job's constraint, and its HyperNode pre-filter asks for the requests of every pending task
# (SubJobInfo.GetMinResources, 8 x 4 CPUs) where one tier-1 HyperNode has 16 idle CPUs
# (network-topology-aware's isEligibleHyperNode), so no HyperNode is tried. pyvolcano follows the
# code; the test states the guide's outcome and says when the two agree again.
@pytest.mark.xfail(strict=False, reason="upstream's code and pyvolcano's place none of the pods, where upstream's "
                   "guide shows minAvailable of them running in one HyperNode")
def test_the_hard_job_runs_min_available_pods_inside_one_tier1_hypernode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # section 3.3.1: 8 replicas of a whole node each, minAvailable 4, highestTierAllowed 1: the
    # job gets one 4-node HyperNode and four pods run; the other four stay pending
    placed = _schedule(capsys, _snapshot_of(tmp_path, _job("network-topology-job")))
    assert len(placed) == 4 and _rack(set(placed.values())) is not None


def test_the_guides_jobs_run_in_simulate(capsys: pytest.CaptureFixture[str]) -> None:
    code = pyvolcano(["simulate", "--cluster", str(CLUSTER), "--workload", str(JOBS), "-c", str(CONF),
                      "--default-duration", "10m", "--until", "1h", "-o", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rejected"] == []
    partitioned = out["jobs"]["default/network-topology-partitioned-job"]
    assert partitioned["phase"] == "Completed" and partitioned["pods"]["succeeded"] == 8
