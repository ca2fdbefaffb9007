"""``reservation.gangOrder: shortestFirst`` on a real kube-apiserver: examples/recommended.conf in
the live scheduler.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH; skipped otherwise. The cluster is test_envtest_reservation.py's (two
4-CPU nodes), started afresh for this module. A job fills both nodes for a minute; a gang of two
3-CPU pods declaring 30 minutes (``pyvolcano.io/duration`` on the Job, which the job controller
copies to its PodGroup) is created, then one declaring 1 minute. Neither is admitted while the
nodes are full, so the scheduler knows their runtimes from their PodGroups alone: the later,
shorter gang gets the reservation and starts when the nodes free up; the older one waits. (A
PodGroup that enqueue keeps Pending gets no ``Unschedulable`` condition, as upstream; ``job why``
says ``Reservation.Held`` for it.)
"""

from __future__ import annotations

import time

import yaml
from test_envtest import Cluster, _wait
from test_envtest_reservation import _job, _node_of, cluster
from test_envtest_reservation import pytestmark as pytestmark  # the same skip conditions

__all__ = ["cluster"]


def _declared(name: str, replicas: int, *, cpu: str, duration: str) -> str:
    doc = yaml.safe_load(_job(name, replicas, cpu=cpu, duration=duration))
    doc["metadata"]["annotations"] = {"pyvolcano.io/duration": duration}
    return yaml.safe_dump(doc)


def _podgroup(c: Cluster, job: str) -> dict[str, object]:
    for pg in (c.get("podgroups", "-n", "default") or {"items": []})["items"]:
        if pg["metadata"]["name"].startswith(f"{job}-"):
            return dict(pg)
    return {}


def test_shorter_gang_created_later_is_reserved_and_starts_first(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_job("busy", 2, cpu="3", duration="1m"))
    _wait(lambda: _node_of(cluster, "busy"), 60, "the job that fills both nodes to run")
    cluster.kubectl("apply", "-f", "-", input=_declared("slow", 2, cpu="3", duration="30m"))
    _wait(lambda: _podgroup(cluster, "slow"), 30, "the slow gang's PodGroup")
    time.sleep(1.5)  # creation timestamps have whole seconds: slow is strictly older
    cluster.kubectl("apply", "-f", "-", input=_declared("quick", 2, cpu="3", duration="1m"))
    # Both stay Pending (2 idle CPU × 1.2 < 6) until busy ends; the reservation then admits quick.
    _wait(lambda: _node_of(cluster, "quick"), 150, "the quick gang to start when the nodes free up")
    assert not _node_of(cluster, "slow")
    slow = _podgroup(cluster, "slow")
    assert slow["metadata"]["annotations"]["pyvolcano.io/duration"] == "30m"  # type: ignore[index]
    assert (slow.get("status") or {}).get("phase", "Pending") == "Pending"  # type: ignore[attr-defined]
