"""Trace adapters (pyvolcano.simulator.traces): each format on a few real lines of its CSV,
format detection, line-numbered errors, windows/limits, determinism and the shipped data."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.api.duration import parse_duration_strict
from pyvolcano.api.manifest import parse_object
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.simulator.traces import (
    BUILTIN_DAYS,
    FORMATS,
    Trace,
    TraceError,
    builtin_scenario,
    detect_format,
    load_nodes,
    load_trace,
)
from pyvolcano.simulator.traces import kalos as kalos_mod
from pyvolcano.simulator.traces.philly import gang_shape

SUBMIT = "pyvolcano.io/submit-at"
DURATION = "pyvolcano.io/duration"
GPU = "nvidia.com/gpu"

# --------------------------------------------------------------------------- real slices
# philly/philly.csv: header, lines 2-4, and rows with 2, 8, 12, 16 and 32 GPUs (unsorted, as in the file).
PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,1,2951.0,6214e9
2017-09-29 07:58:32,860662.0,1,860662.0,6c71a0
2017-10-06 01:49:35,195.0,16,3120.0,11cb48
2017-10-09 06:18:57,30.0,8,240.0,ee9e8c
2017-10-27 12:49:12,1257.0,12,15084.0,e13805
2017-10-09 05:51:27,13.0,2,26.0,11cb48
2017-10-06 14:37:26,55625.0,32,1780000.0,2869ce

"""
# philly/revised_machine_list.csv: header, two 8-GPU machines, the 3-GPU one, a GPU-less one, a 4-GPU one.
PHILLY_REVISED = """,machineId,number of GPUs
0,m0,8
1,m1,8
213,m427,3
326,m107,0
549,m95,4
"""
# philly/cluster_machine_list.csv
PHILLY_OFFICIAL = """machineId, number of GPUs, single GPU mem
m0,2, 12GB
m10,8, 24GB
"""
# alibaba-gpu-v2023-openb/openb_pod_list_default.csv (+ two gpu_spec rows from openb_pod_list_gpuspec33.csv)
OPENB = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
openb-pod-0005,20000,65536,0,0,,LS,Running,2759674,12902960,2759676
openb-pod-0009,12000,16384,1,1000,V100M16|V100M32,LS,Running,4975773,12902960,4975773
openb-pod-0012,8000,32768,1,1000,T4,LS,Running,6588193,10959245,6595531
openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497
openb-pod-0033,3152,5600,1,1000,,BE,Failed,9965463,9965645,9965463
openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,
"""
OPENB_MULTIGPU = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
openb-pod-0000,12000,16384,1,1000
openb-pod-0001,6000,12288,1,460
"""
# alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv
OPENB_NODES = """sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,64000,262144,2,P100
openb-node-0025,32000,131072,4,V100M16
openb-node-0259,96000,393216,8,G2
openb-node-0728,104000,524288,2,T4
"""
# acme-kalos-subset/converted_kalos_trace.csv: the first rows and a 1×2, a 1×1, a 64×8 (12.5 cpu) and a 128×8 job.
KALOS_HEADER = ("job_id,arrival_time,num_iteration,iteration_computing_time,iteration_networking_time,"
                "gpu_workers,ps,gpu_per_worker,cpu_per_gpu_worker,cpu_per_ps_worker,tensorsizes,profiled_network")
KALOS = KALOS_HEADER + """
0,0.0,208,0.5,0.25,8,0,8.0,15.0,15.0,10.0,500
1,313.0,156,0.5,0.25,8,0,8.0,15.0,15.0,10.0,500
3,58324.0,136,0.5,0.75,16,0,8.0,15.0,15.0,10.0,1000
24,684979.0,702,0.5,0.25,1,0,2.0,60.0,60.0,10.0,500
85,1815901.0,50,0.5,0.25,1,0,1.0,120.0,120.0,10.0,500
119,2525899.0,286,0.5,0.75,64,0,8.0,12.5,12.5,10.0,1000
151,3711924.0,38736,0.5,0.75,128,0,8.0,15.0,15.0,19.0,1000
"""
# alibaba-gpu-v2025-dlrm/disaggregated_DLRM_trace.csv: every lifetime shape (none / created / deleted / both).
DLRM_HEADER = ("instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,"
               "memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,"
               "scheduled_time,deletion_time")
DLRM = DLRM_HEADER + """
instance_0,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,,,
instance_89,CN,app_0,48,48,0,0,25,25,240.0,240.0,680.0,800.0,-1,,,
instance_2454,CN,app_87,64,64,0,0,100,100,320.0,320.0,255.0,300.0,2,,,85.0
instance_7280,CN,app_22,64,64,0,0,1,1,320.0,320.0,544.0,640.0,-1,475.00000000000006,623.0,
instance_7281,CN,app_88,64,64,0,0,1,1,320.0,320.0,255.0,300.0,-1,610.0,683.0,91730.0
"""
GENERIC = """submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available,name
0,3600,research,4,8,32Gi,1,100,,train-a
90s,10m,research,2,500m,4Gi,0.5,,1,
120,,default,1,2,8Gi,0,-5,,serve
60,1h30m,prod,8,16,64Gi,8,1000,8,big
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def submit(job: dict[str, Any]) -> float:
    return parse_duration_strict(job["metadata"]["annotations"][SUBMIT])


def tasks(job: dict[str, Any]) -> list[tuple[str, int, dict[str, str], dict[str, str]]]:
    """(name, replicas, requests, template annotations) per task."""
    return [(t["name"], t["replicas"], t["template"]["spec"]["containers"][0]["resources"]["requests"],
             t["template"]["metadata"]["annotations"]) for t in job["spec"]["tasks"]]


def by_line(trace: Trace) -> dict[int, dict[str, Any]]:
    return {int(j["metadata"]["annotations"]["pyvolcano.io/trace-line"]): j for j in trace.jobs}


# --------------------------------------------------------------------------- Philly
@pytest.fixture
def philly_files(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path, "philly.csv", PHILLY), write(tmp_path, "revised_machine_list.csv", PHILLY_REVISED)


def test_philly_maps_submit_duration_queue_and_gangs(philly_files: tuple[Path, Path]) -> None:
    trace_path, machines = philly_files
    tr = load_trace(trace_path, nodes=machines)
    assert tr.format == "philly"
    assert len(tr.jobs) == 8
    # sorted by timestamp; the earliest (2017-09-29 07:58:32, line 4) is at 0
    subs = [submit(j) for j in tr.jobs]
    assert subs == sorted(subs) and subs[0] == 0
    jobs = by_line(tr)
    assert jobs[4]["metadata"]["name"] == "philly-0"
    assert submit(jobs[2]) == 10 * 86400 - 28712 + 25315  # 2017-10-09 07:01:55 − 2017-09-29 07:58:32
    assert jobs[2]["spec"]["queue"] == "11cb48"
    assert tasks(jobs[2]) == [("worker", 1, {"cpu": "4", "memory": "32Gi", GPU: "1"}, {DURATION: "66s"})]
    # 16 GPUs → 2 pods × 8, 12 → 2 × 6, 32 → 4 × 8, 8 → 1 × 8; minAvailable = all pods
    assert [(n, r, q[GPU]) for n, r, q, _ in tasks(jobs[5])] == [("worker", 2, "8")]
    assert jobs[5]["spec"]["minAvailable"] == 2
    # finished jobs are garbage-collected a minute after they end (documented assumption)
    assert {j["spec"]["ttlSecondsAfterFinished"] for j in tr.jobs} == {60}
    assert [(r, q[GPU], q["cpu"], q["memory"]) for _, r, q, _ in tasks(jobs[7])] == [(2, "6", "24", "192Gi")]
    assert [(r, q[GPU]) for _, r, q, _ in tasks(jobs[9])] == [(4, "8")] and jobs[9]["spec"]["minAvailable"] == 4
    assert [(r, q[GPU]) for _, r, q, _ in tasks(jobs[6])] == [(1, "8")]
    assert tasks(jobs[7])[0][3] == {DURATION: "1257s"}
    # one queue per VC, weights = % of GPU-time (min 1), no priorities
    weights = {q["metadata"]["name"]: q["spec"]["weight"] for q in tr.queues}
    assert set(weights) == {"11cb48", "6214e9", "6c71a0", "ee9e8c", "e13805", "2869ce"}
    assert weights["2869ce"] == 67 and weights["6c71a0"] == 32 and weights["11cb48"] == 1
    assert tr.priority_classes == []
    assert all("exit-code" not in json.dumps(j) for j in tr.jobs)


def test_gang_shape_splits_evenly_and_keeps_the_total() -> None:
    assert gang_shape(1, 8) == [(1, 1)]
    assert gang_shape(8, 8) == [(1, 8)]
    assert gang_shape(12, 8) == [(2, 6)]
    assert gang_shape(128, 8) == [(16, 8)]
    assert gang_shape(9, 8) == [(1, 5), (1, 4)]
    assert gang_shape(20, 8) == [(2, 7), (1, 6)]
    for g in range(1, 200):
        assert sum(c * n for c, n in gang_shape(g, 8)) == g
        assert all(n <= 8 for _, n in gang_shape(g, 8))


def test_philly_gang_with_uneven_split_has_two_tasks(tmp_path: Path, philly_files: tuple[Path, Path]) -> None:
    p = write(tmp_path, "p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,10,9,90,vc1\n")
    tr = load_trace(p, nodes=philly_files[1])
    assert [(n, r, q[GPU]) for n, r, q, _ in tasks(tr.jobs[0])] == [("worker-5gpu", 1, "5"), ("worker-4gpu", 1, "4")]
    assert tr.jobs[0]["spec"]["minAvailable"] == 2


def test_philly_machine_lists(tmp_path: Path, philly_files: tuple[Path, Path]) -> None:
    nodes = load_nodes(philly_files[1])
    assert [(n["metadata"]["name"], n["status"]["capacity"][GPU], n["status"]["capacity"]["cpu"]) for n in nodes] == [
        ("m0", "8", "64"), ("m1", "8", "64"), ("m427", "3", "24"), ("m107", "0", "8"), ("m95", "4", "32")]
    assert nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"] == "m0"
    assert nodes[0]["status"]["allocatable"] == nodes[0]["status"]["capacity"]
    assert nodes[0]["status"]["capacity"]["pods"] == "110"
    official = load_nodes(write(tmp_path, "cluster_machine_list.csv", PHILLY_OFFICIAL))
    assert [(n["status"]["capacity"][GPU], n["metadata"]["labels"]["nvidia.com/gpu.memory"]) for n in official] == [
        ("2", "12288"), ("8", "24576")]
    for n in nodes + official:
        parse_object(n)


def test_philly_window_and_limit_keep_names_and_shift(philly_files: tuple[Path, Path]) -> None:
    trace_path, machines = philly_files
    full = load_trace(trace_path, nodes=machines)
    names = {j["metadata"]["name"]: submit(j) for j in full.jobs}
    start = names["philly-2"] - 1  # the 2017-10-06 14:37:26 job (rank 2) and later, up to +4 days
    w = load_trace(trace_path, nodes=machines, window=(start, start + 4 * 86400))
    assert [j["metadata"]["name"] for j in w.jobs] == ["philly-2", "philly-3", "philly-4", "philly-5", "philly-6"]
    assert submit(w.jobs[0]) == 0
    assert submit(w.jobs[1]) == names["philly-3"] - names["philly-2"]
    lim = load_trace(trace_path, nodes=machines, limit=3)
    assert [j["metadata"]["name"] for j in lim.jobs] == ["philly-0", "philly-1", "philly-2"]
    assert submit(lim.jobs[0]) == 0
    assert load_trace(trace_path, nodes=machines, limit=0).jobs == []


def test_philly_bad_rows_name_line_and_column(tmp_path: Path) -> None:
    bad = PHILLY.replace("2017-10-06 01:49:35,195.0,16", "2017-10-06 01:49:35,195.0,sixteen")
    with pytest.raises(TraceError) as e:
        load_trace(write(tmp_path, "p.csv", bad), "philly")
    assert (e.value.line, e.value.column) == (5, "num_gpus")
    assert "p.csv:5" in str(e.value) and "'num_gpus'" in str(e.value) and "expected an integer" in str(e.value)
    bad = PHILLY.replace("2017-10-09 06:13:03", "09/10/2017 06:13")
    with pytest.raises(TraceError, match=r"p2\.csv:3: column 'timestamp'.*expected a time such as") as e:
        load_trace(write(tmp_path, "p2.csv", bad), "philly")
    bad = PHILLY.replace("2951.0,1,2951.0", "-5,1,2951.0")
    with pytest.raises(TraceError, match=r":3: column 'duration'.*expected a number ≥ 0"):
        load_trace(write(tmp_path, "p3.csv", bad), "philly")


# --------------------------------------------------------------------------- openb
def test_openb_maps_gpus_shares_models_phases(tmp_path: Path) -> None:
    nodes = write(tmp_path, "nodes.csv", OPENB_NODES)
    tr = load_trace(write(tmp_path, "openb_pod_list_gpuspec33.csv", OPENB), nodes=nodes)
    assert tr.format == "openb" and len(tr.jobs) == 8
    jobs = {j["metadata"]["name"]: j for j in tr.jobs}
    assert [j["metadata"]["name"] for j in tr.jobs][:2] == ["openb-pod-0000", "openb-pod-0001"]
    _, r, req, ann = tasks(jobs["openb-pod-0000"])[0]
    assert r == 1 and req == {"cpu": "12", "memory": "16Gi", GPU: "1"} and ann == {DURATION: "12537496s"}
    _, _, req, ann = tasks(jobs["openb-pod-0001"])[0]
    assert req == {"cpu": "6", "memory": "12Gi"}  # a GPU share: no nvidia.com/gpu request
    assert ann["pyvolcano.io/gpu-milli"] == "460" and ann[DURATION] == f"{12902960 - 427061}s"
    assert submit(jobs["openb-pod-0001"]) == 427061
    assert tasks(jobs["openb-pod-0005"])[0][2] == {"cpu": "20", "memory": "64Gi"}
    assert tasks(jobs["openb-pod-0009"])[0][3]["pyvolcano.io/gpu-models"] == "V100M16|V100M32"
    assert tasks(jobs["openb-pod-0012"])[0][3]["pyvolcano.io/gpu-models"] == "T4"
    assert tasks(jobs["openb-pod-0017"])[0][2][GPU] == "8"
    assert tasks(jobs["openb-pod-0033"])[0][2] == {"cpu": "3152m", "memory": "5600Mi", GPU: "1"}
    assert tasks(jobs["openb-pod-0033"])[0][3]["pyvolcano.io/exit-code"] == "1"  # Failed
    assert "pyvolcano.io/exit-code" not in tasks(jobs["openb-pod-0061"])[0][3]  # Pending: kept, exits 0
    assert tasks(jobs["openb-pod-0061"])[0][3][DURATION] == "125s"
    assert jobs["openb-pod-0000"]["spec"]["priorityClassName"] == "openb-ls"
    assert jobs["openb-pod-0017"]["spec"]["priorityClassName"] == "openb-burstable"
    assert {(p["metadata"]["name"], p["value"]) for p in tr.priority_classes} == {
        ("openb-ls", 1000), ("openb-burstable", 500), ("openb-be", 100)}
    assert [q["metadata"]["name"] for q in tr.queues] == ["openb"]
    assert all(j["spec"]["minAvailable"] == 1 and j["spec"]["queue"] == "openb" for j in tr.jobs)
    n = {x["metadata"]["name"]: x for x in tr.nodes}
    assert n["openb-node-0025"]["metadata"]["labels"]["nvidia.com/gpu.product"] == "V100M16"
    assert n["openb-node-0025"]["status"]["capacity"] == {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: "4"}


def test_openb_without_timestamps_submits_at_zero_and_never_exits(tmp_path: Path) -> None:
    tr = load_trace(write(tmp_path, "openb_pod_list_multigpu20.csv", OPENB_MULTIGPU),
                    nodes=write(tmp_path, "n.csv", OPENB_NODES))
    assert [submit(j) for j in tr.jobs] == [0, 0]
    assert all(DURATION not in tasks(j)[0][3] for j in tr.jobs)
    assert any("no timestamps" in n for n in tr.notes)


@pytest.mark.parametrize(("old", "new", "column"), [
    ("openb-pod-0017,88000,327680,8,1000", "openb-pod-0017,88000,327680,8,460", "gpu_milli"),
    ("BE,Failed,9965463,9965645", "BE,Failed,9965463,9965000", "deletion_time"),
    ("Burstable,Succeeded", "Bursty,Succeeded", "qos"),
    ("openb-pod-0005,20000,65536,0,0", "openb-pod-0005,20000,lots,0,0", "memory_mib"),
])
def test_openb_bad_rows(tmp_path: Path, old: str, new: str, column: str) -> None:
    text = OPENB.replace(old, new)
    line = next(i for i, ln in enumerate(text.splitlines(), start=1) if new in ln)
    with pytest.raises(TraceError) as e:
        load_trace(write(tmp_path, "o.csv", text), "openb", nodes=write(tmp_path, "n.csv", OPENB_NODES))
    assert (e.value.line, e.value.column) == (line, column)
    assert f"o.csv:{line}: column '{column}'" in str(e.value)


# --------------------------------------------------------------------------- Kalos
def test_kalos_gangs_resources_and_real_run_time(tmp_path: Path) -> None:
    tr = load_trace(write(tmp_path, "converted_kalos_trace.csv", KALOS))
    assert tr.format == "kalos" and len(tr.jobs) == 7
    jobs = by_line(tr)
    assert [(r, q) for _, r, q, _ in tasks(jobs[2])] == [(8, {"cpu": "120", "memory": "1000Gi", GPU: "8"})]
    assert jobs[2]["spec"]["minAvailable"] == 8
    assert tasks(jobs[2])[0][3][DURATION] == "104s"  # 208 iterations × 0.5 s, networking time not added
    assert tasks(jobs[4])[0][3][DURATION] == "68s"  # 136 × 0.5 (a Pretrain job: networking 0.75 ignored)
    assert jobs[4]["metadata"]["labels"]["pyvolcano.io/job-type"] == "pretrain"
    assert jobs[2]["metadata"]["labels"]["pyvolcano.io/job-type"] == "other"
    assert [(r, q[GPU], q["cpu"]) for _, r, q, _ in tasks(jobs[5])] == [(1, "2", "120")]
    assert [(r, q[GPU], q["cpu"]) for _, r, q, _ in tasks(jobs[6])] == [(1, "1", "120")]
    assert [(r, q["cpu"]) for _, r, q, _ in tasks(jobs[7])] == [(64, "100")]  # 12.5 × 8
    assert [(r, q["memory"]) for _, r, q, _ in tasks(jobs[8])] == [(128, "1900Gi")]
    assert jobs[8]["spec"]["minAvailable"] == 128
    assert submit(jobs[8]) == 3711924
    assert [q["metadata"]["name"] for q in tr.queues] == ["kalos"] and tr.priority_classes == []
    # default cluster: 302 × 8 A100 (≥ the 1,024-GPU bound from cluster_summary.csv and the largest gang)
    assert len(tr.nodes) == kalos_mod.DEFAULT_NODES == 302
    assert kalos_mod.summary_max_gpu() == 1024
    cap = tr.nodes[0]["status"]["capacity"]
    assert (cap[GPU], cap["cpu"], cap["memory"]) == ("8", "128", "2048Gi")
    assert tr.nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"] == "A100"
    own = load_trace(write(tmp_path, "k.csv", KALOS), nodes=write(tmp_path, "n.csv", OPENB_NODES))
    assert len(own.nodes) == 4


def test_kalos_rejects_parameter_servers(tmp_path: Path) -> None:
    text = KALOS.replace("1,313.0,156,0.5,0.25,8,0,", "1,313.0,156,0.5,0.25,8,2,")
    with pytest.raises(TraceError) as e:
        load_trace(write(tmp_path, "k.csv", text))
    assert (e.value.line, e.value.column) == (3, "ps")


# --------------------------------------------------------------------------- DLRM
def test_dlrm_lifetimes_priority_and_resources(tmp_path: Path) -> None:
    tr = load_trace(write(tmp_path, "disaggregated_DLRM_trace.csv", DLRM))
    assert tr.format == "dlrm" and len(tr.jobs) == 5
    jobs = {j["metadata"]["name"]: j for j in tr.jobs}
    hn = jobs["dlrm-instance-0"]
    _, _, req, ann = tasks(hn)[0]
    assert req == {"cpu": "12", "memory": "120Gi", GPU: "1", "pyvolcano.io/rdma": "25",
                   "ephemeral-storage": "640Gi"}
    assert submit(hn) == 0 and DURATION not in ann  # alive for the whole trace
    assert ann["volcano.sh/preemptable"] == "false" and ann["pyvolcano.io/max-instance-per-node"] == "8"
    assert hn["spec"]["priorityClassName"] == "dlrm-serving"
    assert hn["metadata"]["labels"]["pyvolcano.io/app"] == "app_0"
    assert tr.priority_classes[0]["value"] == 1_000_000
    assert submit(jobs["dlrm-instance-2454"]) == 0 and tasks(jobs["dlrm-instance-2454"])[0][3][DURATION] == "85s"
    assert submit(jobs["dlrm-instance-7280"]) == 475  # 475.00000000000006 in the file
    assert DURATION not in tasks(jobs["dlrm-instance-7280"])[0][3]
    assert tasks(jobs["dlrm-instance-7281"])[0][3][DURATION] == f"{91730 - 610}s"
    # generated cluster: per-role nodes, pods select their role
    roles = {n["metadata"]["labels"]["pyvolcano.io/dlrm-role"] for n in tr.nodes}
    assert roles == {"hn", "cn"}
    hn_nodes = [n for n in tr.nodes if n["metadata"]["labels"]["pyvolcano.io/dlrm-role"] == "hn"]
    assert len(hn_nodes) == 1 and hn_nodes[0]["status"]["capacity"][GPU] == "8"
    cn_nodes = [n for n in tr.nodes if n["metadata"]["labels"]["pyvolcano.io/dlrm-role"] == "cn"]
    # peak CN demand: RDMA 25 + 100 % at t=0 (1.25 NICs) and 48 + 64 + 64 = 176 cores from t=610;
    # × 1.2 headroom → 2 nodes of one NIC / 192 cores
    assert len(cn_nodes) == 2
    assert hn["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] == {"pyvolcano.io/dlrm-role": "hn"}
    own = load_trace(write(tmp_path, "d.csv", DLRM), nodes=write(tmp_path, "n.csv", OPENB_NODES))
    assert "nodeSelector" not in own.jobs[0]["spec"]["tasks"][0]["template"]["spec"]


def test_dlrm_window_keeps_instances_alive_at_its_start(tmp_path: Path) -> None:
    tr = load_trace(write(tmp_path, "d.csv", DLRM), window=(500.0, 1000.0))
    jobs = {j["metadata"]["name"]: j for j in tr.jobs}
    # 2454 was deleted at 85 (before the window): dropped; the others are alive at 500
    assert set(jobs) == {"dlrm-instance-0", "dlrm-instance-89", "dlrm-instance-7280", "dlrm-instance-7281"}
    assert submit(jobs["dlrm-instance-7280"]) == 0  # created at 475, before the window: at its start
    assert submit(jobs["dlrm-instance-7281"]) == 110  # created at 610
    assert tasks(jobs["dlrm-instance-7281"])[0][3][DURATION] == f"{91730 - 610}s"


# --------------------------------------------------------------------------- generic CSV
def test_generic_csv_maps_every_column(tmp_path: Path) -> None:
    nodes = write(tmp_path, "nodes.csv", OPENB_NODES)
    tr = load_trace(write(tmp_path, "mine.csv", GENERIC), nodes=nodes)
    assert tr.format == "csv"
    assert [j["metadata"]["name"] for j in tr.jobs] == ["train-a", "big", "job-00002", "serve"]
    jobs = {j["metadata"]["name"]: j for j in tr.jobs}
    a = jobs["train-a"]
    assert a["spec"]["queue"] == "research" and a["spec"]["minAvailable"] == 4
    assert tasks(a) == [("task", 4, {"cpu": "8", "memory": "32Gi", GPU: "1"}, {DURATION: "3600s"})]
    assert a["spec"]["priorityClassName"] == "priority-100"
    b = jobs["job-00002"]
    assert submit(b) == 90 and b["spec"]["minAvailable"] == 1
    assert tasks(b) == [("task", 2, {"cpu": "500m", "memory": "4Gi"},
                         {DURATION: "600s", "pyvolcano.io/gpu-milli": "500"})]
    assert "priorityClassName" not in b["spec"]
    s = jobs["serve"]
    assert DURATION not in tasks(s)[0][3] and s["spec"]["priorityClassName"] == "priority-neg-5"
    assert tasks(jobs["big"])[0][3][DURATION] == "5400s"
    # the default queue exists in every Volcano cluster: not emitted
    assert [q["metadata"]["name"] for q in tr.queues] == ["prod", "research"]
    assert [(p["metadata"]["name"], p["value"]) for p in tr.priority_classes] == [
        ("priority-1000", 1000), ("priority-100", 100), ("priority-neg-5", -5)]
    assert len(tr.nodes) == 4
    no_nodes = load_trace(write(tmp_path, "mine2.csv", GENERIC))
    assert no_nodes.nodes == [] and any("--nodes" in n for n in no_nodes.notes)


@pytest.mark.parametrize(("old", "new", "line", "column", "expected"), [
    ("0.5,,1,", "0.5,,3,", 3, "min_available", "at most replicas (2)"),
    (",1,2,8Gi,", ",1,two,8Gi,", 4, "cpu", "a Kubernetes quantity"),
    ("16,64Gi,8,1000", "16,64Gi,1.5,1000", 5, "gpu", "a whole number of GPUs"),
    ("90s,10m", "90s,ten minutes", 3, "duration", "seconds"),
    ("0,3600,research", "-1,3600,research", 2, "submit_time", "a non-negative time"),
    ("research,4,8", "Research,4,8", 2, "queue", "DNS-1123"),
    (",-5,,serve", ",high,,serve", 4, "priority", "an integer"),
    ("1000,8,big", "1000,8,Big_Job", 5, "name", "DNS-1123"),
    ("0,3600,research,4", "0,3600,research,0", 2, "replicas", "an integer from 1 to 10,000"),
    ("90s,10m,research,2", "90s,10m,research,100000", 3, "replicas", "an integer from 1 to 10,000"),
    ("0,3600,research,4", "0,3600,research,٤", 2, "replicas", "an integer from 1 to 10,000"),
    ("0,3600,research,4", "0,3600,research,1_0", 2, "replicas", "an integer from 1 to 10,000"),
    ("0,3600,research", "0,1e308,research", 2, "duration", "at most 2562047h"),
    ("0,3600,research", "0,9999999999h,research", 2, "duration", "at most 2562047h"),
    ("0,3600,research", "0,nan,research", 2, "duration", "seconds"),
    ("0,3600,research", "inf,3600,research", 2, "submit_time", "seconds"),
    ("0,3600,research", "0,٣٦٠٠,research", 2, "duration", "seconds"),
    ("16,64Gi,8,1000", "16,64Gi,٨,1000", 5, "gpu", "a whole number of GPUs"),
    ("16,64Gi,8,1000", "16,64Gi,nan,1000", 5, "gpu", "a whole number of GPUs"),
    (",1,2,8Gi,", ",1,٢,8Gi,", 4, "cpu", "a Kubernetes quantity"),
    (",-5,,serve", ",٥,,serve", 4, "priority", "an integer"),
    ("0,3600,research", "0,\u0663\u0666\u0660\u0660,research", 2, "duration", "seconds"),
    (",-5,,serve", ",-\u0665,,serve", 4, "priority", "an integer"),
])
def test_generic_csv_errors_are_line_numbered(tmp_path: Path, old: str, new: str, line: int, column: str,
                                              expected: str) -> None:
    assert old in GENERIC
    with pytest.raises(TraceError) as e:
        load_trace(write(tmp_path, "mine.csv", GENERIC.replace(old, new, 1)), "csv")
    assert (e.value.file, e.value.line, e.value.column) == (str(tmp_path / "mine.csv"), line, column)
    assert expected in str(e.value)


def test_generic_csv_header_and_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"unknown column.*'gpus'"):
        load_trace(write(tmp_path, "a.csv", GENERIC.replace("gpu,", "gpu,gpus,", 1).replace(
            "\n0,", "\n0,x,", 1)), "csv")
    with pytest.raises(TraceError, match=r"b\.csv:1: the header lacks min_available"):
        load_trace(write(tmp_path, "b.csv", "submit_time,duration,queue,replicas,cpu,memory,gpu,priority\n"), "csv")
    with pytest.raises(TraceError, match=r"c\.csv:3: the row has 3 cells"):
        load_trace(write(tmp_path, "c.csv", GENERIC.splitlines()[0] + "\n" + GENERIC.splitlines()[1] + "\n1,2,3\n"),
                   "csv")
    with pytest.raises(TraceError, match=r"repeats line 2"):
        load_trace(write(tmp_path, "d.csv", GENERIC.replace(",big", ",train-a")), "csv")


# --------------------------------------------------------------------------- detection and errors
@pytest.mark.parametrize(("text", "fmt"), [(PHILLY, "philly"), (OPENB, "openb"), (OPENB_MULTIGPU, "openb"),
                                           (KALOS, "kalos"), (DLRM, "dlrm"), (GENERIC, "csv")])
def test_detect_format_from_header(tmp_path: Path, text: str, fmt: str) -> None:
    assert detect_format(write(tmp_path, "t.csv", text)) == fmt


def test_detect_format_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"m\.csv:1: this is a Philly machine list.*--nodes"):
        detect_format(write(tmp_path, "m.csv", PHILLY_REVISED))
    with pytest.raises(TraceError, match=r"n\.csv:1: this is an openb node list"):
        load_trace(write(tmp_path, "n.csv", OPENB_NODES))
    with pytest.raises(TraceError, match=r"u\.csv:1: unknown trace format \(header: a,b\).*philly: timestamp"):
        detect_format(write(tmp_path, "u.csv", "a,b\n1,2\n"))
    with pytest.raises(TraceError, match=r"e\.csv:1: the file is empty"):
        detect_format(write(tmp_path, "e.csv", ""))
    with pytest.raises(TraceError, match="cannot read"):
        detect_format(tmp_path / "missing.csv")
    with pytest.raises(TraceError, match="unknown trace format 'alibaba'"):
        load_trace(write(tmp_path, "p.csv", PHILLY), "alibaba")
    with pytest.raises(TraceError, match="the header lacks"):
        load_trace(write(tmp_path, "p.csv", PHILLY), "kalos")
    with pytest.raises(TraceError, match="window"):
        load_trace(write(tmp_path, "p.csv", PHILLY), window=(10.0, 5.0))


def test_load_nodes_formats_and_errors(tmp_path: Path) -> None:
    pai = load_nodes(write(tmp_path, "pai_machine_spec.csv",
                           "7399a758eb02bae1a3621236,CPU,96,512,0\n3a1b2c3d4e5f60718293a4b5,V100M32,96,384,8\n"))
    assert [(n["status"]["capacity"][GPU], n["status"]["capacity"]["memory"],
             n["metadata"]["labels"].get("nvidia.com/gpu.product")) for n in pai] == [
        ("0", "512Gi", None), ("8", "384Gi", "V100M32")]
    spot = load_nodes(write(tmp_path, "node_info_df.csv",
                            "gpu_model,gpu_capacity_num,cpu_num,node_name\nH800,8,128,7\n"))
    assert spot[0]["metadata"]["name"] == "spot-node-7" and spot[0]["status"]["capacity"]["memory"] == "1024Gi"
    cluster = write(tmp_path, "cluster.yaml", """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "8", memory: 32Gi}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec: {weight: 1}
""")
    assert [n["metadata"]["name"] for n in load_nodes(cluster)] == ["n1"]
    with pytest.raises(TraceError, match="unrecognised machine list header"):
        load_nodes(write(tmp_path, "x.csv", "a,b,c\n1,2,3\n"))
    with pytest.raises(TraceError, match=r"dup\.csv: machine 'm0' is listed twice"):
        load_nodes(write(tmp_path, "dup.csv", PHILLY_REVISED + "9,m0,8\n"))
    with pytest.raises(TraceError) as e:
        load_nodes(write(tmp_path, "bad.csv", PHILLY_REVISED.replace("m427,3", "m427,three")))
    assert (e.value.line, e.value.column) == (4, "number of GPUs")


# --------------------------------------------------------------------------- determinism and validity
@pytest.mark.parametrize(("name", "text"), [("philly", PHILLY), ("openb", OPENB), ("kalos", KALOS),
                                            ("dlrm", DLRM), ("csv", GENERIC)])
def test_loading_is_deterministic(tmp_path: Path, name: str, text: str) -> None:
    p = write(tmp_path, f"{name}.csv", text)
    nodes = write(tmp_path, "n.csv", OPENB_NODES)
    a = load_trace(p, nodes=nodes, seed=1)
    b = load_trace(p, nodes=nodes, seed=2)
    assert json.dumps(a.objects(), sort_keys=True) == json.dumps(b.objects(), sort_keys=True)
    assert a.notes == b.notes


@pytest.mark.parametrize(("name", "text"), [("philly", PHILLY), ("openb", OPENB), ("kalos", KALOS),
                                            ("dlrm", DLRM), ("csv", GENERIC)])
def test_manifests_are_admitted(tmp_path: Path, name: str, text: str) -> None:
    from pyvolcano.admission import VolcanoAdmission
    from pyvolcano.store.memory import InMemoryStore

    tr = load_trace(write(tmp_path, f"{name}.csv", text),
                    nodes=write(tmp_path, "n.csv", PHILLY_REVISED) if name in ("philly", "csv") else None)
    from pyvolcano.controllers.queue import ensure_default_queues

    store = InMemoryStore(clock=lambda: 0.0, admission=VolcanoAdmission())
    ensure_default_queues(store)  # the queue controller's job in a real run
    for obj in tr.priority_classes + tr.queues + tr.nodes[:20]:
        parse_object(obj)
        store.create(copy.deepcopy(obj))
    for job in tr.jobs:
        store.create(copy.deepcopy(job))
        assert job["metadata"]["annotations"][SUBMIT].endswith("s")
        for t in job["spec"]["tasks"]:
            d = t["template"]["metadata"]["annotations"].get(DURATION)
            assert d is None or parse_duration_strict(d) >= 0


# --------------------------------------------------------------------------- shipped data
@pytest.mark.parametrize("fmt", ["philly", "openb", "kalos", "dlrm"])
def test_shipped_traces_have_readme_and_licence(fmt: str) -> None:
    f = FORMATS[fmt]
    assert f.folder is not None
    folder = resources.files("pyvolcano").joinpath("data", "traces", f.folder)
    names = {p.name for p in folder.iterdir()}
    assert f.file in names and "README.md" in names
    assert any(n.startswith("LICENSE") for n in names)


def test_full_philly_loads_whole() -> None:
    tr = load_trace("philly")
    assert len(tr.jobs) == 82_247 and len(tr.nodes) == 552 and len(tr.queues) == 15
    assert sum(int(n["status"]["capacity"][GPU]) for n in tr.nodes) == 3205
    assert submit(tr.jobs[0]) == 0


def test_shipped_traces_load() -> None:
    assert len(load_trace("openb").jobs) == 8152
    k = load_trace("kalos")
    assert len(k.jobs) == 319 and sum(j["spec"]["minAvailable"] == 128 for j in k.jobs) == 38
    d = load_trace("dlrm", limit=2000)
    assert len(d.jobs) == 2000


def test_builtin_scenario_is_the_documented_philly_gang_day() -> None:
    a = builtin_scenario()
    assert BUILTIN_DAYS == 1
    assert a.name == "builtin-philly" and a.format == "philly"
    assert len(a.jobs) == 428 and len(a.queues) == 10 and len(a.nodes) == 16
    assert sum(int(n["status"]["capacity"]["nvidia.com/gpu"]) for n in a.nodes) == 128
    gangs = [j for j in a.jobs if j["spec"]["minAvailable"] > 1]
    assert len(gangs) == 19 and max(j["spec"]["minAvailable"] for j in gangs) == 16
    assert submit(a.jobs[0]) == 0 and submit(a.jobs[-1]) < 86400
    assert "2017-12-12" in a.notes[0] and "19 of them gangs" in a.notes[0]
    assert a.config is not None
    conf = load_scheduler_conf(a.config)
    assert list(conf.actions) == ["enqueue", "allocate", "backfill", "reclaim"]
    assert "proportion" in conf.plugin_names()
    day = builtin_scenario(score="demand", gpus=512)
    assert len(day.jobs) == 1007 and len(day.queues) == 7 and "2017-10-08" in day.notes[0]
    two = builtin_scenario(days=2, gpus=None, score="demand")
    assert len(two.jobs) == 2817 and len(two.queues) == 10 and len(two.nodes) == 552
    assert sum(t["replicas"] for j in two.jobs for t in j["spec"]["tasks"]) == 2854
    assert sum(j["spec"]["minAvailable"] > 1 for j in two.jobs) == 25
    b = builtin_scenario()
    assert json.dumps(a.objects()) == json.dumps(b.objects())
    with pytest.raises(TraceError):
        builtin_scenario(0)
    with pytest.raises(TraceError, match="unknown window score"):
        builtin_scenario(score="busiest")


@pytest.mark.parametrize(("old", "new", "column", "expected"), [
    ("195.0,16,", "195.0,١٦,", "num_gpus", "an integer"),
    ("195.0,16,", "195.0,100000,", "num_gpus", "an integer from 0 to 10,000"),
    ("195.0,16,", "1e308,16,", "duration", "at most 2562047h"),
    ("195.0,16,", "nan,16,", "duration", "a number"),
    ("195.0,16,", "١٩٥,16,", "duration", "a number"),
])
def test_philly_rows_with_absurd_or_non_ascii_numbers_are_refused(tmp_path: Path, old: str, new: str, column: str,
                                                                  expected: str) -> None:
    path = write(tmp_path, "philly.csv", PHILLY.replace(old, new, 1))
    with pytest.raises(TraceError) as e:
        load_trace(path, "philly", nodes=write(tmp_path, "m.csv", PHILLY_REVISED))
    assert (e.value.line, e.value.column) == (5, column)
    assert expected in str(e.value)


def test_a_machine_with_more_gpus_than_a_node_can_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"m.csv:2: column 'number of GPUs': got '1000000000'; expected an integer "
                                         r"from 0 to 1,024"):
        load_nodes(write(tmp_path, "m.csv", PHILLY_REVISED.replace("0,m0,8", "0,m0,1000000000")))
