"""The configurations that name pdb, nodegroup, resourcequota, cdp and task-topology load: those
of upstream's user guides and design documents, docs/plugins.md's and examples/plugins.conf."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pyvolcano.conf import load_configuration
from pyvolcano.framework.registry import default_registry

ROOT = Path(__file__).resolve().parents[2]

# As upstream's documents give them (docs/user-guide/how_to_use_{cdp,nodegroup,task_topology}_plugin.md,
# docs/design/{pdb-plugin,node-group}.md).
UPSTREAM = {
    "cdp user guide": """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: cdp
- plugins:
  - name: drf
  - name: predicates
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: proportion
  - name: nodeorder
  - name: binpack
""",
    "nodegroup user guide": """
actions: "allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodegroup
    arguments:
      strict: false
""",
    "nodegroup design": """
actions: "allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodegroup
    enableHierarchy: true
    arguments:
      enablePreferredOrder: true
""",
    "task-topology user guide": """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: proportion
  - name: nodeorder
  - name: binpack
""",
    "pdb design": """
actions: "reclaim, preempt, shuffle"
tiers:
- plugins:
  - name: pdb
""",
}


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstreams_configurations_load(name: str) -> None:
    config = load_configuration(default_registry(), text=UPSTREAM[name], source=name)
    assert set(config.plugin_names()) & {"pdb", "nodegroup", "resourcequota", "cdp", "task-topology"}


def _doc_configurations() -> list[str]:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    return [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if block.startswith("actions:")]


@pytest.mark.parametrize("index", range(5))
def test_every_configuration_of_the_plugin_docs_loads(index: int) -> None:
    blocks = _doc_configurations()
    assert len(blocks) == 5
    load_configuration(default_registry(), text=blocks[index], source=f"docs/plugins.md block {index}")


def test_the_example_configuration_loads() -> None:
    config = load_configuration(default_registry(), ROOT / "examples" / "plugins.conf")
    assert {"pdb", "nodegroup", "resourcequota", "cdp", "task-topology"} <= set(config.plugin_names())
