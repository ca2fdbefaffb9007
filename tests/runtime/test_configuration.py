"""Specification tests for ``pyvolcano.runtime.configuration``: one loader for every reader of a
configuration, with plugin and action arguments checked and their field paths named."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.conf import ConfigError, default_configuration
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import Registry, default_registry

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


# --------------------------------------------------------------------------- argument keys

def one_plugin(name: str, arguments: str) -> str:
    return f"actions: allocate\ntiers:\n- plugins:\n  - name: {name}\n    arguments: {arguments}\n"


def test_a_typo_in_an_argument_key_is_an_error_naming_the_plugin_and_the_closest_key() -> None:
    assert error_of(one_plugin("binpack", "{binpack.wieght: 2}")) == (
        "sched.conf: tiers[0].plugins[0].arguments.binpack.wieght: plugin binpack has no argument "
        "binpack.wieght; expected one of binpack.weight, binpack.cpu, binpack.memory, binpack.resources, "
        "binpack.resources.<name> (did you mean 'binpack.weight'?)")


def test_a_prefixed_key_with_a_typo_in_its_prefix_is_completed_in_the_suggestion() -> None:
    assert error_of(one_plugin("binpack", "{binpack.resource.nvidia.com/gpu: 2}")).endswith(
        "(did you mean 'binpack.resources.nvidia.com/gpu'?)")


def test_another_plugins_key_names_the_plugin_that_takes_it() -> None:
    assert error_of(one_plugin("nodeorder", "{binpack.weight: 2}")) == (
        "sched.conf: tiers[0].plugins[0].arguments.binpack.weight: plugin nodeorder has no argument "
        "binpack.weight; expected it under plugin binpack, which takes it")


def test_a_plugin_without_arguments_refuses_any() -> None:
    assert error_of(one_plugin("gang", "{gang.weight: 1}")) == (
        "sched.conf: tiers[0].plugins[0].arguments.gang.weight: plugin gang takes no arguments; "
        "expected no 'arguments' for it")


@pytest.mark.parametrize(("plugin", "arguments", "key"), [
    ("deviceshare", "{deviceshare.VGPUEnable: true}", "deviceshare.VGPUEnable"),
    ("deviceshare", "{deviceshare.AscendHAMiVNPUEnable: 'true'}", "deviceshare.AscendHAMiVNPUEnable"),
    ("capacity", "{capacity.DRAConsumableCapacityEnable: true}", "capacity.DRAConsumableCapacityEnable"),
])
def test_upstream_keys_pyvolcano_does_not_implement_are_refused_with_what_to_do(
        plugin: str, arguments: str, key: str) -> None:
    message = error_of(one_plugin(plugin, arguments))
    assert message.startswith(f"sched.conf: tiers[0].plugins[0].arguments.{key}: plugin {plugin}: {key} is not "
                              "implemented in pyvolcano yet (")
    assert message.endswith("; expected the key removed or set to false")


def test_an_unimplemented_switch_set_to_false_is_taken() -> None:
    text = one_plugin("deviceshare", "{deviceshare.VGPUEnable: false, deviceshare.AscendMindClusterVNPUEnable: 'F'}")
    config = load_configuration(REGISTRY, text=text)
    assert config.warnings == ()


def test_gpu_exclusive_rules_are_refused_unless_empty() -> None:
    assert "deviceshare.GPUExclusiveRules is not implemented in pyvolcano yet" in error_of(
        one_plugin("deviceshare", "{deviceshare.GPUExclusiveRules: [{team: a}]}"))
    load_configuration(REGISTRY, text=one_plugin("deviceshare", "{deviceshare.GPUExclusiveRules: []}"))


def test_a_key_accepted_without_effect_is_a_warning_kept_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    config = load_configuration(REGISTRY, text=one_plugin("deviceshare", "{deviceshare.NodeLockEnable: true}"),
                                source="sched.conf")
    expected = ("sched.conf: tiers[0].plugins[0].arguments.deviceshare.NodeLockEnable: plugin deviceshare: "
                "deviceshare.NodeLockEnable is accepted without effect (pyvolcano takes no node lock before "
                "binding a GPU pod; placements are the same)")
    assert config.warnings == (expected,)
    assert [r.getMessage() for r in caplog.records if r.name == "pyvolcano.conf"] == [expected]


def test_an_unknown_action_argument_is_an_error_naming_its_configurations_entry() -> None:
    text = ("actions: allocate, preempt\ntiers:\n- plugins:\n  - name: gang\nconfigurations:\n- name: preempt\n"
            "  arguments: {minCandidateNodesPercentag: 5}\n")
    assert error_of(text) == (
        "sched.conf: configurations[0].arguments.minCandidateNodesPercentag: action preempt has no argument "
        "minCandidateNodesPercentag; expected one of predicateErrorCacheEnable, enableTopologyAwarePreemption, "
        "topologyAwarePreemptWorkerNum, minCandidateNodesPercentage, minCandidateNodesAbsolute, "
        "maxCandidateNodesAbsolute (did you mean 'minCandidateNodesPercentage'?)")


def test_an_upstream_plugin_pyvolcano_lacks_is_refused_by_name_as_not_implemented_yet() -> None:
    from pyvolcano.actions import BUILTIN_ACTIONS
    from pyvolcano.plugins import BUILTIN_PLUGINS, UPSTREAM_PLUGINS

    registry = Registry(BUILTIN_PLUGINS, BUILTIN_ACTIONS, upstream_plugins=(*UPSTREAM_PLUGINS, "next-plugin"))
    assert registry.unimplemented_plugins == ["next-plugin"]
    with pytest.raises(ConfigError) as info:
        load_configuration(registry, text="actions: allocate\ntiers:\n- plugins:\n  - name: next-plugin\n",
                           source="sched.conf")
    assert str(info.value) == (
        "sched.conf: tiers[0].plugins[0].name: upstream Volcano's plugin 'next-plugin' is not implemented in "
        "pyvolcano yet; expected the plugin entry removed (docs/configuration.md lists the plugins pyvolcano "
        "implements)")


def test_every_plugin_upstream_registers_is_implemented() -> None:
    assert REGISTRY.unimplemented_plugins == []


CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "conformance"


@pytest.mark.parametrize("case", sorted(p.name for p in CONFORMANCE.iterdir() if p.is_dir()))
def test_every_conformance_case_configuration_passes_the_key_check(case: str) -> None:
    assert load_configuration(REGISTRY, CONFORMANCE / case / "scheduler.yaml").warnings == ()


UPSTREAM = Path(__file__).resolve().parents[1] / "data" / "upstream_conf"
# What each of upstream's configurations (its chart's, its user guides') needs beyond what every
# pyvolcano has: a plugin, or a plugin's argument key. It loads once pyvolcano has that, and is
# refused naming it until then.
UPSTREAM_NEEDS: dict[str, tuple[str, str | None] | None] = {
    "chart-volcano-scheduler.conf": None,
    "chart-volcano-scheduler-ci.conf": ("predicates", "predicate.DynamicResourceAllocationEnable"),
    "guide-capacity-hierarchy.conf": None,
    "guide-resource-strategy-fit.conf": None,
    "guide-dra.conf": ("predicates", "predicate.DynamicResourceAllocationEnable"),
    "guide-vgpu.conf": ("deviceshare", "deviceshare.VGPUEnable"),
    "guide-task-topology.conf": ("task-topology", None),
}


def _has(need: tuple[str, str | None]) -> bool:
    plugin, key = need
    keys = REGISTRY.plugin_keys(plugin) if plugin in REGISTRY.plugin_names else None
    return keys is not None and (key is None or keys.honours(key))


def test_every_upstream_configuration_is_listed() -> None:
    assert sorted(p.name for p in UPSTREAM.iterdir()) == sorted(UPSTREAM_NEEDS)


@pytest.mark.parametrize("name", sorted(UPSTREAM_NEEDS))
def test_upstreams_configurations_load_or_are_refused_naming_what_is_not_implemented(name: str) -> None:
    need = UPSTREAM_NEEDS[name]
    if need is None or _has(need):
        assert load_configuration(REGISTRY, UPSTREAM / name).warnings == ()
        return
    with pytest.raises(ConfigError) as info:
        load_configuration(REGISTRY, UPSTREAM / name)
    plugin, key = need
    wanted = f"{key} is not implemented" if key else f"plugin {plugin!r} is not implemented"
    assert f"{wanted} in pyvolcano yet" in str(info.value)


def test_a_metrics_section_nothing_reads_is_a_warning() -> None:
    from pyvolcano.actions import BUILTIN_ACTIONS
    from pyvolcano.plugins import BUILTIN_PLUGINS

    without_readers = Registry({k: v for k, v in BUILTIN_PLUGINS.items() if k not in ("usage", "rescheduling")},
                               BUILTIN_ACTIONS)
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\nmetrics:\n  type: prometheus\n  address: http://p\n"
    assert load_configuration(without_readers, text=text, source="sched.conf").warnings == (
        "sched.conf: metrics: accepted without effect (the node-usage metrics source feeds upstream's usage and "
        "rescheduling plugins, which pyvolcano does not implement yet)",)
    assert load_configuration(REGISTRY, text=text, source="sched.conf").warnings == ()
