"""Machine lists → v1 Node manifests (:func:`load_nodes`).

Recognised from the header (or, for the header-less PAI file, from the row shape):

===================================  ========================================================
file                                 mapping
===================================  ========================================================
Philly ``revised_machine_list.csv``  ``,machineId,number of GPUs``: one node per machine,
                                     ``nvidia.com/gpu`` = the GPU count (0, 2, 3, 4 or 8).
Philly ``cluster_machine_list.csv``  ``machineId, number of GPUs, single GPU mem``: as above,
                                     plus label ``nvidia.com/gpu.memory`` (MiB) from the
                                     ``12GB``/``24GB`` column.
openb ``openb_node_list_*.csv``      ``sn,cpu_milli,memory_mib,gpu,model``: cpu, memory and
                                     GPUs as given; ``model`` → label ``nvidia.com/gpu.product``.
PAI ``pai_machine_spec.csv``         no header; ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu``:
                                     cores, GiB, GPUs; ``gpu_type`` (not ``CPU``) → product label.
spot ``node_info_df.csv``            ``gpu_model,gpu_capacity_num,cpu_num,node_name``; memory is
                                     not published: 8 GiB per vCPU is assumed.
CLUSTER.yaml (``.yaml``/``.yml``)    its Node documents, unchanged (other kinds are ignored).
===================================  ========================================================

Philly machines have no CPU or memory figures. Every Philly node gets
:data:`PHILLY_NODE_CPU_PER_GPU` cores and :data:`PHILLY_NODE_MEM_GIB_PER_GPU` GiB per GPU
(GPU-less machines count as one GPU for this), twice what a Philly pod asks per GPU
(see :mod:`.philly`), so GPUs are always the binding resource, as in the trace.
Every node gets ``pods: 110`` and the label ``kubernetes.io/hostname``.
"""

from __future__ import annotations

import os
from typing import Any, Final

from pyvolcano.api.manifest import MAX_NODE_GPUS
from pyvolcano.simulator.traces._common import (
    Cells,
    TraceError,
    column_index,
    cpu_qty,
    display_name,
    dns_label,
    mem_qty_mib,
    node_manifest,
    open_rows,
)
from pyvolcano.util.numbers import parse_float

__all__ = ["PHILLY_NODE_CPU_PER_GPU", "PHILLY_NODE_MEM_GIB_PER_GPU", "load_nodes", "philly_node"]

PHILLY_NODE_CPU_PER_GPU: Final = 8
PHILLY_NODE_MEM_GIB_PER_GPU: Final = 64
SPOT_MEM_GIB_PER_CPU: Final = 8
PAI_GPU_TYPES: Final = frozenset({"CPU", "MISC", "P100", "T4", "V100", "V100M32"})


def philly_node(machine: str, gpus: int, gpu_mem_mib: int | None = None) -> dict[str, Any]:
    units = max(gpus, 1)
    labels = {"pyvolcano.io/machine": machine}
    if gpu_mem_mib:
        labels["nvidia.com/gpu.memory"] = str(gpu_mem_mib)
    return node_manifest(dns_label(machine), cpu=str(PHILLY_NODE_CPU_PER_GPU * units),
                         memory=f"{PHILLY_NODE_MEM_GIB_PER_GPU * units}Gi", gpus=gpus, labels=labels)


def load_nodes(path: str | os.PathLike[str] | Any) -> list[dict[str, Any]]:
    """Node manifests from a machine-list CSV or a CLUSTER.yaml (see the module docstring)."""
    name = display_name(path)
    if name.endswith((".yaml", ".yml")):
        return _yaml_nodes(path, name)
    with open_rows(path) as (fname, cols, rows):
        low = [c.lower() for c in cols]
        if low[1:3] == ["machineid", "number of gpus"]:
            nodes = _philly_revised(fname, cols, rows)
        elif low[:2] == ["machineid", "number of gpus"]:
            nodes = _philly_official(fname, cols, rows)
        elif {"sn", "cpu_milli", "memory_mib", "gpu"} <= set(low):
            nodes = _openb(fname, cols, rows)
        elif {"gpu_model", "gpu_capacity_num", "cpu_num", "node_name"} <= set(low):
            nodes = _spot(fname, cols, rows)
        elif len(cols) == 5 and cols[1] in PAI_GPU_TYPES:
            nodes = _pai(fname, cols, rows)
        else:
            raise TraceError(f"unrecognised machine list header {','.join(cols)!r}", file=fname, line=1,
                             expected="a Philly, openb, PAI (pai_machine_spec) or spot-GPU machine list, "
                                      "or a CLUSTER.yaml")
    seen: set[str] = set()
    for n in nodes:
        nm = n["metadata"]["name"]
        if nm in seen:
            raise TraceError(f"machine {nm!r} is listed twice", file=fname)
        seen.add(nm)
    if not nodes:
        raise TraceError("no machines", file=fname, expected="at least one machine row")
    return nodes


def _philly_revised(fname: str, cols: list[str], rows: Any) -> list[dict[str, Any]]:
    idx = {"machineId": 1, "number of GPUs": 2}
    out = []
    for line, cells in rows:
        c = Cells(fname, line, cells, idx)
        out.append(philly_node(c.str_("machineId"), c.int_("number of GPUs", maximum=MAX_NODE_GPUS)))
    return out


def _philly_official(fname: str, cols: list[str], rows: Any) -> list[dict[str, Any]]:
    idx = {"machineId": 0, "number of GPUs": 1, "single GPU mem": 2}
    out = []
    for line, cells in rows:
        c = Cells(fname, line, cells, idx)
        mem = c.str_("single GPU mem", allow_empty=True) if len(cells) > 2 else ""
        mib = None
        if mem:
            m = mem.upper().removesuffix("GB").removesuffix("G").strip()
            try:
                mib = int(parse_float(m) * 1024)
            except ValueError:
                raise c.fail("single GPU mem", mem, "a GPU memory size such as 12GB") from None
        out.append(philly_node(c.str_("machineId"), c.int_("number of GPUs", maximum=MAX_NODE_GPUS), mib))
    return out


def _openb(fname: str, cols: list[str], rows: Any) -> list[dict[str, Any]]:
    idx = column_index(fname, [c.lower() for c in cols], ["sn", "cpu_milli", "memory_mib", "gpu"], ["model"],
                       what="openb node list")
    out = []
    for line, cells in rows:
        c = Cells(fname, line, cells, idx)
        gpus = c.int_("gpu", maximum=MAX_NODE_GPUS)
        model = c.str_("model", allow_empty=True) if c.has("model") else ""
        out.append(node_manifest(dns_label(c.str_("sn")), cpu=cpu_qty(c.int_("cpu_milli", minimum=1)),
                                 memory=mem_qty_mib(c.int_("memory_mib", minimum=1)), gpus=gpus,
                                 product=model if gpus and model else None))
    return out


def _pai(fname: str, first: list[str], rows: Any) -> list[dict[str, Any]]:
    idx = {"machine": 0, "gpu_type": 1, "cap_cpu": 2, "cap_mem": 3, "cap_gpu": 4}
    out = []

    def one(line: int, cells: list[str]) -> None:
        c = Cells(fname, line, cells, idx)
        gtype = c.str_("gpu_type")
        gpus = c.int_("cap_gpu")
        out.append(node_manifest(dns_label("pai-" + c.str_("machine")), cpu=cpu_qty(c.num("cap_cpu") * 1000),
                                 memory=mem_qty_mib(c.num("cap_mem") * 1024), gpus=gpus,
                                 product=gtype if gpus and gtype != "CPU" else None))

    one(1, first)
    for line, cells in rows:
        one(line, cells)
    return out


def _spot(fname: str, cols: list[str], rows: Any) -> list[dict[str, Any]]:
    idx = column_index(fname, [c.lower() for c in cols], ["gpu_model", "gpu_capacity_num", "cpu_num", "node_name"],
                       what="spot-GPU node list")
    out = []
    for line, cells in rows:
        c = Cells(fname, line, cells, idx)
        cpus = c.int_("cpu_num", minimum=1)
        out.append(node_manifest(dns_label("spot-node-" + c.str_("node_name")), cpu=str(cpus),
                                 memory=f"{cpus * SPOT_MEM_GIB_PER_CPU}Gi",
                                 gpus=c.int_("gpu_capacity_num", maximum=MAX_NODE_GPUS),
                                 product=c.str_("gpu_model", allow_empty=True) or None))
    return out


def _yaml_nodes(path: Any, name: str) -> list[dict[str, Any]]:
    from pyvolcano.api.manifest import ManifestError, iter_documents, parse_object, read_manifest_text

    out: list[dict[str, Any]] = []
    try:
        for i, doc in iter_documents(read_manifest_text(path), name):
            if isinstance(doc, dict) and doc.get("kind") == "Node":
                parse_object(doc, f"{name}: document {i}")
                out.append(doc)
    except ManifestError as e:
        raise TraceError(str(e)) from None
    if not out:
        raise TraceError("no Node documents", file=name, expected="a CLUSTER.yaml with v1 Nodes")
    return out
