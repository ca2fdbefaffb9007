"""Host ports (kube-scheduler ``NodePorts`` filter).

Reproduces ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` together with
``HostPortInfo`` in ``pkg/scheduler/framework/types.go``: only ports with ``hostPort > 0``
count; an empty ``hostIP`` means ``0.0.0.0`` and an empty protocol means ``TCP``; a wanted
``0.0.0.0`` port conflicts with the same protocol+port on any IP, a wanted specific IP conflicts
with the same IP or with ``0.0.0.0``. Wanted ports are not checked against each other.

The caller decides which containers to pass (kube-scheduler uses ``spec.containers``; newer
versions may also count restartable init containers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

__all__ = ["BIND_ALL_HOST_IP", "ERR_REASON_NODE_PORTS", "host_ports_conflict", "pod_host_ports"]

BIND_ALL_HOST_IP: Final = "0.0.0.0"
ERR_REASON_NODE_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"


def _ports_of(container: Any) -> Sequence[Any]:
    ports = container.get("ports") if isinstance(container, Mapping) else getattr(container, "ports", None)
    return ports or ()


def pod_host_ports(containers: Iterable[Any]) -> list[tuple[str, str, int]]:
    """``(hostIP, protocol, hostPort)`` of every container port with ``hostPort > 0``.

    ``containers`` are container mappings (manifest shape) or objects with a ``ports`` list of
    port mappings.
    """
    out: list[tuple[str, str, int]] = []
    for c in containers:
        for p in _ports_of(c):
            if not isinstance(p, Mapping):
                continue
            hp = p.get("hostPort")
            if not isinstance(hp, int) or isinstance(hp, bool) or hp <= 0:
                continue
            out.append((p.get("hostIP") or BIND_ALL_HOST_IP, p.get("protocol") or "TCP", hp))
    return out


def host_ports_conflict(wanted: Sequence[tuple[str, str, int]], used: Iterable[tuple[str, str, int]]) -> bool:
    """Would any wanted host port clash with the ports already used on the node?"""
    if not wanted:
        return False
    by_port: dict[tuple[str, int], set[str]] = {}
    for ip, proto, port in used:
        if port <= 0:
            continue
        by_port.setdefault((proto or "TCP", port), set()).add(ip or BIND_ALL_HOST_IP)
    if not by_port:
        return False
    for ip, proto, port in wanted:
        if port <= 0:
            continue
        ips = by_port.get((proto or "TCP", port))
        if not ips:
            continue
        ip = ip or BIND_ALL_HOST_IP
        if ip == BIND_ALL_HOST_IP or ip in ips or BIND_ALL_HOST_IP in ips:
            return True
    return False
