"""The objects of vcctl's tests: three queues, three jobs, their PodGroups and pods."""

from __future__ import annotations

from typing import Any

from pyvolcano.store.base import EPOCH

NOW = EPOCH.timestamp() + 330.0  # every object is created at EPOCH: ages are "5m30s"


def job(name: str, *, ns: str = "default", queue: str = "default", phase: str = "Running", replicas: int = 2,
        scheduler: str = "volcano", labels: dict[str, str] | None = None, **status: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {},
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"minAvailable": replicas, "queue": queue, "schedulerName": scheduler,
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                         "containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {"state": {"phase": phase}, "minAvailable": replicas, **status}}


def queue(name: str, *, weight: int = 1, state: str = "Open", parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec,
            "status": {"state": state}}


def podgroup(name: str, *, ns: str = "default", queue: str = "default", phase: str = "Running") -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": 1, "queue": queue},
            "status": {"phase": phase}}


def pod(name: str, *, ns: str = "default", job_name: str | None = None, queue: str | None = None,
        phase: str = "Running", node: str = "n1", ready: bool = True, annotations: dict[str, str] | None = None,
        **status: Any) -> dict[str, Any]:
    labels = {}
    if job_name:
        labels["volcano.sh/job-name"] = job_name
    if queue:
        labels["volcano.sh/queue-name"] = queue
    st: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        st["containerStatuses"] = [{"name": "c", "ready": ready, "restartCount": 0, "state": {"running": {}}}]
    st.update(status)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations or {},
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"nodeName": node, "schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]},
            "status": st}


def objects() -> list[dict[str, Any]]:
    return [
        queue("default"), queue("research", weight=3, parent="root"), queue("closed", state="Closed"),
        job("train", pending=0, running=2),
        job("infer", queue="research", phase="Pending", replicas=1, scheduler="other", labels={"team": "ml"},
            pending=1),
        job("etl", ns="batch", phase="Completed", labels={"team": "data"}, succeeded=2),
        podgroup("train-uid"), podgroup("infer-uid", queue="research", phase="Inqueue"),
        podgroup("etl-uid", ns="batch", phase="Completed"), podgroup("plain", queue="research", phase="Pending"),
        pod("train-worker-0", job_name="train", queue="default"),
        pod("train-worker-1", job_name="train", queue="default", node="n2"),
        pod("infer-worker-0", job_name="infer", queue="research", phase="Pending", node=""),
        pod("etl-worker-0", ns="batch", job_name="etl", phase="Succeeded"),
        pod("plain-0", annotations={"scheduling.volcano.sh/queue-name": "research"}),
        pod("unrelated", node="n1"),
    ]


