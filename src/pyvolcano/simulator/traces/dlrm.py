"""Alibaba GPU trace v2025, GPU-disaggregated DLRM serving (Prism, NSDI '25):
``disaggregated_DLRM_trace.csv``.

Columns: ``instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,
rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,
max_instance_per_node,creation_time,scheduled_time,deletion_time``.

Mapping (also in docs/traces.md):

* **one instance = one Job** of one pod (``minAvailable`` 1), named ``dlrm-instance-N``, with
  labels ``pyvolcano.io/app`` (``app_name``) and ``pyvolcano.io/dlrm-role`` (``cn``/``hn``).
  Instances of an app are created at different times, so an app is not one gang.
* **submit** = ``creation_time``; an empty one (the instance existed at the trace start) is 0.
  **duration** = ``deletion_time − creation_time``; an empty ``deletion_time`` means the
  instance outlives the trace: no ``pyvolcano.io/duration``, the pod runs until the end of
  the simulation. With a window ``(start, end)``, every instance alive in it is kept (created
  before ``end``, deleted after ``start`` or never): those created earlier are submitted at
  ``start`` with their remaining lifetime, like the trace's own t = 0 instances; times are
  then shifted so the first kept instance is at 0.
* **requests** (= limits; the trace's requests and limits are equal except disk, where the
  request is used): ``cpu_request`` cores, ``memory_request`` GiB, ``gpu_request`` →
  ``nvidia.com/gpu``, ``rdma_request`` → extended resource :data:`RDMA` (percent of one
  RDMA NIC's bandwidth), ``disk_request`` GiB → ``ephemeral-storage``.
* **priority**: PriorityClass ``dlrm-serving`` (value 1,000,000) on every Job, and
  ``volcano.sh/preemptable: "false"`` on the Job and its pods: these latency-sensitive
  services are never preemption victims. Exit code 0.
* ``max_instance_per_node`` is kept as the pod annotation
  ``pyvolcano.io/max-instance-per-node`` but **not enforced** (Kubernetes has no per-node
  count limit; anti-affinity would only express a limit of 1).
* **queue**: one Queue ``dlrm`` (weight 1).
* **nodes**: the trace publishes none. By default a cluster is sized from the loaded
  instances' peak concurrent demand, per role, with :data:`HEADROOM` (20 %) spare:
  ``hn`` nodes of 8 GPUs, 128 cores, 1 TiB, RDMA 200 (two NICs: eight 25 % instances, the
  common HN shape, fill both) and ``cn`` nodes of 192 cores (the largest CN request), 1.5 TiB,
  RDMA 100; both 4 TiB of ephemeral storage. Pods then get a ``nodeSelector`` on
  ``pyvolcano.io/dlrm-role`` so CN instances stay on CPU nodes and HN instances on GPU nodes,
  as in the disaggregated design. With ``--nodes`` no selector is added.
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

from pyvolcano.api.names import PREEMPTABLE_KEY
from pyvolcano.simulator.traces._common import (
    NVIDIA_GPU,
    Cells,
    Trace,
    TraceError,
    column_index,
    cpu_qty,
    dns_label,
    fmt_int,
    job_manifest,
    mem_qty_mib,
    node_manifest,
    open_rows,
    pod_template,
    priority_class_manifest,
    queue_manifest,
    selection_note,
)
from pyvolcano.simulator.traces.nodes import load_nodes

__all__ = ["COLUMNS", "FOLDER", "RDMA", "load", "size_cluster"]

FOLDER: Final = "alibaba-gpu-v2025-dlrm"
TRACE_FILE: Final = "disaggregated_DLRM_trace.csv"
COLUMNS: Final = ("instance_sn", "role", "app_name", "cpu_request", "gpu_request", "memory_request",
                  "creation_time", "deletion_time")
OPTIONAL: Final = ("rdma_request", "disk_request", "max_instance_per_node", "scheduled_time")
RDMA: Final = "pyvolcano.io/rdma"
ROLE_LABEL: Final = "pyvolcano.io/dlrm-role"
QUEUE: Final = "dlrm"
PRIORITY_CLASS: Final = "dlrm-serving"
PRIORITY: Final = 1_000_000
HEADROOM: Final = 1.2
# per-node capacity of the generated cluster: cpu cores, memory GiB, GPUs, RDMA %, disk GiB
NODE_SHAPES: Final = {"hn": (128, 1024, 8, 200, 4096), "cn": (192, 1536, 0, 100, 4096)}


class Instance(NamedTuple):
    at: float
    line: int
    name: str
    role: str
    app: str
    cpu: float
    mem: float
    gpu: int
    rdma: int
    disk: float
    max_per_node: int
    duration: float | None


def _row(c: Cells) -> tuple[Instance, float | None, float | None]:
    role = c.str_("role")
    if role not in ("CN", "HN"):
        raise c.fail("role", role, "CN or HN")
    created = c.float_("creation_time", allow_empty=True)
    deleted = c.float_("deletion_time", allow_empty=True)
    if created is not None and deleted is not None and deleted < created:
        raise c.fail("deletion_time", c.raw("deletion_time"), f"a time ≥ creation_time ({created:g})")
    inst = Instance(
        at=created or 0.0, line=c.line, name=c.str_("instance_sn"), role=role.lower(), app=c.str_("app_name"),
        cpu=c.num("cpu_request"), mem=c.num("memory_request"), gpu=c.int_("gpu_request"),
        rdma=c.int_("rdma_request") if c.has("rdma_request") else 0,
        disk=c.num("disk_request") if c.has("disk_request") else 0.0,
        max_per_node=c.int_("max_instance_per_node", minimum=-1) if c.has("max_instance_per_node") else -1,
        duration=None)
    return inst, created, deleted


def _requests(i: Instance) -> dict[str, str]:
    req = {"cpu": cpu_qty(i.cpu * 1000), "memory": mem_qty_mib(i.mem * 1024)}
    if i.gpu:
        req[NVIDIA_GPU] = str(i.gpu)
    if i.rdma:
        req[RDMA] = str(i.rdma)
    if i.disk:
        req["ephemeral-storage"] = mem_qty_mib(i.disk * 1024)
    return req


def size_cluster(instances: list[Instance]) -> tuple[list[dict[str, Any]], dict[str, tuple[int, str]]]:
    """Nodes for the instances' peak concurrent demand per role (see the module docstring).
    Returns the nodes and, per role, (node count, the resource that set it)."""
    out: list[dict[str, Any]] = []
    sizing: dict[str, tuple[int, str]] = {}
    for role, shape_t in NODE_SHAPES.items():
        shape: tuple[float, ...] = shape_t
        events: list[tuple[float, int, tuple[float, ...]]] = []
        for i in instances:
            if i.role != role:
                continue
            v: tuple[float, ...] = (i.cpu, i.mem, float(i.gpu), float(i.rdma), i.disk)
            events.append((i.at, 1, v))
            if i.duration is not None:
                events.append((i.at + i.duration, 0, v))
        if not events:
            continue
        events.sort(key=lambda e: (e[0], e[1]))
        cur = [0.0] * 5
        peak = [0.0] * 5
        for _, up, amounts in events:
            sign = 1.0 if up else -1.0
            for k in range(5):
                cur[k] += sign * amounts[k]
                peak[k] = max(peak[k], cur[k])
        needs = [(peak[k] / shape[k] if shape[k] else 0.0, name)
                 for k, name in enumerate(("cpu", "memory", NVIDIA_GPU, RDMA, "ephemeral-storage"))]
        need, what = max(needs)
        n = max(1, math.ceil(need * HEADROOM - 1e-9))
        sizing[role] = (n, what)
        cpu, mem, gpus, rdma, disk = NODE_SHAPES[role]
        width = len(str(n - 1))
        for k in range(n):
            out.append(node_manifest(f"dlrm-{role}-{k:0{width}d}", cpu=str(cpu), memory=f"{mem}Gi", gpus=gpus,
                                     labels={ROLE_LABEL: role},
                                     extra={RDMA: str(rdma), "ephemeral-storage": f"{disk}Gi"}))
    return out, sizing


def load(path: Any, *, nodes: Any = None, window: tuple[float, float] | None = None, limit: int | None = None,
         seed: int = 0) -> Trace:
    rows: list[tuple[Instance, float | None, float | None]] = []
    with open_rows(path) as (fname, cols, it):
        idx = column_index(fname, cols, COLUMNS, OPTIONAL, what="DLRM")
        for line, cells in it:
            rows.append(_row(Cells(fname, line, cells, idx)))
    if not rows:
        raise TraceError("no instances", file=fname, expected="at least one data row")
    seen: dict[str, int] = {}
    for inst, _, _ in rows:
        if inst.name in seen:
            raise TraceError(f"instance {inst.name!r} repeats line {seen[inst.name]}", file=fname, line=inst.line,
                             column="instance_sn", expected="unique instance names")
        seen[inst.name] = inst.line
    start, end = (0.0, math.inf) if window is None else window
    if window is not None and not (math.isfinite(start) and end > start):
        raise TraceError(f"window {window!r} is empty", expected="(start, end) seconds with end > start")
    kept: list[Instance] = []
    for inst, created, deleted in rows:
        c = created or 0.0
        if c >= end or (deleted is not None and deleted <= start and window is not None):
            continue
        at = max(c, start)
        kept.append(inst._replace(at=at, duration=None if deleted is None else deleted - at))
    kept.sort(key=lambda i: (i.at, i.line))
    if limit is not None:
        if limit < 0:
            raise TraceError(f"limit {limit} is negative", expected="a non-negative job count")
        kept = kept[:limit]
    shift = kept[0].at if kept and window is not None else 0.0
    kept = [i._replace(at=i.at - shift) for i in kept]

    sizing: dict[str, tuple[int, str]] = {}
    if nodes is not None:
        node_list = load_nodes(nodes)
    else:
        node_list, sizing = size_cluster(kept)
    jobs = []
    for i in kept:
        labels = {"pyvolcano.io/app": i.app, ROLE_LABEL: i.role}
        ann = {PREEMPTABLE_KEY: "false"}
        if i.max_per_node > 0:
            ann["pyvolcano.io/max-instance-per-node"] = str(i.max_per_node)
        tpl = pod_template(_requests(i), duration=i.duration, annotations=ann, labels=labels,
                           node_selector={ROLE_LABEL: i.role} if sizing else None)
        jobs.append(job_manifest("dlrm-" + dns_label(i.name), trace="dlrm", submit=i.at, queue=QUEUE,
                                 tasks=[("instance", 1, tpl)], priority_class=PRIORITY_CLASS, labels=labels,
                                 annotations={PREEMPTABLE_KEY: "false"}, line=i.line))
    forever = sum(1 for i in kept if i.duration is None)
    at_zero = sum(1 for i in kept if i.at == 0)
    gpus = sum(int(n["status"]["capacity"].get(NVIDIA_GPU, 0)) for n in node_list)
    notes = [
        selection_note("DLRM", len(kept), len(rows), "instances, each a one-pod Job", window, limit, shift)
        + (" With a window, instances alive at its start are kept and submitted at its start." if window else "")
        + f" {fmt_int(at_zero)} are submitted at 0 (already running), {fmt_int(forever)} are never deleted "
          "(no duration: they run until the simulation ends).",
        f"DLRM: PriorityClass {PRIORITY_CLASS} ({PRIORITY:,}) and volcano.sh/preemptable=false on every instance; "
        f"RDMA share as extended resource {RDMA} (percent of one NIC); disk as ephemeral-storage.",
        "DLRM: max_instance_per_node is recorded (annotation) but not enforced.",
    ]
    if sizing:
        notes.append("DLRM: no node list is published; generated " + ", ".join(
            f"{n} {r} nodes (set by peak {w})" for r, (n, w) in sizing.items())
            + f" = peak concurrent demand × {HEADROOM:g}; shapes hn 8 GPU/128 cores/1Ti/RDMA 200, "
              "cn 192 cores/1.5Ti/RDMA 100; pods select their role's nodes.")
    notes.append(f"DLRM: {fmt_int(len(node_list))} nodes with {fmt_int(gpus)} GPUs.")
    classes = [priority_class_manifest(PRIORITY_CLASS, PRIORITY, "DLRM inference serving (latency-sensitive)")]
    return Trace(name="dlrm", format="dlrm", nodes=node_list, queues=[queue_manifest(QUEUE, 1)],
                 priority_classes=classes, jobs=jobs, notes=notes)
