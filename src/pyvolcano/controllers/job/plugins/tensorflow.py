"""The ``tensorflow`` job plugin (``pkg/controllers/job/plugins/distributed-framework/tensorflow``).

Flags: ``--ps``, ``--worker``, ``--chief``, ``--evaluator`` (task names, defaulting to those
words) and ``--port`` (default 2222). Every container gets ``TF_CONFIG``, the compact JSON
``{"cluster":{"ps":[...],"worker":[...],"chief":[...],"evaluator":[...]},"task":{"type":..,"index":i}}``
with ``<domain>:<port>`` entries per replica (empty roles omitted). A job with a single task
of one replica gets nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyvolcano.controllers._common import name_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    MarkingPlugin,
    PluginContext,
    PluginError,
    append_env,
    containers,
    make_domain_name,
    pod_index_under_task,
    replicas_of,
    task_key,
    tasks_of,
)

__all__ = ["TF_CONFIG", "TensorFlowPlugin"]

TF_CONFIG = "TF_CONFIG"


class TensorFlowPlugin(MarkingPlugin):
    name = "tensorflow"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("ps", "ps")
        flags.string("worker", "worker")
        flags.string("chief", "chief")
        flags.string("evaluator", "evaluator")
        flags.integer("port", 2222)
        flags.parse(arguments)
        self.names = {r: str(flags.values[r]) for r in ("ps", "worker", "chief", "evaluator")}
        self.port = int(flags.values["port"])

    def cluster_spec(self, pod: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        try:
            index = int(pod_index_under_task(pod))
        except ValueError as e:
            raise PluginError(f"tensorflow: pod {name_of(pod)} has no numeric index") from e
        cluster: dict[str, list[str]] = {}
        for ts in tasks_of(job):
            # Go switch order: ps, worker, chief, evaluator (the first equal name wins).
            role = next((r for r, n in self.names.items() if n == ts.get("name")), None)
            if role is None:
                continue
            cluster[role] = [f"{make_domain_name(ts, job, i)}:{self.port}" for i in range(replicas_of(ts))]
        # Go's encoding/json writes struct fields in declaration order and omits empty roles.
        ordered = {r: cluster[r] for r in ("ps", "worker", "chief", "evaluator") if cluster.get(r)}
        return {"cluster": ordered, "task": {"type": self.task_type(task_key(pod)), "index": index}}

    def task_type(self, key: str) -> str:
        # Upstream getTaskType checks chief, worker, ps, evaluator in that order.
        for role in ("chief", "worker", "ps", "evaluator"):
            if self.names[role] == key:
                return role
        return key

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        tasks = tasks_of(job)
        if len(tasks) == 1 and replicas_of(tasks[0]) == 1:
            return
        raw = json.dumps(self.cluster_spec(pod, job), separators=(",", ":"))
        for c in containers(pod):
            append_env(c, {"name": TF_CONFIG, "value": raw})
