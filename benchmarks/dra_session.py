"""Benchmark: scheduling sessions with dynamic resource allocation on 1,000 GPU nodes.

The cluster: 1,000 nodes of 8 GPUs of two models (half A100, half H100), published as one
ResourceSlice per node as the simulator's GPU driver publishes them (driver
``gpu.nvidia.com``), one DeviceClass, 4 queues. The workload: gangs of 8 pods; each pod has a
ResourceClaim of its own asking for 1 or 2 GPUs, a third of them with a CEL selector on the
model, some with a ``matchAttribute`` constraint on the model; pods ask for CPU and memory
only (no ``nvidia.com/gpu``). Prints, for each session until nothing more is placed: seconds, pods
placed, pods per second, CPU seconds, and the devices allocated; then the same cluster's
session without claims (the pods as they are, claims removed) for comparison. Not a test: it
never fails on timing.

    python benchmarks/dra_session.py [--nodes 1000] [--gangs 250] [--sessions 3]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from pyvolcano.api.dra.types import PodResourceClaim
from pyvolcano.api.manifest import ClusterObjects, load_manifest_text
from pyvolcano.api.objects import Container, Node, Pod, PodGroup, Queue
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import default_configuration
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.dra_driver import gpu_slice
from pyvolcano.runtime.registry import default_registry

MODELS = ("A100-SXM4-80GB", "H100-SXM5-80GB")
DEVICE_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.nvidia.com"'}
"""


def _claim_doc(ns: str, name: str, count: int, model: str | None, same_model: bool) -> dict[str, object]:
    exactly: dict[str, object] = {"deviceClassName": "gpu.nvidia.com", "count": count}
    if model is not None:
        exactly["selectors"] = [{"cel": {"expression":
                                         f'device.attributes["gpu.nvidia.com"].productName == "{model}"'}}]
    devices: dict[str, object] = {"requests": [{"name": "gpus", "exactly": exactly}]}
    if same_model:
        devices["constraints"] = [{"matchAttribute": "gpu.nvidia.com/productName"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}, "spec": {"devices": devices}}


def cluster(n_nodes: int, n_gangs: int, pods_per_gang: int, *, claims: bool, seed: int = 7) -> ClusterObjects:
    rng = random.Random(seed)
    objs = ClusterObjects()
    for q in range(4):
        objs.queues.append(Queue(name=f"q{q}", weight=q + 1))
    for i in range(n_nodes):
        name = f"node-{i:05d}"
        labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": MODELS[i % 2],
                  "nvidia.com/gpu.memory": "81920"}
        alloc = {"cpu": "96", "memory": "768Gi", "pods": "110"}
        objs.nodes.append(Node(name=name, labels=labels, capacity=dict(alloc), allocatable=dict(alloc)))
        if claims:
            node_doc = {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"nvidia.com/gpu": "8"}}}
            s = gpu_slice(node_doc)
            assert s is not None
            objs.resource_slices.extend(load_manifest_text(_yaml([s])).resource_slices)
    if claims:
        objs.device_classes.extend(load_manifest_text(DEVICE_CLASS).device_classes)
    claim_docs: list[dict[str, object]] = []
    for j in range(n_gangs):
        name = f"job-{j:05d}"
        count = rng.choice((1, 2))
        model = rng.choice((None, None, MODELS[0], MODELS[1]))
        objs.podgroups.append(PodGroup(namespace="bench", name=name, uid=f"bench/{name}", min_member=pods_per_gang,
                                       queue=f"q{j % 4}", phase="Inqueue", creation_timestamp=float(j)))
        for k in range(pods_per_gang):
            pname = f"{name}-w-{k}"
            pod = Pod(namespace="bench", name=pname, uid=f"bench-{pname}",
                      annotations={"scheduling.k8s.io/group-name": name}, scheduler_name="volcano",
                      containers=[Container(name="main", requests={"cpu": "4", "memory": "32Gi"})],
                      creation_timestamp=float(j))
            if claims:
                claim_docs.append(_claim_doc("bench", pname, count, model, same_model=count == 2 and model is None))
                pod.resource_claims = (PodResourceClaim("gpus", pname),)
            objs.pods.append(pod)
    if claim_docs:
        objs.resource_claims.extend(load_manifest_text(_yaml(claim_docs)).resource_claims)
    return objs


def _yaml(docs: list[dict[str, object]]) -> str:
    import yaml

    return yaml.dump_all(docs, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def run(n_nodes: int, n_gangs: int, pods_per_gang: int, sessions: int, *, claims: bool) -> None:
    t0 = time.perf_counter()
    objs = cluster(n_nodes, n_gangs, pods_per_gang, claims=claims)
    cache = SchedulerCache.from_objects(objs)
    build = time.perf_counter() - t0
    config = default_configuration()
    registry = default_registry()
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    rng = np.random.default_rng(0)
    label = "with claims" if claims else "no claims  "
    print(f"{n_nodes} nodes, {n_gangs * pods_per_gang} pods ({n_gangs} gangs x {pods_per_gang}), {label}: "
          f"build {build:.2f}s", flush=True)
    for i in range(sessions):
        t1, c1 = time.perf_counter(), time.process_time()
        res = run_once(cache, config, plugins, actions, now=float(i), rng=rng)
        secs, cpu = time.perf_counter() - t1, time.process_time() - c1
        placed = len(res.binds)
        print(f"  session {i + 1}: {secs:7.3f}s  placed {placed:>6}  {placed / secs if secs else 0:>7.0f} pods/s  "
              f"cpu {cpu:7.3f}s  devices allocated {cache.dra.allocated_count():>6}  "
              f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:6.0f} MiB", flush=True)
        if not placed:
            break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gangs", type=int, default=250)
    ap.add_argument("--pods-per-gang", type=int, default=8)
    ap.add_argument("--sessions", type=int, default=3)
    args = ap.parse_args()
    run(args.nodes, args.gangs, args.pods_per_gang, args.sessions, claims=True)
    run(args.nodes, args.gangs, args.pods_per_gang, args.sessions, claims=False)


if __name__ == "__main__":
    main()
