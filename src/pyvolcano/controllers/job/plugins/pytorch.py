"""The ``pytorch`` job plugin (``pkg/controllers/job/plugins/distributed-framework/pytorch``).

Flags: ``--master`` (task name, default ``master``), ``--worker`` (default ``worker``),
``--port`` (default 23456), ``--wait-master-enabled`` (add a ``wait-for-master`` init
container to workers), ``--wait-master-timeout`` (300 s), ``--wait-master-image``.

Every container of the master and worker pods gets ``MASTER_ADDR`` (the domain name of
master pod 0), ``MASTER_PORT``, ``WORLD_SIZE`` (master + worker replicas) and ``RANK``
(0 for the master, index + 1 for worker ``i``; other tasks get no ``RANK``), and the port is
opened as ``pytorchjob-port``. Nothing happens when the job has no master task.
"""

from __future__ import annotations

import logging
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
    task_index_under_job,
    task_key,
    tasks_of,
)

__all__ = ["PyTorchPlugin"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 23456
DEFAULT_WAIT_MASTER_IMAGE = "busybox:1.36.1"
WAIT_FOR_MASTER = "wait-for-master"


class PyTorchPlugin(MarkingPlugin):
    name = "pytorch"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("master", "master")
        flags.string("worker", "worker")
        flags.integer("port", DEFAULT_PORT)
        flags.boolean("wait-master-enabled", False)
        flags.integer("wait-master-timeout", 300)
        flags.string("wait-master-image", DEFAULT_WAIT_MASTER_IMAGE)
        flags.parse(arguments)
        self.master = str(flags.values["master"])
        self.worker = str(flags.values["worker"])
        self.port = int(flags.values["port"])
        self.wait_master_enabled = bool(flags.values["wait-master-enabled"])
        self.wait_master_timeout = int(flags.values["wait-master-timeout"])
        self.wait_master_image = str(flags.values["wait-master-image"])

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        task_type = task_key(pod)
        master_index = task_index_under_job(self.master, job)
        if master_index == -1:
            logger.error("job %s doesn't have task %s", name_of(job), self.master)
            return
        master_addr = make_domain_name(tasks_of(job)[master_index], job, 0)
        master_env = [{"name": "MASTER_ADDR", "value": master_addr}, {"name": "MASTER_PORT", "value": str(self.port)}]
        worker_rank = 0
        if task_type == self.worker:
            try:
                worker_rank = int(pod_index_under_task(pod)) + 1
            except ValueError as e:
                raise PluginError(f"pytorch: pod {name_of(pod)} has no numeric index") from e
            self._add_wait_for_master(pod, master_addr)
        world = sum(replicas_of(t) for t in tasks_of(job) if t.get("name") in (self.master, self.worker))
        for c in containers(pod):
            ports = c.get("ports") or []
            if not any(isinstance(p, dict) and p.get("containerPort") == self.port for p in ports):
                c["ports"] = [*ports, {"name": "pytorchjob-port", "containerPort": self.port}]
            append_env(c, *master_env, {"name": "WORLD_SIZE", "value": str(world)})
            if task_type == self.worker:
                append_env(c, {"name": "RANK", "value": str(worker_rank)})
            elif task_type == self.master:
                append_env(c, {"name": "RANK", "value": "0"})

    def _wait_script(self, master_addr: str) -> str:
        addr, port, timeout = master_addr, self.port, self.wait_master_timeout
        return (
            f'echo "Waiting for master node {addr}:{port} to be ready..."\n'
            f"TIMEOUT={timeout}\n"
            "ELAPSED=0\n"
            f"until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do\n"
            "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
            "    exit 1\n"
            "  fi\n"
            '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
            "  sleep 2\n"
            "  ELAPSED=$((ELAPSED + 2))\n"
            "done\n"
            'echo "Master node is ready!"'
        )

    def _add_wait_for_master(self, pod: dict[str, Any], master_addr: str) -> None:
        if not self.wait_master_enabled:
            return
        if any(c.get("name") == WAIT_FOR_MASTER for c in containers(pod, init=True)):
            return
        sp = pod.setdefault("spec", {})
        init = {
            "name": WAIT_FOR_MASTER,
            "image": self.wait_master_image,
            "command": ["sh", "-c", self._wait_script(master_addr)],
        }
        sp["initContainers"] = [*(sp.get("initContainers") or []), init]
