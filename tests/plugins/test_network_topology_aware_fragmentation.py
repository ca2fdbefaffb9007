"""network-topology-aware's ``hypernode.fragmentation-aware.enable``: off (the default), nothing
changes, not even a random draw; on, only choices among equal scores change, so upstream's
network-topology allocate cases (tests/data/conformance_topology) still hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.api.manifest import load_manifest_file
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.plugins.network_topology_aware import FRAGMENTATION_AWARE, NAME
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry
from test_conformance_topology import CASE_NAMES, CASES, differences

SEEDS = (0, 1, 2)


def with_option(case: Path, value: bool | None) -> str:
    """The case's scheduler configuration with the option set on network-topology-aware (None: as it is)."""
    conf = yaml.safe_load((case / "scheduler.yaml").read_text())
    if value is not None:
        for tier in conf["tiers"]:
            for plugin in tier["plugins"]:
                if plugin["name"] == NAME:
                    plugin.setdefault("arguments", {})[FRAGMENTATION_AWARE] = value
    return yaml.safe_dump(conf)


def run(case: Path, conf: str, seed: int) -> tuple[dict[str, Any], SchedulerCache]:
    registry = default_registry()
    config = load_scheduler_conf(conf)
    cache = SchedulerCache.from_objects(load_manifest_file(case / "cluster.yaml"))
    exp = yaml.safe_load((case / "expected.yaml").read_text()) or {}
    return schedule_objects(cache, config, registry, sessions=int(exp.get("sessions", 1)), seed=seed), cache


def decisions(out: dict[str, Any]) -> str:
    """Everything ``schedule`` returns but the wall-clock session times."""
    out = {**out, "stats": {k: v for k, v in out["stats"].items() if k != "session_seconds"}}
    return json.dumps(out, sort_keys=True, default=str)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_option_off_leaves_every_output_of_the_upstream_topology_cases_unchanged(name: str) -> None:
    case = CASES / name
    for seed in SEEDS:
        default, _ = run(case, with_option(case, None), seed)
        off, _ = run(case, with_option(case, False), seed)
        assert decisions(off) == decisions(default)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_option_on_still_meets_the_expectations_of_the_upstream_topology_cases(name: str) -> None:
    case = CASES / name
    for seed in SEEDS:
        got, cache = run(case, with_option(case, True), seed)
        assert differences(case, got, cache) == []
