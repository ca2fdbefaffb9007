"""Seeded synthetic clusters and gang workloads for the benchmarks.

Nodes: 96 CPU, 768Gi, 8 ``nvidia.com/gpu``, 110 pods. Jobs: gangs of ``pods_per_job`` identical
pods (minMember = all of them), spread over 4 queues, with a mix of CPU-only and GPU
requests drawn from a fixed menu by a seeded generator (``menu=GPU_MENU``: GPU pods only,
the held-out shape, where the cluster fills up before every gang fits).
"""

from __future__ import annotations

import random

from pyvolcano.api.manifest import ClusterObjects
from pyvolcano.api.objects import Container, Node, Pod, PodGroup, Queue

GPU = "nvidia.com/gpu"
MENU = [
    {"cpu": "4", "memory": "16Gi"},
    {"cpu": "8", "memory": "32Gi", GPU: "1"},
    {"cpu": "2", "memory": "8Gi"},
    {"cpu": "12", "memory": "96Gi", GPU: "2"},
    {"cpu": "1", "memory": "4Gi"},
]
# The held-out shape's menu: every pod asks for GPUs (one, or two for one gang in twelve, with
# varied CPU and memory), so the cluster's GPUs (8 a node) run out before every gang fits.
GPU_MENU = [
    {"cpu": "8", "memory": "32Gi", GPU: "1"},
    {"cpu": "4", "memory": "16Gi", GPU: "1"},
    {"cpu": "12", "memory": "64Gi", GPU: "1"},
    {"cpu": "6", "memory": "48Gi", GPU: "1"},
] * 3
GPU_MENU[-1] = {"cpu": "12", "memory": "96Gi", GPU: "2"}


def synthetic_cluster(n_nodes: int, n_jobs: int, pods_per_job: int, *, seed: int = 42,
                      n_queues: int = 4, menu: list[dict[str, str]] | None = None) -> ClusterObjects:
    rng = random.Random(seed)
    objs = ClusterObjects()
    for q in range(n_queues):
        objs.queues.append(Queue(name=f"q{q}", weight=q + 1))
    alloc = {"cpu": "96", "memory": "768Gi", GPU: "8", "pods": "110"}
    for i in range(n_nodes):
        objs.nodes.append(Node(name=f"node-{i:05d}", labels={"kubernetes.io/hostname": f"node-{i:05d}"},
                               capacity=dict(alloc), allocatable=dict(alloc)))
    for j in range(n_jobs):
        name = f"job-{j:05d}"
        queue = f"q{rng.randrange(n_queues)}"
        req = rng.choice(MENU if menu is None else menu)
        objs.podgroups.append(PodGroup(namespace="bench", name=name, uid=f"bench/{name}", min_member=pods_per_job,
                                       queue=queue, phase="Inqueue", creation_timestamp=float(j)))
        for k in range(pods_per_job):
            pname = f"{name}-worker-{k}"
            objs.pods.append(Pod(namespace="bench", name=pname, uid=f"bench-{pname}",
                                 annotations={"scheduling.k8s.io/group-name": name}, scheduler_name="volcano",
                                 containers=[Container(name="main", requests=dict(req))],
                                 creation_timestamp=float(j)))
    return objs


def to_yaml(objs: ClusterObjects) -> str:
    import yaml

    docs: list[dict[str, object]] = []
    for q in objs.queues:
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": q.name},
                     "spec": {"weight": q.weight}, "status": {"state": "Open"}})
    for n in objs.nodes:
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": n.labels},
                     "status": {"capacity": n.capacity, "allocatable": n.allocatable}})
    for pg in objs.podgroups:
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": pg.name, "namespace": pg.namespace},
                     "spec": {"minMember": pg.min_member, "queue": pg.queue}, "status": {"phase": pg.phase}})
    for p in objs.pods:
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": p.name, "namespace": p.namespace, "annotations": p.annotations},
                     "spec": {"schedulerName": "volcano",
                              "containers": [{"name": "main", "resources": {"requests": p.containers[0].requests}}]},
                     "status": {"phase": "Pending"}})
    return yaml.dump_all(docs, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
