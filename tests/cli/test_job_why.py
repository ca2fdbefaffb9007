"""``pyvolcano job why``: the pending diagnosis of one job, offline on a snapshot and live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from builders import dump, node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer
from pyvolcano.api.manifest import ClusterObjects, parse_objects
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli.job import render_why, resolve_podgroup, why_document
from pyvolcano.conf import default_configuration
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.snapshot import config_document
from pyvolcano.simulator.state import state_from_store

ROOT = Path(__file__).resolve().parents[2]


def load_objects(*docs: dict[str, object]) -> ClusterObjects:
    return parse_objects(list(enumerate(docs)), "test")
EXAMPLE = str(ROOT / "examples" / "cluster.yaml")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyvolcano", "job", "why", *args], capture_output=True, text=True,
                          check=False)


def test_job_why_prints_the_diagnosis_as_a_table() -> None:
    proc = run("too-big", "-n", "team", "--cluster", EXAMPLE, "-o", "table")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "REASON    NodeFit.InsufficientResource" in out
    assert "HINT      needs 8 nvidia.com/gpu on one node; the largest free block is" in out
    assert "nvidia.com/gpu  24" in out  # the figures table: the gang's 3 pods of 8 GPUs
    assert "12  Insufficient nvidia.com/gpu" in out


def test_job_why_json_and_yaml_carry_the_same_document() -> None:
    as_json = json.loads(run("too-big", "-n", "team", "--cluster", EXAMPLE, "-o", "json").stdout)
    as_yaml = yaml.safe_load(run("too-big", "-n", "team", "--cluster", EXAMPLE, "-o", "yaml").stdout)
    assert as_json == as_yaml
    assert as_json["job"] == "team/too-big"
    assert as_json["diagnosis"]["stage"] == "node-fit"
    assert as_json["diagnosis"]["tasks"]["unplaced"] == 3


def test_job_why_on_a_job_that_is_not_pending() -> None:
    proc = run("train-llm", "-n", "team", "--cluster", EXAMPLE, "-o", "json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["diagnosis"] is None
    assert "PENDING   no" in run("train-llm", "-n", "team", "--cluster", EXAMPLE, "-o", "table").stdout


def test_job_why_unknown_job_or_missing_source_exits_2_with_one_line() -> None:
    missing = run("nope", "-n", "team", "--cluster", EXAMPLE)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"error: {EXAMPLE}: no PodGroup nope in namespace team"
    both = run("too-big", "--cluster", EXAMPLE, "--kubeconfig", "kc")
    assert both.returncode == 2
    assert both.stderr.strip() == ("error: give --cluster FILE (a snapshot) or a live cluster (--kubeconfig, "
                                   "--context), not both")
    bad_output = run("too-big", "-n", "team", "--cluster", EXAMPLE, "-o", "wide")
    assert bad_output.returncode == 2 and "Traceback" not in bad_output.stderr


def test_without_a_source_the_default_kubeconfig_is_read_as_kubectl_does(tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "kc"), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pyvolcano", "job", "why", "too-big"], capture_output=True,
                          text=True, check=False, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: kubeconfig: Configuration file {tmp_path / 'kc'} not found"


def test_a_vcjob_name_finds_the_podgroup_it_owns(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(dump(queue("q"), node("n1", cpu="1"), node("n2", cpu="1"),
                            podgroup("train-6c1f2a", ns="ns"), pod("train-worker-0", "train-6c1f2a", cpu="2")))
    proc = run("train", "-n", "ns", "--cluster", str(cluster), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["job"] == "ns/train-6c1f2a"
    assert doc["diagnosis"]["reason"] == "NodeFit.InsufficientResource"


def test_live_mode_reads_the_cluster_through_the_kubernetes_store_and_writes_nothing() -> None:
    api = FakeApiServer()
    for doc in (queue("q"), node("n1", cpu="1"), node("n2", cpu="1"), podgroup("pg"), pod("p-0", "pg", cpu="2")):
        api.store.create(doc)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        state = state_from_store(store, 5.0, "the test cluster", 0.0, default_registry())
    finally:
        store.stop()
    writes_before = [r for r in api.requests if r[0] != "GET"]
    cache = SchedulerCache.from_objects(state.objects)
    key = resolve_podgroup(cache, "pg", "ns", "the test cluster")
    doc = why_document(cache, key, default_configuration(), default_registry(), sessions=1, seed=0)
    assert doc["diagnosis"]["reason"] == "NodeFit.InsufficientResource"
    assert doc["diagnosis"]["hint"].startswith("needs 2 cpu on one node; the largest free block is 1 on n1")
    assert [r for r in api.requests if r[0] != "GET"] == writes_before == []
    # no scheduler ConfigMap in this cluster: upstream's default, and a note that says so
    assert state.config is None
    assert state.notes and "volcano-system/volcano-scheduler-configmap not read" in state.notes[0]


def _live_state(*extra: dict[str, object]) -> object:
    api = FakeApiServer()
    for doc in (queue("q"), node("n1", cpu="1"), podgroup("pg"), pod("p-0", "pg", cpu="2"), *extra):
        api.store.create(doc)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        return state_from_store(store, 5.0, "the test cluster", 0.0, default_registry())
    finally:
        store.stop()


def test_live_mode_uses_the_clusters_scheduler_config_map() -> None:
    conf = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
    state = _live_state(config_document(conf))
    assert state.config is not None and state.notes == ()
    assert tuple(state.config.actions) == ("enqueue", "allocate")
    assert [p.name for t in state.config.tiers for p in t.plugins] == ["gang", "predicates"]


def test_a_broken_scheduler_config_map_falls_back_to_the_default_with_a_note() -> None:
    state = _live_state(config_document("actions: \"enqueue, no-such-action\"\n"))
    assert state.config is None
    assert len(state.notes) == 1 and "no-such-action" in state.notes[0] and "upstream's default" in state.notes[0]


def test_job_why_shows_the_limit_a_plugin_holds_the_job_to(tmp_path: Path) -> None:
    from builders import resource_quota

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(dump(queue("q"), node("n1"), resource_quota("rq", {"cpu": "4"}, {"cpu": "3"}),
                            podgroup("pg", phase="Pending", minResources={"cpu": "2"}), pod("p-0", "pg", cpu="2")))
    conf = tmp_path / "sched.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: resourcequota\n')
    proc = run("pg", "-n", "ns", "--cluster", str(cluster), "--config", str(conf), "-o", "table")
    assert proc.returncode == 0, proc.stderr
    assert "REASON    Enqueue.ResourceQuotaExceeded" in proc.stdout
    assert "resourcequota  ResourceQuota ns/rq  cpu   4      3     2" in proc.stdout


def test_a_queue_affinity_nothing_acts_on_is_a_note_of_the_jobs_in_that_queue() -> None:
    q = queue("q", affinity={"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a"]}})
    zoned = pod("p-0", "pg", cpu="2", labels={"volcano.sh/revocable-zone": "rz1"})
    cache = SchedulerCache.from_objects(load_objects(q, node("n1", cpu="1"), podgroup("pg"), zoned,
                                                     pod("p-1", "pg", labels={"volcano.sh/revocable-zone": "rz1"})))
    doc = why_document(cache, "ns/pg", default_configuration(), default_registry(), sessions=1, seed=0)
    assert doc["notes"] == [
        "Queue q: spec.affinity (node-group affinity) is honoured only by the nodegroup plugin, which the scheduler "
        "configuration does not enable; the job is placed as if it were absent",
        "Pod ns/p-0 and 1 more pods: metadata.labels[volcano.sh/revocable-zone] (a revocable zone) is honoured only "
        "by the tdm plugin, which the scheduler configuration does not enable; the job is placed as if it were "
        "absent",
    ]
    assert "NOTE      Queue q: spec.affinity (node-group affinity) is honoured only by the nodegroup plugin" in (
        render_why(doc))


def test_a_job_without_such_fields_has_no_notes() -> None:
    cache = SchedulerCache.from_objects(load_objects(queue("q"), node("n1", cpu="1"), podgroup("pg"),
                                                     pod("p-0", "pg", cpu="2")))
    doc = why_document(cache, "ns/pg", default_configuration(), default_registry(), sessions=1, seed=0)
    assert doc["notes"] == [] and "NOTE" not in render_why(doc)
