"""allocate with network topology: the HyperNode search of hard jobs and sub-groups, lowest tier
first, packing under the lowest common HyperNode (upstream actions/allocate/allocate.go)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, podgroup, queue, schedule
from topology_builders import TOPOLOGY_CONF, hypernode, sub_group, topology, two_racks

SEEDS = (0, 1, 2, 3, 5, 8, 13)


def cluster(*docs: dict[str, Any], racks: int = 2) -> list[dict[str, Any]]:
    nodes = [node(f"s{r}-n{i}", cpu="2", memory="4Gi") for r in range(racks) for i in (1, 2)]
    hns = two_racks() if racks == 2 else [
        *(hypernode(f"s{r}", 1, nodes=(f"s{r}-n1", f"s{r}-n2")) for r in range(racks)),
        hypernode("top", 2, children=tuple(f"s{r}" for r in range(racks)))]
    return [queue("q"), *nodes, *hns, *docs]


def gang(n: int, pg: str = "pg", **labels: str) -> list[dict[str, Any]]:
    return [pod(f"p{i}", pg, cpu="2", memory="4Gi", labels=dict(labels)) for i in range(n)]


def racks_of(binds: dict[str, str]) -> set[str]:
    return {n.split("-")[0] for n in binds.values()}


def run(*docs: dict[str, Any], seed: int = 0) -> dict[str, str]:
    out = schedule(*docs, conf=TOPOLOGY_CONF, seed=seed)
    return dict(out["binds"])


def test_hard_job_never_crosses_its_tier() -> None:
    assert run(*cluster(podgroup("pg", min_member=3, networkTopology=topology("hard", 1)), *gang(3))) == {}


def test_hard_job_spans_racks_when_its_tier_allows() -> None:
    assert len(run(*cluster(podgroup("pg", min_member=3, networkTopology=topology("hard", 2)), *gang(3)))) == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_hard_job_stays_inside_one_tier1_hypernode(seed: int) -> None:
    binds = run(*cluster(podgroup("pg", min_member=2, networkTopology=topology("hard", 1)), *gang(2)), seed=seed)
    assert len(binds) == 2 and len(racks_of(binds)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_hard_job_beyond_min_member_stays_in_the_hypernode_of_its_first_pods(seed: int) -> None:
    binds = run(*cluster(podgroup("pg", min_member=1, networkTopology=topology("hard", 1)), *gang(2)), seed=seed)
    assert len(binds) == 2 and len(racks_of(binds)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_soft_job_is_tried_in_the_lowest_tier_first(seed: int) -> None:
    binds = run(*cluster(podgroup("pg", min_member=2, networkTopology=topology("soft", 0)), *gang(2)), seed=seed)
    assert len(binds) == 2 and len(racks_of(binds)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_soft_job_packs_under_the_lca_hypernode(seed: int) -> None:
    # Six one-pod nodes in three racks; four pods fill two racks completely, never three half.
    binds = run(*cluster(podgroup("pg", min_member=4, networkTopology=topology("soft", 0)), *gang(4), racks=3),
                seed=seed)
    assert len(binds) == 4
    per_rack = sorted(sum(1 for n in binds.values() if n.startswith(f"s{r}-")) for r in range(3))
    assert per_rack == [0, 2, 2]


def test_rescheduled_hard_job_stays_under_the_root_of_its_running_pods() -> None:
    running = [pod("r0", "pg", cpu="2", memory="4Gi", node_name="s0-n1", phase="Running")]
    binds = run(*cluster(podgroup("pg", min_member=2, networkTopology=topology("hard", 1)), *running,
                         pod("p", "pg", cpu="2", memory="4Gi")))
    assert binds == {"ns/p": "s0-n2"}


def test_rescheduled_hard_job_cannot_leave_a_full_hypernode() -> None:
    running = [pod(f"r{i}", "pg", cpu="2", memory="4Gi", node_name=f"s0-n{i}", phase="Running") for i in (1, 2)]
    binds = run(*cluster(podgroup("pg", min_member=2, networkTopology=topology("hard", 1)), *running,
                         pod("p", "pg", cpu="2", memory="4Gi")))
    assert binds == {}


@pytest.mark.parametrize("seed", SEEDS)
def test_hard_sub_group_keeps_its_later_pods_with_its_first(seed: int) -> None:
    pg = podgroup("pg", min_member=3, networkTopology=topology("hard", 2),
                  subGroupPolicy=[sub_group("task", "role", nt=topology("hard", 1))])
    binds = run(*cluster(pg, pod("m", "pg", cpu="2", memory="4Gi", labels={"role": "master"}),
                         *gang(2, role="worker")), seed=seed)
    assert len(binds) == 3
    assert len(racks_of({k: v for k, v in binds.items() if k != "ns/m"})) == 1


def test_sub_group_too_big_for_any_allowed_hypernode_blocks_the_gang() -> None:
    pg = podgroup("pg", min_member=3, networkTopology=topology("soft", 0),
                  subGroupPolicy=[sub_group("task", "role", nt=topology("hard", 1))])
    assert run(*cluster(pg, *gang(3, role="worker"))) == {}


def test_unknown_tier_name_allocates_like_a_job_without_topology() -> None:
    pg = podgroup("pg", min_member=3, networkTopology=topology("hard", tier_name="nowhere"))
    assert len(run(*cluster(pg, *gang(3)))) == 3
