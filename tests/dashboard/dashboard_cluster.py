"""The small GPU cluster the dashboard tests look at, as manifests.

Four 8-GPU nodes in two racks (HyperNodes ``rack-a``: g1, g2 and ``rack-b``: g3, g4 under
``spine``), queues ``train`` (weight 3) and ``infer`` (weight 1). Running: ``train/llm`` (two
8-GPU pods on g1 and g2) and ``infer/serve`` (one 3-GPU pod on g3). Pending: ``train/big``
(three 8-GPU pods: only g4 is whole) and, in ``infer``, a one-GPU job whose name is HTML.
An Event says ``train/big`` is unschedulable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import dump, node, pod, podgroup, queue
from pyvolcano.dashboard.analysis import Analysis
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.state import state_from_snapshot
from topology_builders import hypernode

HTML_NAME = "<img src=x onerror=alert(1)>"
GPU = "nvidia.com/gpu"
T0 = "2024-01-01T00:00:00Z"
NOW = "2024-01-01T01:00:00Z"


def gpu_pod(name: str, group: str, ns: str, gpus: int, node_name: str = "", **kw: Any) -> dict[str, Any]:
    p = pod(name, group, ns=ns, cpu="4", memory="16Gi", node_name=node_name,
            phase="Running" if node_name else "Pending", **kw)
    p["spec"]["containers"][0]["resources"]["requests"][GPU] = str(gpus)
    p["metadata"]["creationTimestamp"] = T0
    if node_name:
        p["status"]["startTime"] = T0
    return p


def group(name: str, ns: str, queue_name: str, members: int, phase: str, created: str = T0) -> dict[str, Any]:
    pg = podgroup(name, ns=ns, queue=queue_name, min_member=members, phase=phase)
    pg["metadata"]["creationTimestamp"] = created
    return pg


def documents() -> list[dict[str, Any]]:
    gpu_node = {"nvidia_com__gpu": "8"}
    docs: list[dict[str, Any]] = [queue("train", 3), queue("infer", 1)]
    docs += [node(n, cpu="32", memory="256Gi", **gpu_node) for n in ("g1", "g2", "g3", "g4")]
    docs += [hypernode("rack-a", 1, nodes=("g1", "g2")), hypernode("rack-b", 1, nodes=("g3", "g4")),
             hypernode("spine", 2, children=("rack-a", "rack-b"))]
    docs += [group("llm", "train", "train", 2, "Running"),
             gpu_pod("llm-0", "llm", "train", 8, "g1"), gpu_pod("llm-1", "llm", "train", 8, "g2")]
    docs += [group("serve", "infer", "infer", 1, "Running"), gpu_pod("serve-0", "serve", "infer", 3, "g3")]
    docs += [group("big", "train", "train", 3, "Inqueue", "2024-01-01T00:30:00Z")]
    docs += [gpu_pod(f"big-{i}", "big", "train", 8) for i in range(3)]
    docs += [group(HTML_NAME, "infer", "infer", 1, "Inqueue", NOW), gpu_pod("html-0", HTML_NAME, "infer", 1)]
    docs.append({"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": "big.1", "namespace": "train", "creationTimestamp": NOW},
                 "involvedObject": {"kind": "PodGroup", "name": "big", "namespace": "train"},
                 "type": "Warning", "reason": "Unschedulable", "message": f"3/3 tasks unschedulable {HTML_NAME}",
                 "lastTimestamp": NOW, "count": 4})
    return docs


def write(path: Path, docs: list[dict[str, Any]] | None = None) -> Path:
    path.write_text(dump(*(documents() if docs is None else docs)), encoding="utf-8")
    return path


def analysis_of(path: Path) -> Analysis:
    from pyvolcano.dashboard.sources import snapshot_events

    registry = default_registry()
    state = state_from_snapshot([path], registry)
    config = state.config or load_configuration(registry, None)
    return Analysis(state, config, registry, events=snapshot_events(path))
