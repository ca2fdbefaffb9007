"""examples/plugins/ in `pyvolcano simulate` (docs/plugins.md): a namespace quota serialises two
jobs, a queue keeps to its node groups, a disruption budget holds a preemptor off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_plugins_example_runs_as_the_docs_say() -> None:
    proc = subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", "--cluster",
                           str(EXAMPLES / "plugins" / "cluster.yaml"), "--workload",
                           str(EXAMPLES / "plugins" / "jobs.yaml"), "--config", str(EXAMPLES / "plugins.conf"),
                           "-o", "json"], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    assert {k: v["phase"] for k, v in jobs.items()} == dict.fromkeys(
        ("default/urgent", "default/web", "team/train-a", "team/train-b"), "Completed")
    assert (jobs["team/train-a"]["started"], jobs["team/train-a"]["finished"]) == (1.0, 61.0)
    assert jobs["team/train-b"]["started"] == 62.0  # the quota held it Pending until train-a ended
    assert (jobs["default/web"]["finished"], jobs["default/urgent"]["started"]) == (301.0, 301.0)


def test_a_vcjobs_task_topology_places_each_ps_with_its_worker() -> None:
    import yaml

    from builders import node
    from sim_builders import simulate

    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "tf", "namespace": "default",
                        "annotations": {"volcano.sh/task-topology-affinity": "ps,worker",
                                        "volcano.sh/task-topology-anti-affinity": "ps"}},
           "spec": {"schedulerName": "volcano", "minAvailable": 4, "tasks": [
               {"name": role, "replicas": 2, "template": {
                   "metadata": {"annotations": {"pyvolcano.io/duration": "30s"}},
                   "spec": {"restartPolicy": "Never", "containers": [
                       {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}
               for role in ("ps", "worker")]}}
    conf = yaml.safe_dump({"actions": "enqueue, allocate", "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "task-topology"}]}]})
    binds: dict[str, str] = {}
    _res, sim = simulate([(0, node("n1", cpu="8")), (0, node("n2", cpu="8")), (0, node("n3", cpu="8")), (0, job)],
                        conf=conf, until=5)
    for pod in sim.store.list("Pod", "default"):
        binds[pod["metadata"]["name"]] = pod["spec"]["nodeName"]
    assert binds["tf-ps-0"] == binds["tf-worker-0"] != binds["tf-ps-1"] == binds["tf-worker-1"]
