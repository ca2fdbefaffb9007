"""``job why`` where a plugin of this round blocks a job: its own reason code, figures and hint
(numa-aware, tdm, usage, extender)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from builders import cache_of, dump, guaranteed, node, numatopology, pod, podgroup, queue
from extender_server import ExtenderServer
from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry


def _why(tmp_path: Path, docs: list[dict[str, Any]], conf: str, job: str = "pg") -> str:
    cluster, config = tmp_path / "cluster.yaml", tmp_path / "scheduler.conf"
    cluster.write_text(dump(*docs))
    config.write_text(conf)
    proc = subprocess.run([sys.executable, "-m", "pyvolcano", "job", "why", job, "-n", "ns", "--cluster",
                           str(cluster), "--config", str(config), "-o", "table"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _diagnosis(docs: list[dict[str, Any]], conf: str, load: dict[str, tuple[float, float]] | None = None
               ) -> dict[str, Any]:
    cache = cache_of(*docs)
    if load:
        cache.set_node_usage({n: NodeUsage.of(0.0, c, m) for n, (c, m) in load.items()})
    out = schedule_objects(cache, load_scheduler_conf(conf), default_registry(), sessions=1, seed=0)
    diag: dict[str, Any] = out["diagnoses"]["ns/pg"]
    return diag


NUMA = "actions: allocate\ntiers:\n- plugins:\n  - name: numa-aware\n"


def test_numa_alignment_names_the_largest_free_block_on_one_numa_node(tmp_path: Path) -> None:
    docs = [queue("q"), node("n1", cpu="16"), numatopology("n1", "single-numa-node", "2-5"), podgroup("pg"),
            guaranteed(pod("a", "pg", cpu="4"), "single-numa-node")]
    out = _why(tmp_path, docs, NUMA)
    assert "REASON    NUMA.NotAligned" in out
    assert "most free CPUs on one NUMA node are 2 on one NUMA node of n1" in out
    assert "PLUGIN    numa-aware" in out and "most_free_cpus_on_one_numa_node: 2" in out


def test_numa_policy_mismatch_lists_the_nodes_that_run_the_policy() -> None:
    docs = [queue("q"), node("n1"), numatopology("n1", "best-effort"), podgroup("pg"),
            guaranteed(pod("a", "pg", cpu="2"), "restricted")]
    diag = _diagnosis(docs, NUMA)
    assert diag["reason"] == "NUMA.PolicyMismatch" and diag["stage"] == "node-fit"
    assert diag["plugin"]["figures"]["nodes_policy_mismatch"] == 1
    assert "nodes that run it: none" in diag["hint"]


def test_tdm_closed_zone_gives_the_window_and_the_local_time(tmp_path: Path) -> None:
    conf = ("actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n    arguments:\n"
            "      tdm.revocable-zone.rz1: '10:00-21:00'\n")
    p = pod("a", "pg")
    p["metadata"]["annotations"]["volcano.sh/revocable-zone"] = "*"
    docs = [queue("q"), node("n1", labels={"volcano.sh/revocable-zone": "rz1"}), podgroup("pg"), p]
    out = _why(tmp_path, docs, conf)
    assert "REASON    TDM.RevocableZoneClosed" in out
    assert "closed at 00:00 (rz1 10:00-21:00)" in out


def test_tdm_a_pod_without_a_zone_is_told_how_to_get_one() -> None:
    conf = ("actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n    arguments:\n"
            "      tdm.revocable-zone.rz1: '0:00-0:00'\n")
    docs = [queue("q"), node("n1", labels={"volcano.sh/revocable-zone": "rz1"}), podgroup("pg"), pod("a", "pg")]
    diag = _diagnosis(docs, conf)
    assert diag["reason"] == "TDM.NotRevocable" and "volcano.sh/revocable-zone: '*'" in diag["hint"]


def test_usage_overload_names_the_least_loaded_node_and_the_thresholds() -> None:
    conf = "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n"
    docs = [queue("q"), node("n1"), node("n2"), podgroup("pg"), pod("a", "pg")]
    diag = _diagnosis(docs, conf, load={"n1": (95, 10), "n2": (85, 10)})
    assert diag["reason"] == "Usage.NodeOverloaded"
    assert diag["plugin"]["figures"]["least_loaded_node"] == "n2"
    assert diag["plugin"]["figures"]["cpu_percent"] == 85


def test_extender_refusals_and_enqueue_votes_are_the_extenders() -> None:
    with ExtenderServer() as ext:
        ext.answers["predicate"] = lambda _b: {"status": "no licence", "code": 3}
        ext.answers["jobEnqueueable"] = lambda _b: {"status": -1}
        plugin = yaml.safe_dump([{"name": "extender", "arguments": {
            "extender.urlPrefix": ext.url, "extender.predicateVerb": "predicate"}}])
        conf = "actions: allocate\ntiers:\n- plugins:\n" + "".join(f"  {ln}\n" for ln in plugin.splitlines())
        diag = _diagnosis([queue("q"), node("n1"), podgroup("pg"), pod("a", "pg")], conf)
        assert diag["reason"] == "Extender.Rejected"
        assert diag["plugin"]["figures"]["messages"] == {"no licence": 1}
        enqueue = conf.replace("actions: allocate", "actions: enqueue").replace(
            "extender.predicateVerb: predicate", "extender.jobEnqueueableVerb: jobEnqueueable")
        pending = podgroup("pg", phase="Pending", minResources={"cpu": "1"})
        diag = _diagnosis([queue("q"), node("n1"), pending], enqueue)
        assert diag["reason"] == "Extender.EnqueueRejected" and diag["stage"] == "enqueue"
