"""The ``env`` job plugin (``pkg/controllers/job/plugins/env``).

Every container and init container of a job's pods gets ``VK_TASK_INDEX`` and
``VC_TASK_INDEX`` set to the pod's index within its task (the last ``-`` part of its name).
It creates no objects; it only records itself in ``status.controlledResources``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyvolcano.controllers.job.plugins.base import (
    MarkingPlugin,
    PluginContext,
    append_env,
    containers,
    pod_index_under_task,
)

__all__ = ["TASK_INDEX", "TASK_VK_INDEX", "EnvPlugin"]

TASK_VK_INDEX = "VK_TASK_INDEX"
TASK_INDEX = "VC_TASK_INDEX"


class EnvPlugin(MarkingPlugin):
    name = "env"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        self.arguments = list(arguments)

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        index = pod_index_under_task(pod)
        for init in (False, True):
            for c in containers(pod, init=init):
                append_env(c, {"name": TASK_VK_INDEX, "value": index}, {"name": TASK_INDEX, "value": index})
