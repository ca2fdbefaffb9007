"""Specification tests for ``pyvolcano.conf.checked``: one loader for every reader of a
configuration, with plugin and action arguments checked and their field paths named."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.conf import ConfigError, default_configuration, load_configuration
from pyvolcano.framework.registry import default_registry

REGISTRY = default_registry()


def error_of(text: str, source: str = "sched.conf") -> str:
    with pytest.raises(ConfigError) as info:
        load_configuration(REGISTRY, text=text, source=source)
    return str(info.value)


def test_no_text_and_no_path_is_upstreams_default() -> None:
    assert load_configuration(REGISTRY) == default_configuration()


def test_a_bad_plugin_argument_names_the_tier_the_plugin_and_the_argument() -> None:
    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: binpack\n"
            "    arguments: {binpack.weight: lots}\n")
    assert error_of(text) == ("sched.conf: tiers[1].plugins[0].arguments.binpack.weight: got 'lots' (str); "
                              "expected an integer")


def test_a_bad_action_argument_names_its_configurations_entry() -> None:
    text = ("actions: allocate, preempt\ntiers:\n- plugins:\n  - name: gang\nconfigurations:\n- name: preempt\n"
            "  arguments: {minCandidateNodesAbsolute: many}\n")
    assert error_of(text) == ("sched.conf: configurations[0].arguments.minCandidateNodesAbsolute: got 'many' (str); "
                              "expected an integer")


def test_arguments_of_an_action_not_run_are_not_checked() -> None:
    text = ("actions: allocate\ntiers:\n- plugins:\n  - name: gang\nconfigurations:\n- name: preempt\n"
            "  arguments: {minCandidateNodesAbsolute: many}\n")
    assert load_configuration(REGISTRY, text=text).actions == ("allocate",)


def test_unknown_names_are_checked_against_the_registry() -> None:
    assert error_of("actions: allocate\ntiers:\n- plugins:\n  - name: gangs\n").startswith(
        "sched.conf: tiers[0].plugins[0].name: unknown plugin 'gangs'")


def test_a_file_is_named_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "sched.conf"
    path.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.cpu: x}\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_configuration(REGISTRY, path)
    assert str(info.value).startswith(f"{path}: tiers[0].plugins[0].arguments.binpack.cpu: got 'x' (str)")
    with pytest.raises(ConfigError, match="file not found"):
        load_configuration(REGISTRY, tmp_path / "missing.conf")


def test_text_is_named_by_its_source() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.cpu: x}\n",
                       source="cluster.yaml: document 0 (ConfigMap volcano-system/volcano-scheduler-configmap): "
                              "data.volcano-scheduler.conf")
    assert message.startswith("cluster.yaml: document 0 (ConfigMap volcano-system/volcano-scheduler-configmap): "
                              "data.volcano-scheduler.conf: tiers[0].plugins[0].arguments.binpack.cpu: ")



@pytest.mark.parametrize(("plugin", "argument", "value", "expected"), [
    ("nodegroup", "strict", "yes please", "true or false"),
    ("nodegroup", "enablePreferredOrder", "[1]", "true or false"),
    ("task-topology", "task-topology.weight", "heavy", "an integer"),
    ("pdb", "enableGangEviction", "3", "true or false"),
    ("cdp", "enableGangEviction", "soon", "true or false"),
])
def test_a_bad_argument_of_the_budget_quota_group_and_topology_plugins_names_its_field(
        plugin: str, argument: str, value: str, expected: str) -> None:
    text = (f'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: predicates\n'
            f'  - name: {plugin}\n    arguments:\n      {argument}: {value}\n')
    message = error_of(text)
    assert message.startswith(f"sched.conf: tiers[1].plugins[1].arguments.{argument}: got ")
    assert message.endswith(f"expected {expected}")
