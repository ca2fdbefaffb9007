"""A pod's QoS class (``k8s.io/kubernetes/pkg/apis/core/v1/helper/qos`` ``GetPodQOS``).

Only ``cpu`` and ``memory`` count. Requests and limits of every container (init containers
included) are summed per resource, ignoring zero quantities. No request and no limit at all is
``BestEffort``; ``Guaranteed`` needs a cpu and a memory limit on every container and the summed
limits equal to the summed requests on the same resources; anything else is ``Burstable``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from pyvolcano.api.objects import Container, Pod
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = ["QOSClass", "pod_qos"]

_QOS_RESOURCES = ("cpu", "memory")


class QOSClass(enum.StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def pod_qos(pod: Pod) -> QOSClass:
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for c in _all_containers(pod):
        for name, value in _positive(c.requests):
            requests[name] = requests.get(name, Fraction(0)) + value
        found = set()
        for name, value in _positive(c.limits):
            found.add(name)
            limits[name] = limits.get(name, Fraction(0)) + value
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed and all(limits.get(name) == value for name, value in requests.items()) and (
        len(requests) == len(limits)
    ):
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


def _all_containers(pod: Pod) -> Iterable[Container]:
    yield from pod.init_containers
    yield from pod.containers


def _positive(resources: Mapping[str, Any]) -> Iterable[tuple[str, Fraction]]:
    for name in _QOS_RESOURCES:
        raw = resources.get(name)
        if raw is None:
            continue
        try:
            value = parse_quantity(raw)
        except QuantityError:
            continue
        if value > 0:
            yield name, value
