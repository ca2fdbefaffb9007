"""The ``mpi`` job plugin (``pkg/controllers/job/plugins/distributed-framework/mpi``).

Flags: ``--master`` (default ``master``), ``--worker`` (default ``worker``), ``--port``
(default 22). Master pods get ``MPI_HOST``: the worker pods' domain names joined by
commas (one name when the worker template sets ``hostname``); every container and init
container of every pod opens the port as ``mpijob-port``. The admission layer adds the
``svc`` and ``ssh`` plugins that MPI needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyvolcano.controllers._common import name_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    MarkingPlugin,
    PluginContext,
    append_env,
    containers,
    make_pod_name,
    replicas_of,
    task_index_under_job,
    task_key,
    tasks_of,
    template_spec,
)

__all__ = ["MPI_HOST", "MPIPlugin"]

MPI_HOST = "MPI_HOST"


def generate_task_hosts(task: Mapping[str, Any], job_name: str) -> str:
    tmpl = template_spec(task)
    hosts: list[str] = []
    for i in range(replicas_of(task)):
        host = str(tmpl.get("hostname") or "") or make_pod_name(job_name, str(task.get("name", "")), i)
        sub = str(tmpl.get("subdomain") or "") or job_name
        hosts.append(f"{host}.{sub}")
        if tmpl.get("hostname"):
            break
    return ",".join(hosts)


class MPIPlugin(MarkingPlugin):
    name = "mpi"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("master", "master")
        flags.string("worker", "worker")
        flags.integer("port", 22)
        flags.parse(arguments)
        self.master = str(flags.values["master"])
        self.worker = str(flags.values["worker"])
        self.port = int(flags.values["port"])

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        env: dict[str, Any] | None = None
        if task_key(pod) == self.master:
            worker_index = task_index_under_job(self.worker, job)
            if worker_index == -1:
                return
            env = {"name": MPI_HOST, "value": generate_task_hosts(tasks_of(job)[worker_index], name_of(job))}
        for init in (True, False):
            for c in containers(pod, init=init):
                ports = c.get("ports") or []
                if not any(isinstance(p, dict) and p.get("containerPort") == self.port for p in ports):
                    c["ports"] = [*ports, {"name": "mpijob-port", "containerPort": self.port}]
                if env is not None:
                    append_env(c, dict(env))
