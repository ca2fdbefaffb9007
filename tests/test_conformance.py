"""Upstream Volcano's scheduling unit tests, converted to manifests, run in-process.

Each case under ``tests/data/conformance/<case>/`` holds ``cluster.yaml`` (the cluster before
the first session), ``scheduler.yaml`` (volcano-scheduler.conf) and ``expected.yaml`` (what
the upstream test asserts: exact binds and evictions, pipelined pods, PodGroup phases). The
comparison rules are those of the conformance runner: see the README next to the cases.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.api.manifest import load_manifest_file
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf_file
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

CASES = Path(__file__).parent / "data" / "conformance"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


def _group_of_pods(cluster: Path) -> dict[str, str]:
    out = {}
    for doc in yaml.safe_load_all(cluster.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "Pod":
            md = doc["metadata"]
            grp = (md.get("annotations") or {}).get("scheduling.k8s.io/group-name")
            if grp:
                out[f"{md['namespace']}/{md['name']}"] = f"{md['namespace']}/{grp}"
    return out


def run_case(case: Path) -> dict[str, Any]:
    registry = default_registry()
    config = load_scheduler_conf_file(case / "scheduler.yaml", known_actions=registry.action_names,
                                      known_plugins=registry.plugin_names)
    cache = SchedulerCache.from_objects(load_manifest_file(case / "cluster.yaml"))
    expected = yaml.safe_load((case / "expected.yaml").read_text()) or {}
    return schedule_objects(cache, config, registry, sessions=int(expected.get("sessions", 1)), seed=0)


def differences(case: Path, got: dict[str, Any]) -> list[str]:
    exp = yaml.safe_load((case / "expected.yaml").read_text()) or {}
    diffs = []
    if "binds" in exp and got["binds"] != (exp["binds"] or {}):
        diffs.append(f"binds {got['binds']} != {exp['binds']}")
    if "bind_count" in exp and len(got["binds"]) != exp["bind_count"]:
        diffs.append(f"bind count {len(got['binds'])} != {exp['bind_count']}")
    if "evictions" in exp and collections.Counter(got["evictions"]) != collections.Counter(exp["evictions"] or []):
        diffs.append(f"evictions {got['evictions']} != {exp['evictions']}")
    if "eviction_count" in exp and len(got["evictions"]) != exp["eviction_count"]:
        diffs.append(f"eviction count {len(got['evictions'])} != {exp['eviction_count']}")
    for pod, node in (exp.get("pipelined") or {}).items():
        if got["pipelined"].get(pod) != node:
            diffs.append(f"pipelined {pod}: {got['pipelined'].get(pod)} != {node}")
    if exp.get("pipelined_podgroups"):
        group_of = _group_of_pods(case / "cluster.yaml")
        for pg, allowed in exp["pipelined_podgroups"].items():
            mine = {p: n for p, n in got["pipelined"].items() if group_of.get(p) == pg}
            if not mine or any(n not in allowed for n in mine.values()):
                diffs.append(f"pipelined podgroup {pg}: {mine} not on {allowed}")
    for pg, phase in (exp.get("podgroup_phases") or {}).items():
        if got["podgroups"].get(pg) != phase:
            diffs.append(f"podgroup {pg}: {got['podgroups'].get(pg)} != {phase}")
    return diffs


@pytest.mark.parametrize("case", CASE_NAMES)
def test_upstream_case(case: str) -> None:
    path = CASES / case
    assert differences(path, run_case(path)) == []


@pytest.mark.parametrize("case", CASE_NAMES[:5])
def test_upstream_case_is_deterministic(case: str) -> None:
    path = CASES / case
    assert run_case(path) | {"stats": None} == run_case(path) | {"stats": None}
