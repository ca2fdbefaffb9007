"""The PodGroup of a vcjob: construction, ``minResources`` and updates.

Mirrors ``createOrUpdatePodGroup``, ``shouldUpdateExistingPodGroup``, ``calcPGMinResources``
and ``TasksPriority`` in ``pkg/controllers/job``. The PodGroup is ``<job>-<job uid>``, owned by
the job, with the job's annotations and labels, ``minMember = spec.minAvailable``,
``minTaskMember[task]`` (task ``minAvailable``, else ``minPartitions × partitionSize``, else
``replicas``), the job's queue, priority class and network topology, one ``subGroupPolicy``
per partitioned task, and ``minResources``:

Tasks are ordered by the value of their template's PriorityClass, highest first (a stable
sort; upstream's ``sort.Sort`` is stable for the small task counts jobs have). If
``minAvailable`` is below the sum of the tasks' ``minAvailable``, the requests of the first
``minAvailable`` pods in that order are summed, taking whole tasks' replicas. Otherwise each
task contributes its ``minAvailable`` pods (capped by what is left to reach the job's
``minAvailable``), and the remainder is filled from the tasks' other replicas in the same
order. Pod requests are the resource-quota usage (see :mod:`pyvolcano.controllers._resources`).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, PARTITION_ID_KEY, TASK_SPEC_KEY
from pyvolcano.controllers._common import (
    annotations_of,
    controller_ref,
    labels_of,
    meta,
    name_of,
    namespace_of,
    peek,
    spec,
)
from pyvolcano.controllers._resources import (
    ResourceList,
    add_lists,
    format_list,
    lists_equal,
    pod_quota_usage,
    scale_list,
)
from pyvolcano.controllers.job.pods import pod_group_name
from pyvolcano.store.base import NotFound, Store

__all__ = ["MinResourcesMemo", "build_pod_group", "calc_pg_min_resources", "min_task_member",
           "task_priority_values", "update_pod_group_spec"]


def min_task_member(task: Mapping[str, Any]) -> int:
    """``getMinTaskMember``."""
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    pp = task.get("partitionPolicy")
    if isinstance(pp, dict) and int(pp.get("minPartitions") or 0) and int(pp.get("partitionSize") or 0):
        return int(pp["minPartitions"]) * int(pp["partitionSize"])
    return int(task.get("replicas") or 0)


def _task_requests(task: Mapping[str, Any], count: int) -> ResourceList:
    tmpl = task.get("template") if isinstance(task.get("template"), dict) else {}
    pod = {"spec": (tmpl or {}).get("spec") or {}}
    return scale_list(pod_quota_usage(pod), count)


def _priority_value(store: Store, name: str) -> int:
    if not name:
        return 0
    try:
        pc = peek(store, "PriorityClass", None, name)
    except NotFound:
        return 0
    try:
        return int(pc.get("value") or 0)
    except (TypeError, ValueError):
        return 0


class MinResourcesMemo:
    """``calcPGMinResources`` results per Job spec generation.

    A Job is synced many times over its life with the same spec; the result depends only on
    the spec (its ``metadata.generation`` changes with it) and on the tasks' priority values.
    """

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self._entries: dict[tuple[Any, ...], dict[str, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> dict[str, str] | None:
        hit = self._entries.get(key)
        return dict(hit) if hit is not None else None

    def put(self, key: tuple[Any, ...], value: dict[str, str]) -> None:
        with self._lock:  # jobs may be synced concurrently on a remote store
            if len(self._entries) >= self.limit:
                self._entries.pop(next(iter(self._entries)), None)
            self._entries[key] = dict(value)


def task_priority_values(store: Store, job: Mapping[str, Any]) -> tuple[int, ...]:
    """The priority value of each task's ``priorityClassName`` (inputs of minResources)."""
    out = []
    for t in spec(job).get("tasks") or []:
        if not isinstance(t, dict):
            continue
        tmpl_spec = ((t.get("template") or {}).get("spec") or {}) if isinstance(t.get("template"), dict) else {}
        out.append(_priority_value(store, str(tmpl_spec.get("priorityClassName") or "")))
    return tuple(out)


def calc_pg_min_resources(store: Store, job: Mapping[str, Any],
                          memo: MinResourcesMemo | None = None) -> dict[str, str]:
    """``calcPGMinResources``: the PodGroup's ``minResources`` as a manifest ResourceList."""
    tasks = [t for t in spec(job).get("tasks") or [] if isinstance(t, dict)]
    prioritised: list[tuple[int, dict[str, Any]]] = []
    total_min = 0
    for t in tasks:
        tmpl_spec = ((t.get("template") or {}).get("spec") or {}) if isinstance(t.get("template"), dict) else {}
        prioritised.append((_priority_value(store, str(tmpl_spec.get("priorityClassName") or "")), t))
        total_min += int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas") or 0)
    key: tuple[Any, ...] | None = None
    md = meta(job)
    if memo is not None and md.get("uid") and md.get("generation"):
        key = (md["uid"], md["generation"], tuple(p for p, _ in prioritised))
        hit = memo.get(key)
        if hit is not None:
            return hit
    result = _calc(prioritised, total_min, job)
    if key is not None and memo is not None:
        memo.put(key, result)
    return result


def _calc(prioritised: list[tuple[int, dict[str, Any]]], total_min: int, job: Mapping[str, Any]) -> dict[str, str]:
    ordered = [t for _, t in sorted(prioritised, key=lambda pt: -pt[0])]
    job_min = int(spec(job).get("minAvailable") or 0)
    if job_min < total_min:
        return format_list(_first_count(ordered, job_min))
    return format_list(_min_resources(ordered, job_min))


def _first_count(tasks: list[dict[str, Any]], count: int) -> ResourceList:
    total: ResourceList = {}
    for t in tasks:
        replicas = int(t.get("replicas") or 0)
        if count <= replicas:
            total = add_lists(total, _task_requests(t, count))
            break
        total = add_lists(total, _task_requests(t, replicas))
        count -= replicas
    return total


def _min_resources(tasks: list[dict[str, Any]], job_min: int) -> ResourceList:
    total: ResourceList = {}
    pods = 0
    for t in tasks:
        if t.get("minAvailable") is None:
            continue
        valid = min(int(t["minAvailable"]), job_min - pods)
        total = add_lists(total, _task_requests(t, valid))
        pods += valid
        if pods >= job_min:
            break
    if pods >= job_min:
        return total
    left = job_min - pods
    for t in tasks:
        replicas = int(t.get("replicas") or 0)
        rest = replicas
        if t.get("minAvailable") is not None:
            if int(t["minAvailable"]) == replicas:
                continue
            rest = replicas - int(t["minAvailable"])
        if left >= rest:
            total = add_lists(total, _task_requests(t, rest))
            left -= rest
        else:
            total = add_lists(total, _task_requests(t, left))
            left = 0
        if left <= 0:
            break
    return total


def _network_topology(nt: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if nt.get("mode"):
        out["mode"] = nt["mode"]
    if nt.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = nt["highestTierAllowed"]
    elif nt.get("highestTierName"):
        out["highestTierName"] = nt["highestTierName"]
    return out


def _sub_group_policy(task: Mapping[str, Any]) -> dict[str, Any]:
    pp = task.get("partitionPolicy") or {}
    policy: dict[str, Any] = {
        "name": task.get("name"),
        "subGroupSize": int(pp.get("partitionSize") or 0),
        "minSubGroups": int(pp.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {TASK_SPEC_KEY: task.get("name")}},
        "matchLabelKeys": [PARTITION_ID_KEY],
    }
    nt = pp.get("networkTopology")
    if isinstance(nt, dict):
        sub: dict[str, Any] = {}
        if nt.get("mode"):
            sub["mode"] = nt["mode"]
        if nt.get("highestTierAllowed") is not None:
            sub["highestTierAllowed"] = nt["highestTierAllowed"]
        if nt.get("highestTierName"):
            sub["highestTierName"] = nt["highestTierName"]
        policy["networkTopology"] = sub
    return {k: v for k, v in policy.items() if v not in (None, "")}


def _sub_group_policies(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        _sub_group_policy(t)
        for t in spec(job).get("tasks") or []
        if isinstance(t, dict) and isinstance(t.get("partitionPolicy"), dict)
    ]


def build_pod_group(store: Store, job: Mapping[str, Any], memo: MinResourcesMemo | None = None) -> dict[str, Any]:
    """The PodGroup ``createOrUpdatePodGroup`` creates for a job that has none (``memo``: as
    for :func:`calc_pg_min_resources`; the job's next sync finds its minResources there)."""
    sp = spec(job)
    md: dict[str, Any] = {
        "namespace": namespace_of(job),
        "name": pod_group_name(job),
        "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
    }
    if annotations_of(job):
        md["annotations"] = copy.deepcopy(annotations_of(job))
    if labels_of(job):
        md["labels"] = copy.deepcopy(labels_of(job))
    pg_spec: dict[str, Any] = {
        "minMember": int(sp.get("minAvailable") or 0),
        "minTaskMember": {
            str(t.get("name", "")): min_task_member(t) for t in sp.get("tasks") or [] if isinstance(t, dict)
        },
        "queue": str(sp.get("queue") or ""),
        "minResources": calc_pg_min_resources(store, job, memo),
    }
    if sp.get("priorityClassName"):
        pg_spec["priorityClassName"] = sp["priorityClassName"]
    if isinstance(sp.get("networkTopology"), dict):
        pg_spec["networkTopology"] = _network_topology(sp["networkTopology"])
    sgp = _sub_group_policies(job)
    if sgp:
        pg_spec["subGroupPolicy"] = sgp
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": md, "spec": pg_spec}


def update_pod_group_spec(store: Store, pg: dict[str, Any], job: Mapping[str, Any],
                          memo: MinResourcesMemo | None = None) -> bool:
    """``shouldUpdateExistingPodGroup``: bring ``pg.spec`` in line with the job; True if changed."""
    sp = spec(job)
    pg_spec = pg.setdefault("spec", {})
    changed = False
    pc = str(sp.get("priorityClassName") or "")
    if str(pg_spec.get("priorityClassName") or "") != pc:
        if pc:
            pg_spec["priorityClassName"] = pc
        else:
            pg_spec.pop("priorityClassName", None)
        changed = True
    min_resources = calc_pg_min_resources(store, job, memo)
    min_member = int(sp.get("minAvailable") or 0)
    if int(pg_spec.get("minMember") or 0) != min_member or not lists_equal(pg_spec.get("minResources"), min_resources):
        pg_spec["minMember"] = min_member
        pg_spec["minResources"] = min_resources
        changed = True
    mtm = pg_spec.get("minTaskMember")
    if not isinstance(mtm, dict):
        mtm = {}
        pg_spec["minTaskMember"] = mtm
        changed = True
    for t in sp.get("tasks") or []:
        if not isinstance(t, dict):
            continue
        cnt = min_task_member(t)
        if mtm.get(str(t.get("name", ""))) != cnt:
            mtm[str(t.get("name", ""))] = cnt
            changed = True
    # updatePgSubGroupPolicy
    old = {p.get("name"): p for p in pg_spec.get("subGroupPolicy") or [] if isinstance(p, dict)}
    new = _sub_group_policies(job)
    sgp_changed = False
    for t in sp.get("tasks") or []:
        if not isinstance(t, dict):
            continue
        if not isinstance(t.get("partitionPolicy"), dict):
            if t.get("name") in old:
                sgp_changed = True
            continue
        if _sub_group_policy(t) != old.get(t.get("name")):
            sgp_changed = True
    if sgp_changed:
        if new:
            pg_spec["subGroupPolicy"] = new
        else:
            pg_spec.pop("subGroupPolicy", None)
        changed = True
    return changed


def related_pod_group(store: Store, job: Mapping[str, Any], *, read_only: bool = False) -> dict[str, Any] | None:
    """``getPodGroupByJob``: ``<job>-<uid>``, falling back to a PodGroup named like the job.

    ``read_only=True`` may return the store's own object (no copy): the caller must not mutate it.
    """
    for name in (pod_group_name(job), name_of(job)):
        try:
            if read_only:
                return peek(store, "PodGroup", namespace_of(job), name)
            return store.get("PodGroup", namespace_of(job), name)
        except NotFound:
            continue
    return None
