"""Builders shared by the gangpreempt and gangreclaim tests: racks of nodes under HyperNodes,
gangs running on them, and sessions run one at a time on one cache."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import cache_of, node, pod, podgroup
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.registry import default_registry

LOW = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10}
HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
HARD_TIER_1 = {"mode": "hard", "highestTierAllowed": 1}


def hypernode(name: str, tier: int, nodes: list[str]) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}}
                                               for n in nodes]}}


def racks(*names: str, nodes_per_rack: int = 2, cpu: str = "2") -> list[dict[str, Any]]:
    """Racks ``names`` (tier-1 HyperNodes) of ``nodes_per_rack`` nodes named ``<rack>-n<i>``."""
    docs: list[dict[str, Any]] = []
    for rack in names:
        members = [f"{rack}-n{i}" for i in range(nodes_per_rack)]
        docs += [node(n, cpu=cpu, memory="8Gi") for n in members]
        docs.append(hypernode(rack, 1, members))
    return docs


def gang(name: str, nodes: list[str], *, queue: str = "q", min_member: int | None = None, cpu: str = "2",
         priority_class: str = "low", **podgroup_spec: Any) -> list[dict[str, Any]]:
    """A running gang: one pod per entry of ``nodes``; ``minMember`` defaults to all of them."""
    pg = podgroup(name, queue=queue, min_member=len(nodes) if min_member is None else min_member,
                  phase="Running", priorityClassName=priority_class, **podgroup_spec)
    pods = [pod(f"{name}-{i}", name, node_name=n, phase="Running", cpu=cpu, memory="1Gi")
            for i, n in enumerate(nodes)]
    return [pg, *pods]


def waiting(name: str, size: int, *, queue: str = "q", cpu: str = "2", priority_class: str = "high",
            topology: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A pending gang of ``size`` pods (``minMember`` = ``size``)."""
    spec: dict[str, Any] = {"priorityClassName": priority_class}
    if topology is not None:
        spec["networkTopology"] = topology
    pg = podgroup(name, queue=queue, min_member=size, **spec)
    return [pg, *(pod(f"{name}-{i}", name, cpu=cpu, memory="1Gi") for i in range(size))]


class Sessions:
    """Sessions run one after the other on one cache; evictions delete their pods at once, or,
    with ``graceful``, leave them terminating until :meth:`delete`."""

    def __init__(self, docs: list[dict[str, Any]], conf: str, *, graceful: bool = False):
        self.cache: SchedulerCache = cache_of(*docs)
        self.cache.evictions_delete_immediately = not graceful
        self.config = load_scheduler_conf(conf)
        registry = default_registry()
        self.plugins = registry.plugin_factories(self.config.plugin_names())
        self.actions = registry.action_factories(self.config.actions)
        self.rng = np.random.default_rng(0)
        self.count = 0

    def run(self, *actions: str) -> SessionResult:
        self.count += 1
        return run_once(self.cache, self.config, self.plugins, self.actions, now=float(self.count), rng=self.rng,
                        action_names=actions or None)

    def delete(self, *keys: str) -> None:
        for key in keys:
            self.cache.delete_pod(next(uid for uid, t in self.cache.tasks.items() if t.key == key))

    def pod(self, key: str) -> Any:
        return next(t.pod for t in self.cache.tasks.values() if t.key == key)

    def job(self, key: str) -> Any:
        return self.cache.jobs[key]
