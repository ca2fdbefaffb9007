"""openb trace loaders: conversions as the paper artifact does them, and precise errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pyvolcano.gpu.openb import (
    DEFAULT_NODES,
    DEFAULT_PODS,
    TraceError,
    TraceNode,
    default_trace_dir,
    load_nodes,
    load_pods,
)

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_nodes_load_with_model_and_gpu_count(tmp_path: Path) -> None:
    path = write(tmp_path, "n.csv", NODE_HEADER + "a,64000,262144,2,P100\nb,32000,1024,0,\n")
    assert load_nodes(path) == [TraceNode("a", 64000, 262144, 2, "P100"), TraceNode("b", 32000, 1024, 0, "")]


def test_pods_follow_the_artifact_conversion(tmp_path: Path) -> None:
    path = write(tmp_path, "p.csv", POD_HEADER + "\n".join([
        "cpu,1000,10,0,500,,LS",               # no GPU: gpu_milli ignored
        "share,2000,10,1,460,V100M32|V100M16|,BE",
        "big,3000,10,1,1500,,LS",              # above 1000 counts as a whole GPU
        "multi,4000,10,8,1000,,LS",
    ]) + "\n")
    pods = {p.name: p for p in load_pods(path)}
    assert (pods["cpu"].num_gpu, pods["cpu"].gpu_milli, pods["cpu"].total_milli) == (0, 0, 0)
    assert pods["share"].models == ("V100M16", "V100M32") and pods["share"].gpu_milli == 460
    assert pods["big"].gpu_milli == 1000
    assert pods["multi"].total_milli == 8000


def test_five_column_pod_lists_load(tmp_path: Path) -> None:
    path = write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1000,5,2,1000\n")
    assert load_pods(path)[0].models == ()


@pytest.mark.parametrize(("text", "message"), [
    (NODE_HEADER + "a,64000,262144,2,P100\nb,abc,1,1,T4\n",
     "n.csv: line 3: column cpu_milli: got 'abc'; expected an integer"),
    (NODE_HEADER + "a,1,1,-2,T4\n", "line 2: column gpu: got '-2'; expected an integer ≥ 0"),
    (NODE_HEADER + "a,1,1,\u0662,T4\n", "line 2: column gpu: got '\u0662'; expected an integer ≥ 0"),
    (NODE_HEADER + "a,6_4000,1,1,T4\n", "line 2: column cpu_milli: got '6_4000'; expected an integer ≥ 0"),
    (NODE_HEADER + "a,1,1,1,T4\na,1,1,1,T4\n", "line 3: column sn: got 'a' again; expected unique node names"),
    ("sn,cpu_milli,memory_mib,model\na,1,1,T4\n", "line 1: missing column(s) gpu"),
    (NODE_HEADER, "no node rows"),
    ("", "line 1: empty file"),
])
def test_bad_node_files_name_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TraceError, match=re.escape(message)):
        load_nodes(write(tmp_path, "n.csv", text))


def test_multi_gpu_pods_must_take_whole_gpus(tmp_path: Path) -> None:
    path = write(tmp_path, "p.csv", POD_HEADER + "m,1000,1,2,500,,LS\n")
    with pytest.raises(TraceError, match=re.escape("p.csv: line 2: column gpu_milli: got '500' with num_gpu 2; "
                                                   "expected 1000")):
        load_pods(path)


def test_gpu_pods_need_a_share(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=re.escape("column gpu_milli: got '0' with num_gpu 1; expected 1..1000")):
        load_pods(write(tmp_path, "p.csv", POD_HEADER + "m,1000,1,1,0,,LS\n"))


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="file not found"):
        load_pods(tmp_path / "nope.csv")


def test_the_packaged_default_trace_is_the_papers_cluster_and_workload() -> None:
    nodes = load_nodes(default_trace_dir() / DEFAULT_NODES)
    pods = load_pods(default_trace_dir() / DEFAULT_PODS)
    assert len(nodes) == 1213 and sum(n.gpus for n in nodes) == 6212
    assert len(pods) == 8152
    assert sum(p.total_milli for p in pods) == 6086800
    assert (default_trace_dir() / "LICENSE.md").is_file() and (default_trace_dir() / "README.md").is_file()
