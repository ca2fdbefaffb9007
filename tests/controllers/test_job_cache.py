"""The job cache's running restart sum answers ``task_failed`` as a walk over the task's pods would."""

from __future__ import annotations

import random
from typing import Any

from pyvolcano.controllers.job.cache import JobCache

_JOB = {"metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": [{"name": "t", "replicas": 4, "maxRetry": 5}]}}


def _pod(i: int, phase: str, restarts: int, init_restarts: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": f"j-t-{i}", "namespace": "ns",
                         "annotations": {"volcano.sh/job-name": "j", "volcano.sh/task-spec": "t",
                                         "volcano.sh/job-version": "0"}},
            "status": {"phase": phase, "containerStatuses": [{"restartCount": restarts}],
                       "initContainerStatuses": [{"restartCount": init_restarts}]}}


def _walk(cache: JobCache) -> bool:
    info = cache.get("ns/j")
    assert info is not None
    total = sum(cs.get("restartCount", 0) for p in info.pods.get("t", {}).values()
                if p["status"]["phase"] in ("Running", "Pending")
                for cs in p["status"]["containerStatuses"] + p["status"]["initContainerStatuses"])
    return "t" in info.pods and total >= 5


def test_restart_sum_follows_adds_updates_and_deletes() -> None:
    rng = random.Random(7)
    cache = JobCache()
    cache.add(_JOB)
    for _ in range(500):
        pod = _pod(rng.randrange(4), rng.choice(["Pending", "Running", "Failed", "Succeeded"]), rng.randrange(3),
                   rng.randrange(2))
        op = rng.choice([cache.add_pod, cache.update_pod, cache.delete_pod])
        op(pod)
        assert cache.task_failed("ns/j", "t") == _walk(cache)


def test_readding_a_cached_pod_does_not_count_it_twice() -> None:
    cache = JobCache()
    cache.add(_JOB)
    cache.add_pod(_pod(0, "Running", 3))
    cache.add_pod(_pod(0, "Running", 3))
    assert not cache.task_failed("ns/j", "t")
    cache.update_pod(_pod(0, "Running", 5))
    assert cache.task_failed("ns/j", "t")
