"""The ``hcclrank`` job plugin (``pkg/controllers/job/plugins/distributed-framework/hcclrank``).

Flags: ``--master`` (task name, default ``master``), ``--worker`` (default ``worker``).

Each new pod gets the annotation ``hccl/rankIndex`` (the rank Huawei's HCCL collective
library reads), decided in this order:

1. a pod that already has a non-empty ``hccl/rankIndex`` keeps it;
2. if a container declares an env var ``RANK`` (the first one found, containers in order),
   its literal ``value`` is the rank — an empty value (e.g. one given by ``valueFrom``) falls
   through to the next rule;
3. master pod ``i`` gets rank ``i``; worker pod ``i`` gets ``<master replicas> + i``, the
   index read from the pod's ``volcano.sh/task-index`` label (a pod without a numeric one
   fails pod creation, and the sync is retried);
4. pods of other tasks get nothing.

Plugins run in name order (``env``, ``hcclrank``, ``mpi``, ``pytorch`` …), so a ``RANK``
added by the ``pytorch`` plugin is not seen here; upstream's order is random.

The job hooks do nothing: the plugin creates no objects and, unlike the others, does not
record itself in ``status.controlledResources``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pyvolcano.api.names import TASK_INDEX_KEY
from pyvolcano.controllers._common import labels_of, name_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    PluginContext,
    PluginError,
    containers,
    replicas_of,
    task_key,
    tasks_of,
)

__all__ = ["ENV_RANK", "HCCL_RANK_KEY", "HCCLRankPlugin"]

HCCL_RANK_KEY = "hccl/rankIndex"
ENV_RANK = "RANK"
_ATOI = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


class HCCLRankPlugin:
    name = "hcclrank"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("master", "master")
        flags.string("worker", "worker")
        flags.parse(arguments)
        self.master = str(flags.values["master"])
        self.worker = str(flags.values["worker"])

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        md = pod.setdefault("metadata", {})
        annotations = md.get("annotations")
        if not isinstance(annotations, dict):
            annotations = md["annotations"] = {}
        if annotations.get(HCCL_RANK_KEY):
            return
        rank = _env_value(pod, ENV_RANK)
        if rank:
            annotations[HCCL_RANK_KEY] = rank
            return
        task_type = task_key(pod)
        if task_type not in (self.master, self.worker):
            return
        index = _task_index(pod)
        if task_type == self.master:
            annotations[HCCL_RANK_KEY] = str(index)
        else:
            masters = next((replicas_of(t) for t in tasks_of(job) if t.get("name") == self.master), 0)
            annotations[HCCL_RANK_KEY] = str(masters + index)

    def on_job_add(self, job: dict[str, Any]) -> None:
        return None

    def on_job_delete(self, job: dict[str, Any]) -> None:
        return None

    def on_job_update(self, job: dict[str, Any]) -> None:
        return None


def _env_value(pod: dict[str, Any], name: str) -> str:
    """Upstream ``getEnv``: the ``value`` of the first env var called ``name`` ("" if none)."""
    for c in containers(pod):
        for env in c.get("env") or []:
            if isinstance(env, dict) and env.get("name") == name:
                return str(env.get("value") or "")
    return ""


def _task_index(pod: dict[str, Any]) -> int:
    """Upstream ``GetTaskIndexOfPod``: the ``volcano.sh/task-index`` label as an integer."""
    text = labels_of(pod).get(TASK_INDEX_KEY)
    if text is None:
        raise PluginError(f"pod {name_of(pod)} doesn't have {TASK_INDEX_KEY} label")
    if not _ATOI.fullmatch(str(text)):
        raise PluginError(f"failed to parse task index for pod {name_of(pod)}: {text!r}")
    return int(str(text))
