"""A network topology's CRD default (``mode: hard``) and bounds, for Jobs and PodGroups, and the
user guide's Jobs admitted as upstream admits them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.store import InMemoryStore
from pyvolcano.store.base import Invalid

GUIDE = Path(__file__).parents[1] / "data" / "network_topology_user_guide.yaml"


def podgroup(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 1, **spec}}


def test_user_guide_jobs_are_admitted_with_hard_mode_kept(store: InMemoryStore) -> None:
    for doc in yaml.safe_load_all(GUIDE.read_text(encoding="utf-8")):
        created = store.create(doc)
        assert created["spec"]["networkTopology"]["mode"] == "hard"


def test_job_topology_mode_defaults_to_hard_also_in_partitions(store: InMemoryStore) -> None:
    [_, job] = yaml.safe_load_all(GUIDE.read_text(encoding="utf-8"))
    del job["spec"]["networkTopology"]["mode"]
    del job["spec"]["tasks"][0]["partitionPolicy"]["networkTopology"]["mode"]
    created = store.create(job)
    assert created["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert created["spec"]["tasks"][0]["partitionPolicy"]["networkTopology"] == {"mode": "hard",
                                                                                  "highestTierAllowed": 1}


def test_podgroup_topology_mode_defaults_to_hard(store: InMemoryStore) -> None:
    created = store.create(podgroup(networkTopology={"highestTierAllowed": 1},
                                    subGroupPolicy=[{"name": "a", "networkTopology": {"highestTierName": "leaf"}},
                                                    {"name": "b", "networkTopology": {"mode": "soft"}}]))
    assert created["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert [sg["networkTopology"] for sg in created["spec"]["subGroupPolicy"]] == [
        {"mode": "hard", "highestTierName": "leaf"}, {"mode": "soft"}]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"networkTopology": {"mode": "strict"}},
     ("spec.networkTopology.mode", 'Unsupported value: "strict": supported values: "hard", "soft"')),
    ({"networkTopology": {"highestTierAllowed": -1}},
     ("spec.networkTopology.highestTierAllowed", "Invalid value: -1: must be greater than or equal to 0")),
    ({"subGroupPolicy": [{"name": "a", "networkTopology": {"mode": "Hard"}}]},
     ("spec.subGroupPolicy[0].networkTopology.mode", 'Unsupported value: "Hard": supported values: "hard", "soft"')),
    ({"networkTopology": {"mode": 1}}, ("spec.networkTopology.mode", "Invalid value: 1: expected a string")),
])
def test_podgroup_topology_bounds_are_the_crds(store: InMemoryStore, spec: dict[str, Any],
                                               expected: tuple[str, str]) -> None:
    with pytest.raises(Invalid) as e:
        store.create(podgroup(**spec))
    assert list(e.value.errors) == [expected]
