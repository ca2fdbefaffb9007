"""Small builders for simulations: Volcano Jobs as users write them, and one-call runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from builders import node
from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.runtime import Simulation, SimulationResult
from pyvolcano.simulator.workload import Submission

__all__ = ["node", "simulate", "snapshot_at", "vcjob", "volume_claim"]


def vcjob(name: str, *, replicas: int = 1, cpu: str = "1", duration: str | None = "60s", queue: str | None = None,
          min_available: int | None = None, requests: dict[str, str] | None = None,
          node_selector: dict[str, str] | None = None, priority_class: str | None = None,
          volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ``batch.volcano.sh/v1alpha1`` Job with one task; ``duration=None`` leaves out the annotation;
    ``volumes`` is its ``spec.volumes`` (see :func:`volume_claim`)."""
    ann = {} if duration is None else {"pyvolcano.io/duration": duration}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, **(requests or {})}}}],
    }
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    spec: dict[str, Any] = {"minAvailable": replicas if min_available is None else min_available,
                            "schedulerName": "volcano",
                            "tasks": [{"name": "t", "replicas": replicas,
                                       "template": {"metadata": {"annotations": ann}, "spec": pod_spec}}]}
    if queue:
        spec["queue"] = queue
    if priority_class:
        spec["priorityClassName"] = priority_class
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def volume_claim(cls: str, size: str = "5Gi", mount: str = "/data") -> dict[str, Any]:
    """A vcjob volume whose claim the job controller creates (``spec.volumes[].volumeClaim``)."""
    return {"mountPath": mount, "volumeClaim": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                                                "resources": {"requests": {"storage": size}}}}


def simulate(objs: list[tuple[float, dict[str, Any]]], *, conf: str | None = None, until: float = math.inf,
             period: float = 1.0, default_duration: float | None = None) -> tuple[SimulationResult, Simulation]:
    """Submit ``(at, object)`` pairs and run the simulation to its end."""
    config = default_configuration() if conf is None else load_scheduler_conf(conf)
    sim = Simulation(config=config, registry=default_registry(), schedule_period=period,
                     default_duration=default_duration)
    sim.submit([Submission(at, i, "test", yaml.safe_load(yaml.safe_dump(o))) for i, (at, o) in enumerate(objs)])
    return sim.run(until=until), sim


def snapshot_at(path: Path, docs: list[dict[str, Any]], until: float, *, cpu: str = "8") -> Path:
    """Run ``docs`` (created at 0) on one ``cpu``-core node until ``until`` and write the store
    then as a ``pyvolcano snapshot`` file at ``path``."""
    from pyvolcano.runtime.snapshot import dump_documents, snapshot_documents

    _res, sim = simulate([(0, node("n1", cpu=cpu, memory="32Gi")), *((0, d) for d in docs)], until=until)
    path.write_text(dump_documents(snapshot_documents(sim.store.list, None)), encoding="utf-8")
    return path
