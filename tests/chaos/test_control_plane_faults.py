"""The chaos suite: kube-apiserver and etcd restarts, ``kill -9`` of every component, a watch
that expires during a burst and a scheduler cut off for longer than its lease, on a real control
plane with every component running as its own process (:mod:`pyvolcano.kube.faults`).

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH; otherwise every test is skipped with the reason. One control plane
serves every scenario, each in a namespace of its own. ``PYVOLCANO_CHAOS_JOBS`` sets the jobs
per scenario (40; the three-wave run uses 1.5 times as many, 60 by default); the fake nodes
grow with it, so thousands of jobs flow through each fault when asked.

Each scenario asserts the invariants (:func:`pyvolcano.kube.chaos.check`: every job Completed,
no job with more pods than replicas, no pod bound twice, no stale PodGroup or queue status) and
a recovery, from the fault's end to the first pod bound after it, within two lease periods
(a fault followed by the next before anything was bound is measured with that one).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyvolcano.kube.envtest import ASSETS_ENV, assets_dir

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which(os.environ.get("KUBECTL", "kubectl")) is None, reason="kubectl is not on PATH"),
]

JOBS = int(os.environ.get("PYVOLCANO_CHAOS_JOBS", "40"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from pyvolcano.kube.faults import ChaosCluster

    # 4 nodes of 3 CPUs hold 12 one-CPU pods: about a third of 40 two-pod jobs' pods at once.
    scale = max(1.0, JOBS / 40)
    c = ChaosCluster(Path(tmp_path_factory.mktemp("chaos")), nodes=4, node_cpu=math.ceil(3 * scale),
                     max_pods=max(110, math.ceil(3 * scale) + 10))
    try:
        yield c
    finally:
        c.close()


def _run(cluster: object, name: str, jobs: int = JOBS) -> None:
    from pyvolcano.kube.faults import LEASE_SECONDS, SCENARIOS, ChaosCluster, Workload, run_scenario

    assert isinstance(cluster, ChaosCluster)
    result = run_scenario(cluster, SCENARIOS[name], Workload(jobs=jobs, duration=5.0, spread=20.0),
                          namespace=name, timeout=240.0 + jobs / 5)
    report = "\n".join([f"{name}: {result.seconds:.1f}s, restarts {result.restarts}",
                        *(f"  {f.name}: lasted {f.seconds:.1f}s, recovery {f.recovery}, {f.binds_during} binds and "
                          f"{f.completed_during} jobs done meanwhile, {f.notes}" for f in result.faults),
                        *result.problems])
    print(report)
    assert not result.problems, report
    measured = [f for f in result.faults if "overlapped" not in f.notes]
    assert measured, report
    for f in measured:
        assert f.recovery is not None and f.recovery <= 2 * LEASE_SECONDS, report
    if name == "watch-expiry-during-burst":
        assert result.faults[0].notes["relists"] > 0, report  # the informers were answered 410 and relisted


@pytest.mark.parametrize("name", [
    "apiserver-restart", "etcd-restart", "apiserver-and-etcd-restart",
    "kill-scheduler", "kill-controller-manager", "kill-admission", "kill-fake-nodes", "kill-all",
    "watch-expiry-during-burst", "scheduler-cut-off",
])
def test_no_job_is_lost_through(cluster: object, name: str) -> None:
    _run(cluster, name)


def test_three_waves_through_an_apiserver_then_an_etcd_outage_complete_all_their_jobs(cluster: object) -> None:
    _run(cluster, "waves-apiserver-then-etcd", jobs=JOBS * 3 // 2)
