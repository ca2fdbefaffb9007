"""Benchmark: one scheduling session with WaitForFirstConsumer claims on local volumes.

A seeded cluster of 1,000 nodes (96 CPU, ``kubernetes.io/hostname`` labels), 10 local
PersistentVolumes per node (10,000, of a ``WaitForFirstConsumer`` class without a provisioner,
sizes from 50 to 500 GiB), and 2,000 pods in 400 gangs of 5, each pod with its own claim of a
size drawn from 20 to 400 GiB. Prints the seconds and CPU seconds of the session, the pods
placed and the PVs their claims were given, then the same session for the same pods without
claims (what the volume path costs on top). Upstream's default configuration. Not a test: it
never fails on timing.

    python benchmarks/volume_binding.py [--nodes N] [--pvs-per-node K] [--gangs G] [--pods-per-gang P]
"""

from __future__ import annotations

import argparse
import random
import resource
import time

import numpy as np

from pyvolcano.api.manifest import parse_objects
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import default_configuration
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.registry import default_registry

GIB = 1 << 30


def _docs(n_nodes: int, pvs_per_node: int, gangs: int, pods_per_gang: int, *, claims: bool,
          seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    res = {"cpu": "96", "memory": "768Gi", "pods": "110"}
    docs: list[dict] = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
                         "spec": {"weight": 1}},
                        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
                         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}]
    for n in range(n_nodes):
        name = f"node-{n:05d}"
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                     "status": {"capacity": res, "allocatable": res}})
        for k in range(pvs_per_node):
            docs.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{n:05d}-{k:02d}"},
                         "spec": {"capacity": {"storage": f"{rng.randrange(50, 501)}Gi"},
                                  "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                                  "local": {"path": f"/mnt/disk{k}"},
                                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}]}}}})
    for g in range(gangs):
        pg = f"job-{g:04d}"
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": pg, "namespace": "bench"},
                     "spec": {"minMember": pods_per_gang, "queue": "q"}, "status": {"phase": "Inqueue"}})
        for p in range(pods_per_gang):
            name = f"{pg}-{p}"
            spec: dict = {"schedulerName": "volcano",
                          "containers": [{"name": "c", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}}]}
            if claims:
                docs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                             "metadata": {"name": f"data-{name}", "namespace": "bench"},
                             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                                      "resources": {"requests": {"storage": f"{rng.randrange(20, 401)}Gi"}}}})
                spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}}]
            docs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": "bench",
                                      "annotations": {"scheduling.k8s.io/group-name": pg}},
                         "spec": spec, "status": {"phase": "Pending"}})
    return docs


def session(args: argparse.Namespace, *, claims: bool) -> tuple[SessionResult, SchedulerCache, float, float, float]:
    t0 = time.perf_counter()
    docs = _docs(args.nodes, args.pvs_per_node, args.gangs, args.pods_per_gang, claims=claims)
    cache = SchedulerCache.from_objects(parse_objects(enumerate(docs), "bench"))
    build = time.perf_counter() - t0
    registry = default_registry()
    config = default_configuration()
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    t1, c1 = time.perf_counter(), time.process_time()
    res = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    return res, cache, build, time.perf_counter() - t1, time.process_time() - c1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pvs-per-node", type=int, default=10)
    ap.add_argument("--gangs", type=int, default=400)
    ap.add_argument("--pods-per-gang", type=int, default=5)
    args = ap.parse_args()
    pods = args.gangs * args.pods_per_gang
    for claims in (True, False):
        res, cache, build, secs, cpu = session(args, claims=claims)
        bound = sum(1 for pv in cache.volumes.pvs.values() if pv.claim_ref is not None)
        label = "with claims   " if claims else "without claims"
        print(f"{label}: {args.nodes} nodes, {len(cache.volumes.pvs)} PVs, {pods} pods: build {build:6.2f}s  "
              f"session {secs:7.3f}s  cpu {cpu:7.3f}s  placed {len(res.binds):>5}  PVs bound {bound:>5}  "
              f"{len(res.binds) / secs if secs else 0:8.0f} pods/s  peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:6.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
