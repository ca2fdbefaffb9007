"""Benchmark: decoding a 10,000-pod list reply, as the Kubernetes store does and as clients would.

Compares, per pod: ``json.loads`` to dicts, ``msgspec`` to dicts with every field and
without ``metadata.managedFields`` (what :mod:`pyvolcano.kube.client` keeps), a copy of a
decoded pod both ways (what a store read costs), lightkube's typed models
(``Pod.from_dict``) and, when installed, the official client's models. The pods are
realistic: labels, annotations, owner references, two containers with requests/limits, env,
volume mounts, tolerations, a status with conditions, and the managed fields of the pod's
creator and kubelet as the API server keeps them. Not a test: it prints figures only.

    python benchmarks/kube_decode.py [--pods 10000]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def realistic_pod(i: int) -> dict[str, Any]:
    name = f"job-{i // 8}-worker-{i % 8}"
    container = {
        "name": "worker", "image": "registry.local/train:1.4.2", "imagePullPolicy": "IfNotPresent",
        "command": ["python", "train.py"], "args": ["--epochs", "10", "--lr", "0.001"],
        "env": [{"name": "VC_TASK_INDEX", "value": str(i % 8)}, {"name": "NCCL_DEBUG", "value": "INFO"}],
        "resources": {"requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                      "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "kube-api-access", "mountPath":
                                                                   "/var/run/secrets/kubernetes.io/serviceaccount",
                                                                   "readOnly": True}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    }
    sidecar = {**container, "name": "logger", "image": "registry.local/fluent:2", "command": ["fluent-bit"],
               "args": [], "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "team-a", "uid": f"6f1c{i:08d}-1b2c-4d5e-8f90-1234567890ab",
            "resourceVersion": str(100000 + i), "creationTimestamp": "2026-12-01T10:00:00Z",
            "labels": {"volcano.sh/job-name": f"job-{i // 8}", "volcano.sh/task-spec": "worker",
                       "volcano.sh/queue-name": "research"},
            "annotations": {"scheduling.k8s.io/group-name": f"job-{i // 8}-pg", "volcano.sh/task-index": str(i % 8),
                            "volcano.sh/job-version": "0"},
            "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": f"job-{i // 8}",
                                 "uid": "0d9e8f7a-1111-2222-3333-444455556666", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "schedulerName": "volcano", "restartPolicy": "Never", "priority": 0, "nodeName": f"node-{i % 1000}",
            "containers": [container, sidecar], "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
        },
        "status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.0.1", "qosClass": "Guaranteed",
                   "startTime": "2026-12-01T10:00:05Z",
                   "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-12-01T10:00:05Z"}
                                  for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]},
    }
    # server-side apply's bookkeeping as the API server keeps it: the creator's fields, the kubelet's status
    md = pod["metadata"]
    md["managedFields"] = [
        {"manager": "vc-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2026-12-01T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": _fields_v1({"metadata": {k: md[k] for k in ("labels", "annotations", "ownerReferences")},
                                 "spec": pod["spec"]})},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-12-01T10:00:05Z",
         "fieldsType": "FieldsV1", "fieldsV1": _fields_v1({"status": pod["status"]}), "subresource": "status"}]
    return pod


def _fields_v1(value: Any) -> dict[str, Any]:
    """The FieldsV1 set of ``value``'s fields (list items keyed by name or index, as for containers)."""
    if isinstance(value, dict):
        return {".": {}, **{f"f:{k}": _fields_v1(v) for k, v in value.items()}}
    if isinstance(value, list):
        return {f'k:{{"name":"{v.get("name", i) if isinstance(v, dict) else i}"}}': _fields_v1(v)
                for i, v in enumerate(value)}
    return {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10_000)
    n = ap.parse_args().pods
    body = json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"},
                       "items": [realistic_pod(i) for i in range(n)]}).encode()
    print(f"{n} pods, {len(body) / 1e6:.1f} MB of JSON")

    def timed(label: str, fn: Any) -> None:
        best = min(_time(fn) for _ in range(3))
        print(f"  {label:<44} {best * 1e6 / n:7.1f} µs/pod  ({best:.2f} s)")

    timed("json.loads -> dicts", lambda: json.loads(body))
    import msgspec

    dec = msgspec.json.Decoder()
    timed("msgspec -> dicts, every field", lambda: dec.decode(body))
    from pyvolcano.kube.client import decode_list

    timed("msgspec, no managedFields (pyvolcano.kube)", lambda: decode_list(body))
    items = dec.decode(body)["items"]
    from pyvolcano.store.base import clone

    timed("copy of a decoded pod, every field", lambda: [clone(p) for p in items])
    _, slim = decode_list(body)
    timed("copy of a decoded pod, no managedFields", lambda: [clone(p) for p in slim])
    try:
        from lightkube.models.core_v1 import Pod as _LKPod  # noqa: F401
        from lightkube.resources.core_v1 import Pod as LKPod

        timed("msgspec + lightkube Pod.from_dict", lambda: [LKPod.from_dict(p) for p in dec.decode(body)["items"]])
    except ImportError:
        print("  lightkube models: not installed")
    try:
        from kubernetes.client import ApiClient

        api = ApiClient()

        class _Resp:
            data = body

        timed("kubernetes ApiClient.deserialize (V1PodList)", lambda: api.deserialize(_Resp(), "V1PodList"))
    except ImportError:
        print("  kubernetes (official client): not installed")
    from pyvolcano.api.manifest import parse_object

    timed("dict -> pyvolcano Pod (scheduler cache input)", lambda: [parse_object(p) for p in items])


def _time(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
