"""Alibaba GPU cluster trace v2023 "openb" (FGD, ATC '23): ``openb_pod_list_*.csv``.

Columns: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``; the ``multigpu*`` variants have only the first five.

Mapping (also in docs/traces.md):

* **one pod = one Job** of one task with one replica, ``minAvailable`` 1, named after the pod
  (``openb-pod-NNNN``); the trace has no job, gang or tenant structure.
* **submit** = ``creation_time`` (seconds; the first pod is at 0). Jobs are sorted by
  (creation_time, line).
* **duration** = ``deletion_time − creation_time``. For pods still ``Running`` at the end of
  the observation, ``deletion_time`` is the end of the observation (12,902,960 s for 34 of
  them), so they run until the trace ends; no attempt is made to extend them.
  ``Pending`` pods (897 in the default list) never ran: their ``deletion − creation`` is the
  time they waited; they are kept, as real demand, and run for that time if placed (the FGD
  paper also replays every row). A lifetime of 0 gives ``0s``.
* **exit code**: ``pod_phase`` ``Failed`` → ``pyvolcano.io/exit-code: "1"`` (the Job then
  fails); every other phase exits 0.
* **CPU / memory** = ``cpu_milli`` (m) and ``memory_mib`` (Mi), requests = limits.
* **GPU**: ``num_gpu = 0`` → none; ``gpu_milli = 1000`` → ``nvidia.com/gpu: num_gpu`` whole
  GPUs; ``num_gpu = 1`` and ``gpu_milli < 1000`` → annotation ``pyvolcano.io/gpu-milli`` (a
  share of one GPU, no ``nvidia.com/gpu`` request). ``gpu_spec`` (``V100M16|V100M32``, repeats
  dropped) → annotation ``pyvolcano.io/gpu-models``, matched against the node label
  ``nvidia.com/gpu.product`` that the node list's ``model`` column sets.
* **priority** from ``qos``: PriorityClasses ``openb-ls`` and ``openb-guaranteed`` (1000),
  ``openb-burstable`` (500), ``openb-be`` (100); the pod also gets label ``pyvolcano.io/qos``.
* **queue**: one Queue ``openb`` (weight 1).
* **nodes**: ``openb_node_list_gpu_node.csv`` (shipped): 1,213 nodes, 6,212 GPUs, the cluster
  the paper simulates. CPU-only pods can only use those nodes' CPUs; pass
  ``openb_node_list_all_node.csv`` with ``--nodes`` to add the 310 CPU nodes.
* The 5-column ``multigpu*`` files have no timestamps: every pod is submitted at 0 and runs
  until the end (the paper's static placement experiment).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from pyvolcano.simulator.traces._common import (
    GPU_MILLI_ANNOTATION,
    GPU_MODELS_ANNOTATION,
    NVIDIA_GPU,
    Cells,
    Trace,
    TraceError,
    column_index,
    cpu_qty,
    dns_label,
    fmt_int,
    gpu_models,
    job_manifest,
    mem_qty_mib,
    open_rows,
    packaged,
    pod_template,
    priority_class_manifest,
    queue_manifest,
    select_window,
    selection_note,
)
from pyvolcano.simulator.traces.nodes import load_nodes

__all__ = ["COLUMNS", "FOLDER", "QOS_CLASSES", "load"]

FOLDER: Final = "alibaba-gpu-v2023-openb"
TRACE_FILE: Final = "openb_pod_list_default.csv"
MACHINES_FILE: Final = "openb_node_list_gpu_node.csv"
COLUMNS: Final = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
OPTIONAL: Final = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
QUEUE: Final = "openb"
QOS_CLASSES: Final = {"LS": ("openb-ls", 1000), "Guaranteed": ("openb-guaranteed", 1000),
                      "Burstable": ("openb-burstable", 500), "BE": ("openb-be", 100)}
PHASES: Final = ("Running", "Succeeded", "Failed", "Pending")


class Pod(NamedTuple):
    at: float
    line: int
    name: str
    requests: dict[str, str]
    annotations: dict[str, str]
    qos: str
    phase: str
    duration: float | None


def _row(c: Cells, timed: bool) -> Pod:
    name = c.str_("name")
    ngpu = c.int_("num_gpu")
    milli = c.int_("gpu_milli")
    req = {"cpu": cpu_qty(c.int_("cpu_milli")), "memory": mem_qty_mib(c.int_("memory_mib"))}
    ann: dict[str, str] = {}
    if ngpu == 0:
        if milli != 0:
            raise c.fail("gpu_milli", str(milli), "0 when num_gpu is 0")
    elif milli == 1000:
        req[NVIDIA_GPU] = str(ngpu)
    elif ngpu == 1 and 0 < milli < 1000:
        ann[GPU_MILLI_ANNOTATION] = str(milli)
    else:
        raise c.fail("gpu_milli", str(milli), "1000 (whole GPUs), or 1..999 with num_gpu = 1")
    if ngpu and c.has("gpu_spec"):
        models = gpu_models(c.str_("gpu_spec", allow_empty=True))
        if models:
            ann[GPU_MODELS_ANNOTATION] = models
    qos = c.str_("qos", allow_empty=True) if c.has("qos") else ""
    if qos and qos not in QOS_CLASSES:
        raise c.fail("qos", qos, "LS, BE, Burstable, Guaranteed or empty")
    phase = c.str_("pod_phase", allow_empty=True) if c.has("pod_phase") else ""
    if phase and phase not in PHASES:
        raise c.fail("pod_phase", phase, ", ".join(PHASES) + " or empty")
    at, duration = 0.0, None
    if timed:
        created = c.float_("creation_time")
        assert created is not None
        at = created
        deleted = c.float_("deletion_time", allow_empty=True)
        if deleted is not None:
            if deleted < created:
                raise c.fail("deletion_time", c.raw("deletion_time"), f"a time ≥ creation_time ({created:g})")
            duration = deleted - created
    return Pod(at, c.line, name, req, ann, qos, phase, duration)


def load(path: Any, *, nodes: Any = None, window: tuple[float, float] | None = None, limit: int | None = None,
         seed: int = 0) -> Trace:
    pods: list[Pod] = []
    with open_rows(path) as (fname, cols, rows):
        idx = column_index(fname, cols, COLUMNS, OPTIONAL, what="openb pod list")
        timed = "creation_time" in idx
        for line, cells in rows:
            pods.append(_row(Cells(fname, line, cells, idx), timed))
    if not pods:
        raise TraceError("no pods", file=fname, expected="at least one data row")
    names: dict[str, int] = {}
    for p in pods:
        if p.name in names:
            raise TraceError(f"pod {p.name!r} repeats line {names[p.name]}", file=fname, line=p.line,
                             column="name", expected="unique pod names")
        names[p.name] = p.line
    pods.sort(key=lambda p: (p.at, p.line))
    kept, shift = select_window(pods, lambda p: p.at, window, limit, name=fname)

    jobs = []
    used_qos: set[str] = set()
    for p in kept:
        labels = {"pyvolcano.io/qos": p.qos} if p.qos else None
        tpl = pod_template(p.requests, duration=p.duration, exit_code=1 if p.phase == "Failed" else 0,
                           annotations=p.annotations, labels=labels)
        pc = QOS_CLASSES[p.qos][0] if p.qos else None
        if p.qos:
            used_qos.add(p.qos)
        jobs.append(job_manifest(dns_label(p.name), trace="openb", submit=p.at - shift, queue=QUEUE,
                                 tasks=[("pod", 1, tpl)], priority_class=pc, labels=labels, line=p.line))
    classes = [priority_class_manifest(QOS_CLASSES[q][0], QOS_CLASSES[q][1], f"openb QoS class {q}")
               for q in sorted(used_qos, key=lambda q: (-QOS_CLASSES[q][1], q))]
    node_list = load_nodes(nodes if nodes is not None else packaged(FOLDER, MACHINES_FILE))

    by_phase: dict[str, int] = {}
    for p in kept:
        by_phase[p.phase or "-"] = by_phase.get(p.phase or "-", 0) + 1
    share = sum(1 for p in kept if GPU_MILLI_ANNOTATION in p.annotations)
    pinned = sum(1 for p in kept if GPU_MODELS_ANNOTATION in p.annotations)
    gpus = sum(int(n["status"]["capacity"].get(NVIDIA_GPU, 0)) for n in node_list)
    notes = [
        selection_note("openb", len(kept), len(pods), "pods, each a one-pod Job", window, limit, shift),
        "openb: phases " + ", ".join(f"{k} {v}" for k, v in sorted(by_phase.items()))
        + "; Failed pods exit 1; Pending pods (never ran in the trace) are kept and run for their "
          "waiting time; Running pods run until their deletion_time (the end of the observation).",
        f"openb: {share} GPU-sharing pods (pyvolcano.io/gpu-milli), {pinned} pinned to GPU models "
        "(pyvolcano.io/gpu-models).",
        "openb: priority from qos: " + ", ".join(f"{q}→{c}({v})" for q, (c, v) in QOS_CLASSES.items())
        + "; one queue 'openb'.",
        f"openb: {len(node_list)} nodes with {fmt_int(gpus)} GPUs"
        + ("" if nodes is not None else f" ({MACHINES_FILE})") + ".",
    ]
    if "creation_time" not in idx:
        notes.append("openb: this list has no timestamps: every pod is submitted at 0 and never exits.")
    return Trace(name="openb", format="openb", nodes=node_list, queues=[queue_manifest(QUEUE, 1)],
                 priority_classes=classes, jobs=jobs, notes=notes)
