"""``reservation.lendShares`` on a real kube-apiserver: examples/recommended.conf in the live scheduler.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH; skipped otherwise. The cluster is test_envtest_reservation.py's (two
4-CPU nodes), started afresh for this module. Queue ``gangs`` (weight 3) has a gang of two
3-CPU pods; queue ``small`` (weight 1) runs 2 CPU on rsv-0 for 20 minutes, its deserved share,
so the gang is reserved from then. A 1-minute pod of ``small`` then runs at once on the idle
share of ``gangs``; a 30-minute one, which would outlast the reservation, does not.
"""

from __future__ import annotations

import yaml
from test_envtest import Cluster, _wait
from test_envtest_reservation import _condition, _job, _node_of, cluster
from test_envtest_reservation import pytestmark as pytestmark  # the same skip conditions

__all__ = ["cluster"]


def _queue(name: str, weight: int) -> str:
    return yaml.safe_dump({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                           "spec": {"weight": weight, "reclaimable": True}})


def test_short_pod_borrows_the_reserved_queues_idle_share_and_a_long_one_waits(cluster: Cluster) -> None:
    for name, weight in (("gangs", 3), ("small", 1)):
        cluster.kubectl("apply", "-f", "-", input=_queue(name, weight))
    _wait(lambda: cluster.get("queue", "small") and cluster.get("queue", "gangs"), 60, "the two queues")
    _wait(lambda: cluster.kubectl("apply", "--dry-run=server", "-f", "-",
                                  input=_job("probe", 1, cpu="1", duration="1s", queue="small"),
                                  check=False).returncode == 0, 30, "admission to know the new queues")
    cluster.kubectl("apply", "-f", "-", input=_job("held", 1, cpu="2", duration="20m", node="rsv-0", queue="small"))
    _wait(lambda: _node_of(cluster, "held"), 60, "small's long job to run")
    cluster.kubectl("apply", "-f", "-", input=_job("gang", 2, cpu="3", duration="1m", queue="gangs"))
    _wait(lambda: _condition(cluster, "gang").get("reason") == "Reservation.Held", 60,
          "the gang's PodGroup to say Reservation.Held")
    # small holds its deserved 2 CPU (8 CPU, weights 3:1, gangs asking 6): proportion alone
    # refuses both; the 1-minute pod ends long before the reservation and borrows.
    cluster.kubectl("apply", "-f", "-", input=_job("short", 1, cpu="1", duration="1m", queue="small"))
    cluster.kubectl("apply", "-f", "-", input=_job("tail", 1, cpu="1", duration="30m", queue="small"))
    _wait(lambda: _node_of(cluster, "short"), 60, "the short job to borrow and run")
    assert not _node_of(cluster, "tail")
    assert not _node_of(cluster, "gang")
    assert _condition(cluster, "gang").get("reason") == "Reservation.Held"
