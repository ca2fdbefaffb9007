"""The simulated resource exporter: a Numatopology per node with a NUMA layout, kept as the
kubelet gives Guaranteed pods exclusive CPUs, in the simulator and in fake-nodes."""

from __future__ import annotations

from typing import Any

from builders import node
from pyvolcano.runtime.fake_nodes import FakeNodes, make_nodes
from pyvolcano.runtime.numa_exporter import NumaExporter, NumaLayout, cpu_detail
from pyvolcano.store.memory import InMemoryStore
from sim_builders import simulate, vcjob

NUMA_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: numa-aware
"""


def numa_node(name: str, cpu: str = "8", policy: str = "single-numa-node") -> dict[str, Any]:
    n = node(name, cpu=cpu, memory="32Gi")
    n["metadata"]["annotations"] = {"pyvolcano.io/numa-nodes": "2", "pyvolcano.io/topology-manager-policy": policy}
    return n


def guaranteed_job(name: str, cpu: str, replicas: int = 1) -> dict[str, Any]:
    job = vcjob(name, cpu=cpu, replicas=replicas, requests={"memory": "1Gi"})
    task = job["spec"]["tasks"][0]
    task["topologyPolicy"] = "single-numa-node"
    res = task["template"]["spec"]["containers"][0]["resources"]
    res["limits"] = dict(res["requests"])
    return job


def test_cpus_are_split_evenly_one_socket_per_numa_node_two_threads_per_core() -> None:
    detail = cpu_detail(8, 2)
    assert [(c, d.numa, d.socket, d.core) for c, d in detail.items()][:5] == [
        (0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 1), (3, 0, 0, 1), (4, 1, 1, 2)]


def test_a_node_with_a_layout_gets_its_numatopology_and_others_none() -> None:
    store = InMemoryStore(clock=lambda: 0.0)
    exporter = NumaExporter(store)
    exporter.add_node(numa_node("n1"))
    exporter.add_node(node("plain"))
    [topo] = store.list("Numatopology")
    assert topo["metadata"]["name"] == "n1"
    assert topo["spec"]["policies"] == {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"}
    assert topo["spec"]["numares"]["cpu"] == {"allocatable": "0-7", "capacity": 8}


def test_a_numa_blocked_job_waits_for_cpus_on_one_numa_node() -> None:
    # Two 3-cpu pods take 3 cpus of each NUMA node; the 2-cpu pod finds 2 cpus free on the
    # node but none on one NUMA node, so it waits until the first job's pods exit.
    res, sim = simulate([(0, numa_node("n1")), (0, guaranteed_job("first", "3", replicas=2)),
                         (0, guaranteed_job("second", "2"))], conf=NUMA_CONF)
    first, second = res.jobs["default/first"], res.jobs["default/second"]
    assert first.started == 1.0
    assert second.started is not None and second.started >= first.finished
    [topo] = sim.store.list("Numatopology")
    assert topo["spec"]["numares"]["cpu"]["allocatable"] == "0-7"  # every cpu back once the pods finished
    assert topo["spec"]["podAllocations"] == []


def test_the_exporter_lists_a_running_pod_and_withholds_its_cpus() -> None:
    _res, sim = simulate([(0, numa_node("n1")), (0, guaranteed_job("first", "3"))], conf=NUMA_CONF, until=30)
    [topo] = sim.store.list("Numatopology")
    [alloc] = topo["spec"]["podAllocations"]
    assert alloc["name"] == "first-t-0"
    assert topo["spec"]["numares"]["cpu"]["allocatable"] == "3-7"
    assert alloc["containerAllocations"][0]["allocations"] == {"cpu": "0-2"}


def test_fake_nodes_export_a_numatopology_for_each_node() -> None:
    store = InMemoryStore(clock=lambda: 0.0)
    fake = FakeNodes(store, make_nodes(2, cpu="16"), numa_layout=NumaLayout(numa_nodes=4),
                     clock=lambda: 0.0)
    fake.register()
    topos = {t["metadata"]["name"]: t for t in store.list("Numatopology")}
    assert sorted(topos) == ["fake-node-0", "fake-node-1"]
    assert {d["numa"] for d in topos["fake-node-0"]["spec"]["cpuDetail"].values()} == {0, 1, 2, 3}
