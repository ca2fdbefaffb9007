"""The configurations that name upstream's newer plugins load: those docs/plugins.md shows (one
at least for each plugin), those of upstream's user guides and design documents, upstream's
scheduler configurations under its example/ directory (when VOLCANO_EXAMPLES_DIR names one) and
examples/plugins.conf."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "plugins.md"
PLUGINS = ("tdm", "task-topology", "numa-aware", "cdp", "rescheduling", "usage", "pdb", "nodegroup", "extender",
           "resourcequota")
"""docs/plugins.md's plugins, in the order upstream registers them."""

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
    assert set(config.plugin_names()) & set(PLUGINS)


def _doc_configurations() -> list[str]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    return [b for b in blocks if b.startswith("actions:")]


def test_docs_show_a_configuration_for_each_plugin() -> None:
    named = {p for text in _doc_configurations() for p in PLUGINS if f"name: {p}" in text}
    assert named == set(PLUGINS)


@pytest.mark.parametrize("text", _doc_configurations())
def test_every_configuration_of_the_docs_loads(text: str) -> None:
    config = load_configuration(default_registry(), text=text, source="docs/plugins.md")
    assert any(p in config.plugin_names() for p in PLUGINS)


def _configurations_in(path: Path) -> list[str]:
    """Scheduler configurations a file holds: a whole file that is one, or the values of a
    ConfigMap's data that are."""
    try:
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8", errors="replace")))
    except yaml.YAMLError:
        return []
    out = []
    for doc in docs:
        if isinstance(doc, dict) and "actions" in doc and "tiers" in doc:
            out.append(yaml.safe_dump(doc))
        elif isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
            out += [v for v in (doc.get("data") or {}).values() if isinstance(v, str) and "actions:" in v]
    return out


def test_upstream_example_configurations_naming_these_plugins_load() -> None:
    root = os.environ.get("VOLCANO_EXAMPLES_DIR")
    if not root:
        pytest.skip("VOLCANO_EXAMPLES_DIR is not set (it names the example/ directory of an upstream Volcano checkout)")
    loaded = 0
    for path in sorted(Path(root).rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".conf") or not path.is_file():
            continue
        for conf in _configurations_in(path):
            if any(f"name: {p}" in conf for p in PLUGINS):
                load_configuration(default_registry(), text=conf, source=str(path))
                loaded += 1
    if not loaded:
        pytest.skip(f"no scheduler configuration under {root} names {', '.join(PLUGINS)}")


def test_the_example_configuration_loads() -> None:
    config = load_configuration(default_registry(), ROOT / "examples" / "plugins.conf")
    assert {"pdb", "nodegroup", "resourcequota", "cdp", "task-topology"} <= set(config.plugin_names())
