"""The bounded HyperNode search chooses what the exhaustive search chooses.

``SchedulerOptions.bounded_hypernode_search`` dry-runs candidates best-score first and stops
early; the HyperNodes chosen must be those of the exhaustive search (every candidate dry-run, as
upstream) whenever the choice is not a random tie-break. Racks here carry distinct loads, so the
bin-packing scores of the HyperNodes differ and no choice between HyperNodes is random.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import dump, node, pod, podgroup, queue
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry
from topology_builders import hypernode

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""


def scenario(mode: str, tier: int | None) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [queue("q")]
    racks, per_rack = 8, 4
    for r in range(racks):
        names = [f"r{r}-n{i}" for i in range(per_rack)]
        docs += [node(n, cpu="16", memory="64Gi") for n in names]
        docs.append(hypernode(f"rack-{r}", 1, nodes=tuple(names)))
        # rack r starts with r cpus in use on its first node: every rack scores differently
        if r:
            docs.append(podgroup(f"busy-{r}", min_member=1, phase="Running"))
            docs.append(pod(f"busy-{r}", f"busy-{r}", cpu=str(r), memory="1Gi", node_name=names[0], phase="Running"))
    for a in range(racks // 2):
        docs.append(hypernode(f"agg-{a}", 2, children=(f"rack-{2 * a}", f"rack-{2 * a + 1}")))
    for j, size in enumerate((4, 6, 3, 8, 2, 5)):
        nt: dict[str, Any] = {"mode": mode}
        if tier is not None:
            nt["highestTierAllowed"] = tier
        docs.append(podgroup(f"g{j}", min_member=size, networkTopology=nt))
        docs += [pod(f"g{j}-{k}", f"g{j}", cpu="12", memory="8Gi", labels={"volcano.sh/task-spec": "worker"})
                 for k in range(size)]
    return docs


def placements(docs: list[dict[str, Any]], *, bounded: bool, seed: int) -> dict[str, frozenset[str]]:
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs)),
                                        SchedulerOptions(bounded_hypernode_search=bounded))
    registry = default_registry()
    out = schedule_objects(cache, load_scheduler_conf(CONF), registry, sessions=1, seed=seed)
    tree = cache.hypernode_tree
    racks: dict[str, set[str]] = {}
    for p, n in out["binds"].items():
        racks.setdefault(p.rsplit("-", 1)[0], set()).add(tree.ancestor(n, 1) or "")
    return {g: frozenset(r) for g, r in racks.items()}


@pytest.mark.parametrize(("mode", "tier"), [("hard", 1), ("hard", 2), ("soft", None)])
@pytest.mark.parametrize("seed", [0, 5])
def test_bounded_search_picks_the_hypernodes_of_the_exhaustive_search(mode: str, tier: int | None, seed: int) -> None:
    docs = scenario(mode, tier)
    bounded = placements(docs, bounded=True, seed=seed)
    assert bounded  # something was placed
    assert bounded == placements(docs, bounded=False, seed=seed)
