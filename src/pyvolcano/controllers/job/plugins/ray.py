"""The ``ray`` job plugin (``pkg/controllers/job/plugins/distributed-framework/ray``).

Flags: ``--head`` (task name, default ``head``), ``--headContainer`` (default ``head``),
``--worker`` (default ``worker``), ``--workerContainer`` (default ``worker``), ``--port``
(GCS, default 6379), ``--dashboardPort`` (8265), ``--clientPort`` (10001).

* On job initiation it creates the Service ``<job>-head-svc``, owned by the job, selecting
  the head task's pods (``volcano.sh/job-name``, ``volcano.sh/job-namespace``,
  ``volcano.sh/task-spec: <head>``) with the TCP ports ``gcs``, ``dashboard`` and
  ``client-server`` targeting the container ports of those names; it records itself in
  ``status.controlledResources`` and deletes the Service when the job is killed.
* In the head task's pods, the container named ``--headContainer`` opens the three ports
  (those it lacks) and runs ``ray start --head --block ...``; in the worker task's pods the
  container named ``--workerContainer`` runs ``ray start --block --address=<head>:<port>``,
  where ``<head>`` is the domain name of head pod 0 (its template's ``hostname`` and
  ``subdomain``, else ``<job>-<head>-0.<job>``). Other tasks and containers are untouched.
* A job without the head task fails pod creation (the sync is retried), as upstream.

Admission adds the ``svc`` plugin to jobs using ``ray`` (the head's domain name needs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, JOB_NAME_KEY, JOB_NAMESPACE_KEY, TASK_SPEC_KEY
from pyvolcano.controllers._common import controller_ref, name_of, namespace_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    PluginContext,
    PluginError,
    containers,
    controlled_resources,
    delete_quietly,
    make_domain_name,
    task_index_under_job,
    task_key,
    tasks_of,
)
from pyvolcano.store.base import NotFound

__all__ = ["CLIENT_SERVER_PORT_NAME", "DASHBOARD_PORT_NAME", "GCS_PORT_NAME", "RayPlugin", "head_service_name"]

GCS_PORT_NAME = "gcs"
DASHBOARD_PORT_NAME = "dashboard"
CLIENT_SERVER_PORT_NAME = "client-server"


def head_service_name(job: dict[str, Any]) -> str:
    return f"{name_of(job)}-head-svc"


class RayPlugin:
    name = "ray"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("head", "head")
        flags.string("headContainer", "head")
        flags.string("worker", "worker")
        flags.string("workerContainer", "worker")
        flags.integer("port", 6379)
        flags.integer("dashboardPort", 8265)
        flags.integer("clientPort", 10001)
        flags.parse(arguments)
        self.head = str(flags.values["head"])
        self.head_container = str(flags.values["headContainer"])
        self.worker = str(flags.values["worker"])
        self.worker_container = str(flags.values["workerContainer"])
        self.port = int(flags.values["port"])
        self.dashboard_port = int(flags.values["dashboardPort"])
        self.client_port = int(flags.values["clientPort"])

    def _ports(self) -> list[tuple[str, int]]:
        return [(GCS_PORT_NAME, self.port), (DASHBOARD_PORT_NAME, self.dashboard_port),
                (CLIENT_SERVER_PORT_NAME, self.client_port)]

    # ------------------------------------------------------------------ hooks
    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        head_index = task_index_under_job(self.head, job)
        if head_index == -1:
            raise PluginError(f"job {name_of(job)} doesn't have head task {self.head}")
        task_type = task_key(pod)
        for c in containers(pod):
            if task_type == self.head and c.get("name") == self.head_container:
                self._open_head_ports(c)
                c["command"] = ["sh", "-c", (
                    f"ray start --head --block --dashboard-host=0.0.0.0 --port={self.port} "
                    f"--dashboard-port={self.dashboard_port} --ray-client-server-port={self.client_port}"
                )]
            if task_type == self.worker and c.get("name") == self.worker_container:
                head_addr = make_domain_name(tasks_of(job)[head_index], job, 0)
                c["command"] = ["sh", "-c", f"ray start --block --address={head_addr}:{self.port}"]

    def on_job_add(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") == self.name:
            return
        self._create_service_if_not_exist(job)
        cr[f"plugin-{self.name}"] = self.name

    def on_job_delete(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") != self.name:
            return
        delete_quietly(self.ctx.store, "Service", namespace_of(job), head_service_name(job))
        del cr[f"plugin-{self.name}"]

    def on_job_update(self, job: dict[str, Any]) -> None:
        return None

    # ------------------------------------------------------------------ helpers
    def _open_head_ports(self, container: dict[str, Any]) -> None:
        ports = [p for p in container.get("ports") or [] if isinstance(p, dict)]
        have = {p.get("containerPort") for p in ports}
        added = [{"name": name, "containerPort": port} for name, port in self._ports() if port not in have]
        if added:
            container["ports"] = [*(container.get("ports") or []), *added]

    def _create_service_if_not_exist(self, job: dict[str, Any]) -> None:
        store, name = self.ctx.store, head_service_name(job)
        try:
            store.get("Service", namespace_of(job), name)
            return
        except NotFound:
            pass
        store.create({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": namespace_of(job),
                "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
            },
            "spec": {
                "selector": {JOB_NAME_KEY: name_of(job), JOB_NAMESPACE_KEY: namespace_of(job),
                             TASK_SPEC_KEY: self.head},
                "ports": [{"name": port_name, "port": port, "targetPort": port_name, "protocol": "TCP"}
                          for port_name, port in self._ports()],
            },
        })
