"""Topology files become Nodes and a HyperNode tree: the shipped Lingjun fabric and the generic form."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pyvolcano.simulator.traces._common import TraceError
from pyvolcano.simulator.traces.topology import load_topology


def test_lingjun_is_847_hosts_in_119_racks_under_3_aggregation_switches_and_one_spine() -> None:
    topo = load_topology("lingjun")
    assert len(topo.nodes) == 847
    tiers = Counter(h["spec"]["tier"] for h in topo.hypernodes)
    assert tiers == {1: 119, 2: 3, 3: 1}
    assert topo.tier_names == ("rack", "agg", "spine")
    by_name = {h["metadata"]["name"]: h for h in topo.hypernodes}
    racks_of = {name: len(h["spec"]["members"]) for name, h in by_name.items() if h["spec"]["tier"] == 2}
    assert racks_of == {"agg-p10": 48, "agg-p12": 42, "agg-p8": 29}
    assert sum(len(h["spec"]["members"]) for h in topo.hypernodes if h["spec"]["tier"] == 1) == 847
    spine = by_name["spine-g6"]["spec"]
    assert {m["selector"]["exactMatch"]["name"] for m in spine["members"]} == {"agg-p10", "agg-p12", "agg-p8"}
    assert all(m["type"] == "HyperNode" for m in spine["members"])


def test_lingjun_racks_are_the_pair_of_aggregation_and_top_of_rack_switch() -> None:
    topo = load_topology("lingjun")
    node = next(n for n in topo.nodes if n["metadata"]["labels"]["pyvolcano.io/topology-rack"] == "rack-p10-s14")
    labels = node["metadata"]["labels"]
    assert (labels["pyvolcano.io/topology-agg"], labels["pyvolcano.io/topology-spine"]) == ("agg-p10", "spine-g6")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    rack = next(h for h in topo.hypernodes if h["metadata"]["name"] == "rack-p10-s14")
    assert {"type": "Node", "selector": {"exactMatch": {"name": node["metadata"]["name"]}}} in rack["spec"]["members"]


def test_generic_topology_file_builds_the_tree_from_its_columns(tmp_path: Path) -> None:
    f = tmp_path / "topo.csv"
    f.write_text("node,leaf,spine\nn2,leaf-b,spine-a\nn1,leaf-a,spine-a\nn0,leaf-a,spine-a\n")
    topo = load_topology(f, gpus=4, cpu="32", memory="256Gi")
    assert [n["metadata"]["name"] for n in topo.nodes] == ["n0", "n1", "n2"]
    assert [(h["metadata"]["name"], h["spec"]["tier"], h["spec"]["tierName"]) for h in topo.hypernodes] == [
        ("leaf-a", 1, "leaf"), ("leaf-b", 1, "leaf"), ("spine-a", 2, "spine")]
    assert [m["selector"]["exactMatch"]["name"] for m in topo.hypernodes[0]["spec"]["members"]] == ["n0", "n1"]


@pytest.mark.parametrize(("text", "message"), [
    ("host,rack\nn0,r0\n", "header 'host,rack'; expected ip,DSW,PSW,ASW (Lingjun) or node,TIER1"),
    ("node,leaf,spine\nn0,l0,s0\nn1,l0,s1\n", "'l0' lies under both 's0' and 's1'"),
    ("node,leaf,spine\nn0,l0,s0\nn0,l1,s0\n", "node 'n0' is listed twice"),
    ("node,leaf\nN_0,l0\n", "got 'N_0'; expected a DNS-1123 label"),
    ("node,leaf\nn0,l0,x\n", ":2: got 3 columns; expected 2"),
    ("node,leaf\n", "no hosts"),
])
def test_a_bad_topology_file_names_the_file_line_and_what_was_expected(tmp_path: Path, text: str,
                                                                        message: str) -> None:
    f = tmp_path / "topo.csv"
    f.write_text(text)
    with pytest.raises(TraceError) as e:
        load_topology(f)
    assert str(f) in str(e.value) and message in str(e.value)
