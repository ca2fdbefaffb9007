"""The API server's defaulting of Pods (``k8s.io/kubernetes/pkg/apis/core/v1/defaults.go``).

``SetDefaults_Pod`` runs whenever a Pod is decoded by the API server: for every container and
init container that has ``resources.limits``, each resource present under ``limits`` but not
under ``requests`` gets a request equal to its limit. So a pod written with
``limits: {nvidia.com/gpu: 8}`` only (as NVIDIA's documentation writes GPU pods) requests 8
GPUs, and the scheduler sees it so.

Only Pods are defaulted, never pod *templates* (upstream: "we only want this defaulting
semantic to take place on a v1.Pod and not a v1.PodTemplate"): a Volcano Job's task template
keeps its limits-only resources, so the PodGroup ``minResources`` the job controller computes
from the template lacks them exactly as upstream's does, while the pods it creates request them.

Applied at every edge where a pod enters: the store's admission (workload pods, pods the job
controller creates) and the manifest parser (snapshot files for ``schedule``). Pure functions;
``default_pod`` mutates the pod mapping it is given and ignores malformed parts (validation
reports those).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["default_pod", "requests_with_limit_defaults"]


def requests_with_limit_defaults(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
    """``requests`` plus, for each resource only under ``limits``, a request equal to the limit."""
    out = dict(requests)
    for name, amount in limits.items():
        out.setdefault(name, amount)
    return out


def default_pod(pod: dict[str, Any]) -> None:
    """``SetDefaults_Pod``'s resource defaulting, in place, on a JSON-shaped Pod."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for group in ("containers", "initContainers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for c in containers:
            res = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(res, dict):
                continue
            limits = res.get("limits")
            if not isinstance(limits, dict) or not limits:
                continue
            requests = res.get("requests")
            if requests is None:
                requests = res["requests"] = {}
            if not isinstance(requests, dict):
                continue
            for name, amount in limits.items():
                requests.setdefault(name, amount)
