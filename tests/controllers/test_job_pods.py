"""A task's pods built from one prototype are the pods built field by field, keys in the same order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyvolcano.controllers.job.pods import TaskPods
from pyvolcano.controllers.system_entropy import SystemEntropy


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u-1",
                         "annotations": {"volcano.sh/preemptable": "true"}, "labels": {"volcano.sh/cooldown": "x"}},
            "spec": {"schedulerName": "volcano", "queue": "q", "priorityClassName": "high", **spec},
            "status": {"version": 3, "retryCount": 1}}


def _task(**extra: Any) -> dict[str, Any]:
    return {"name": "worker", "replicas": 6, "template": {
        "metadata": {"annotations": {"a": "1"}, "labels": {"l": "2"}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "env": [{"name": "E", "value": "v"}],
                                 "resources": {"requests": {"cpu": "1"}}}]}}, **extra}


@pytest.mark.parametrize("task", [_task(), _task(partitionPolicy={"partitionSize": 4}),
                                  _task(partitionPolicy={"partitionSize": 0}), _task(topologyPolicy="best-effort")])
@pytest.mark.parametrize("forwarding", [False, True])
def test_prototype_pods_equal_pods_built_one_by_one(task: dict[str, Any], forwarding: bool) -> None:
    pods = TaskPods(_job(), task, forwarding=forwarding, entropy=SystemEntropy())
    for i in range(6):
        assert json.dumps(pods.pod(i)) == json.dumps(pods._build(i))


def test_prototype_pods_share_no_mutable_part() -> None:
    pods = TaskPods(_job(), _task(), forwarding=False, entropy=SystemEntropy())
    a, b = pods.pod(0), pods.pod(1)
    a["spec"]["containers"][0]["env"].append({"name": "X"})
    a["metadata"]["ownerReferences"][0]["name"] = "other"
    assert b["spec"]["containers"][0]["env"] == [{"name": "E", "value": "v"}]
    assert b["metadata"]["ownerReferences"][0]["name"] == "j"
    assert pods.pod(2)["metadata"]["annotations"]["volcano.sh/task-index"] == "2"


def test_job_with_volumes_draws_a_volume_name_per_pod() -> None:
    job = _job(volumes=[{"mountPath": "/data", "volumeClaimName": "claim"}])
    pods = TaskPods(job, _task(), forwarding=False, entropy=SystemEntropy())
    names = {pods.pod(i)["spec"]["volumes"][0]["name"] for i in range(3)}
    assert len(names) == 3
