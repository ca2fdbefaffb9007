"""Small builders for test clusters, emitting manifest YAML (the same shape users write)."""

from __future__ import annotations

from typing import Any

import numpy as np
import yaml

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.framework import session as framework_session
from pyvolcano.framework.session import Session
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, **scalars: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": pods}
    res.update({k.replace("__", "/").replace("_", "."): v for k, v in scalars.items()})
    d: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                         "status": {"capacity": res, "allocatable": res}}
    if taints:
        d["spec"] = {"taints": taints}
    return d


def queue(name: str, weight: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, **spec}, "status": {"state": "Open"}}


def podgroup(name: str, *, ns: str = "ns", queue: str = "q", min_member: int = 1, phase: str = "Inqueue",
             **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"minMember": min_member, "queue": queue, **spec}, "status": {"phase": phase}}


def pod(name: str, group: str, *, ns: str = "ns", cpu: str | None = "1", memory: str | None = "1Gi",
        node_name: str = "", phase: str = "Pending", priority: int | None = None,
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    d: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {},
                     "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "resources": {"requests": requests}}],
                 **spec},
        "status": {"phase": phase},
    }
    if node_name:
        d["spec"]["nodeName"] = node_name
    if priority is not None:
        d["spec"]["priority"] = priority
    return d


def pdb(name: str, match_labels: dict[str, str], allowed: int, *, ns: str = "ns",
        disrupted: list[str] | None = None) -> dict[str, Any]:
    """A PodDisruptionBudget as the disruption controller has written its status."""
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2025-01-01T00:00:00Z")
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": match_labels}}, "status": status}


def resource_quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None, *,
                   ns: str = "ns") -> dict[str, Any]:
    """A ResourceQuota as the quota controller has written its status (``spec.hard`` = ``status.hard``)."""
    status: dict[str, Any] = {"hard": dict(hard)}
    if used is not None:
        status["used"] = dict(used)
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns},
            "spec": {"hard": dict(hard)}, "status": status}
def numatopology(name: str, policy: str = "single-numa-node", free: str = "0-7", *, cpu_policy: str = "static",
                 numa_nodes: int = 2, cpus_per_numa: int = 4, **spec: Any) -> dict[str, Any]:
    """A Numatopology for node ``name``: NUMA node k holds cpus k*cpus_per_numa.. (socket k, two
    hyperthreads per core), ``free`` the exporter's allocatable cpu list."""
    detail = {str(c): {"numa": c // cpus_per_numa, "socket": c // cpus_per_numa, "core": c // 2}
              for c in range(numa_nodes * cpus_per_numa)}
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": name},
            "spec": {"policies": {"CPUManagerPolicy": cpu_policy, "TopologyManagerPolicy": policy},
                     "numares": {"cpu": {"allocatable": free, "capacity": len(detail)}}, "cpuDetail": detail, **spec}}


def guaranteed(pod_doc: dict[str, Any], policy: str | None = None) -> dict[str, Any]:
    """``pod_doc`` with limits equal to its requests (a Guaranteed pod), annotated with ``policy``."""
    for c in pod_doc["spec"]["containers"]:
        c["resources"]["limits"] = dict(c["resources"]["requests"])
    if policy is not None:
        pod_doc["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = policy
    return pod_doc


def plugin_conf(name: str, arguments: dict[str, Any], actions: str = "allocate") -> str:
    """A scheduler configuration with one plugin, ``name``, given ``arguments``."""
    return yaml.safe_dump({"actions": actions, "tiers": [{"plugins": [{"name": name, "arguments": arguments}]}]})


def open_session(*docs: dict[str, Any], conf: str, now: float = 0.0) -> Session:
    """A session opened on ``docs`` under the scheduler configuration ``conf`` (seed 0)."""
    config = load_scheduler_conf(conf)
    plugins = default_registry().plugin_factories(config.plugin_names())
    return framework_session.open_session(cache_of(*docs), config, plugins, now=now, rng=np.random.default_rng(0))


def dump(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def cache_of(*docs: dict[str, Any]) -> SchedulerCache:
    return SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))


def schedule(*docs: dict[str, Any], conf: str | None = None, sessions: int = 1, seed: int = 0) -> dict[str, Any]:
    registry = default_registry()
    config = default_configuration() if conf is None else load_scheduler_conf(conf)
    return schedule_objects(cache_of(*docs), config, registry, sessions=sessions, seed=seed)


# ---------------------------------------------------------------------------- storage


def storage_class(name: str, *, provisioner: str = "kubernetes.io/no-provisioner", mode: str = "WaitForFirstConsumer",
                  default: bool = False, **extra: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if default:
        md["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": md,
            "provisioner": provisioner, "volumeBindingMode": mode, **extra}


def local_pv(name: str, node: str, *, size: str = "10Gi", cls: str = "local",
             modes: tuple[str, ...] = ("ReadWriteOnce",), labels: dict[str, str] | None = None,
             claim: str = "") -> dict[str, Any]:
    """A local PersistentVolume pinned to ``node`` (by hostname label); ``claim`` ("ns/name") pre-binds it."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls,
        "local": {"path": f"/mnt/{name}"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
    }
    if claim:
        ns, cname = claim.split("/")
        spec["claimRef"] = {"namespace": ns, "name": cname}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}


def pvc(name: str, *, ns: str = "ns", cls: str | None = "local", size: str = "5Gi",
        modes: tuple[str, ...] = ("ReadWriteOnce",), volume: str = "", bound: bool = False,
        **spec: Any) -> dict[str, Any]:
    """A PersistentVolumeClaim; ``volume`` names its PV, ``bound`` marks the binding complete."""
    s: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}
    if cls is not None:
        s["storageClassName"] = cls
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if volume:
        s["volumeName"] = volume
    if bound:
        md["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md, "spec": s,
            "status": {"phase": "Bound" if bound else "Pending"}}


def claims(*names: str) -> list[dict[str, Any]]:
    """A pod's ``spec.volumes`` mounting the claims ``names``."""
    return [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)]


def hostnode(name: str, **kw: Any) -> dict[str, Any]:
    """A node with its ``kubernetes.io/hostname`` label, as the kubelet sets it."""
    labels = {"kubernetes.io/hostname": name, **kw.pop("labels", {})}
    return node(name, labels=labels, **kw)


# ---------------------------------------------------------------------------- dynamic resource allocation


def device_class(name: str = "gpu", driver: str = "gpu.example.com") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def gpu_slice(node: str, gpus: int = 2, *, driver: str = "gpu.example.com", model: str = "A100") -> dict[str, Any]:
    """A node's ResourceSlice with ``gpus`` devices ``gpu-<i>`` (attributes model, index)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-{driver}"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                   "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": model},
                                                                     "index": {"int": i}}} for i in range(gpus)]}}


def resource_claim(name: str, *, ns: str = "ns", count: int = 1, device_class: str = "gpu",
                   selectors: tuple[str, ...] = (), **status: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    d: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
                         "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}}
    if status:
        d["status"] = status
    return d


def with_claims(p: dict[str, Any], *claims: str) -> dict[str, Any]:
    """``p`` with one pod claim per ResourceClaim name (``resourceClaimName``)."""
    p["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return p
