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

Pod-level resources (``spec.resources``, the ``PodLevelResources`` feature, on by default
since Kubernetes 1.34) are defaulted after the containers (``defaultHugePagePodLimits``,
``defaultPodRequests``): when the pod sets pod-level limits, each supported resource (cpu,
memory, ``hugepages-*``) without a pod-level request gets one — the containers' aggregated
request for cpu and memory when some container requests it, else the pod-level limit; a
hugepages resource the containers limit gets a pod-level limit of their aggregate first.
:func:`pod_level_requests` gives the result for typed containers, :func:`default_pod` writes
it into a Pod mapping.

A pod with ``hostNetwork: true`` gets ``hostPort = containerPort`` on every port that has no
host port (``defaultHostNetworkPorts``).

Applied at every edge where a pod enters: the store's admission (workload pods, pods the job
controller creates) and the manifest parser (snapshot files for ``schedule``). Pure functions;
``default_pod`` mutates the pod mapping it is given and ignores malformed parts (validation
reports those).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = [
    "ContainerResources",
    "aggregate_container_resources",
    "default_pod",
    "host_network_ports",
    "is_pod_level_resource",
    "pod_level_requests",
    "requests_with_limit_defaults",
]

ContainerResources = tuple[Mapping[str, Any], Mapping[str, Any], bool]
"""One container's (defaulted) requests, its limits, and whether it is a sidecar (an init
container with ``restartPolicy: Always``)."""


def is_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _amounts(rl: Mapping[str, Any]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, q in rl.items():
        try:
            out[str(name)] = parse_quantity(q)
        except (QuantityError, TypeError, ValueError):
            continue  # validation reports it
    return out


def aggregate_container_resources(regular: Iterable[Mapping[str, Any]],
                                  init: Iterable[tuple[Mapping[str, Any], bool]]) -> dict[str, Fraction]:
    """``AggregateContainerRequests`` / ``...Limits`` of resource lists: the regular containers'
    sum and the sidecars', against the largest need of an init container (its own plus the
    sidecars started before it)."""
    total: dict[str, Fraction] = {}
    for rl in regular:
        for name, amount in _amounts(rl).items():
            total[name] = total.get(name, Fraction(0)) + amount
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for rl, sidecar in init:
        own = _amounts(rl)
        if sidecar:
            for name, amount in own.items():
                total[name] = total.get(name, Fraction(0)) + amount
                sidecars[name] = sidecars.get(name, Fraction(0)) + amount
            need = dict(sidecars)
        else:
            need = {name: own.get(name, Fraction(0)) + sidecars.get(name, Fraction(0)) for name in {*own, *sidecars}}
        for name, amount in need.items():
            init_max[name] = max(init_max.get(name, amount), amount)
    for name, amount in init_max.items():
        total[name] = max(total.get(name, amount), amount)
    return total


def _text(amount: Fraction) -> str:
    """A quantity's text for an exact amount (whole, milli or nano units, rounded up)."""
    if amount.denominator == 1:
        return str(amount.numerator)
    if (amount * 1000).denominator == 1:
        return f"{int(amount * 1000)}m"
    return f"{math.ceil(amount * 10**9)}n"


def pod_level_requests(resources: Mapping[str, Any] | None, containers: Iterable[ContainerResources],
                       init_containers: Iterable[ContainerResources]) -> dict[str, Any]:
    """The pod-level requests the API server stores for a pod whose ``spec.resources`` is
    ``resources`` (``defaultHugePagePodLimits`` then ``defaultPodRequests``); ``{}`` when it sets
    none. ``containers`` carry requests already defaulted from their limits."""
    if not isinstance(resources, Mapping):
        return {}
    raw_requests, raw_limits = resources.get("requests"), resources.get("limits")
    requests = dict(raw_requests) if isinstance(raw_requests, Mapping) else {}
    limits = dict(raw_limits) if isinstance(raw_limits, Mapping) else {}
    if not requests and not limits:
        return {}
    regular, init = list(containers), list(init_containers)
    container_limits = aggregate_container_resources((lim for _r, lim, _s in regular),
                                                     ((lim, side) for _r, lim, side in init))
    for name, amount in container_limits.items():
        if name.startswith("hugepages-") and name not in requests and name not in limits:
            limits[name] = _text(amount)
    if not limits:
        return requests
    container_requests = aggregate_container_resources((req for req, _l, _s in regular),
                                                       ((req, side) for req, _l, side in init))
    for name, amount in container_requests.items():
        if name not in requests and name in ("cpu", "memory"):
            requests[name] = _text(amount)
    for name, amount in limits.items():
        if name not in requests and is_pod_level_resource(name):
            requests[name] = amount
    return requests


def requests_with_limit_defaults(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
    """``requests`` plus, for each resource only under ``limits``, a request equal to the limit."""
    out = dict(requests)
    for name, amount in limits.items():
        out.setdefault(name, amount)
    return out


def host_network_ports(ports: list[Any]) -> list[Any]:
    """``defaultHostNetworkPorts``: with ``hostNetwork``, a port without a ``hostPort`` gets its
    ``containerPort`` as one (so the NodePorts filter sees it)."""
    out: list[Any] = []
    for port in ports:
        if isinstance(port, dict) and not port.get("hostPort") and port.get("containerPort"):
            port = {**port, "hostPort": port["containerPort"]}
        out.append(port)
    return out


def _container_resources(containers: Any, *, init: bool) -> list[ContainerResources]:
    out: list[ContainerResources] = []
    for c in containers if isinstance(containers, list) else []:
        res = c.get("resources") if isinstance(c, dict) else None
        res = res if isinstance(res, dict) else {}
        req, lim = res.get("requests"), res.get("limits")
        sidecar = init and isinstance(c, dict) and c.get("restartPolicy") == "Always"
        out.append((req if isinstance(req, dict) else {}, lim if isinstance(lim, dict) else {}, sidecar))
    return out


def default_pod(pod: dict[str, Any]) -> None:
    """``SetDefaults_Pod``'s resource defaulting, in place, on a JSON-shaped Pod."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _default_containers(spec)
    if spec.get("hostNetwork") is True:
        for group in ("containers", "initContainers"):
            for c in spec.get(group) or []:
                ports = c.get("ports") if isinstance(c, dict) else None
                if isinstance(ports, list):
                    c["ports"] = host_network_ports(ports)
    resources = spec.get("resources")
    if isinstance(resources, dict):
        requests = pod_level_requests(resources, _container_resources(spec.get("containers"), init=False),
                                      _container_resources(spec.get("initContainers"), init=True))
        if requests:
            resources["requests"] = requests


def _default_containers(spec: dict[str, Any]) -> None:
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
