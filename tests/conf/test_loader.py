"""Specification tests for ``pyvolcano.conf.loader`` (upstream ``UnmarshalSchedulerConf`` rules).

Two conformance-case ``scheduler.yaml`` files are embedded verbatim below (tests never read
``../shared``): ``nodeorder-preferred-node-affinity`` and ``preempt-preemption-policy-never``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pyvolcano.conf import (
    ENABLE_FLAGS,
    FLAG_DEFAULTS,
    ActionConfiguration,
    ConfigError,
    PluginOption,
    SchedulerConfiguration,
    Tier,
    load_scheduler_conf,
    load_scheduler_conf_file,
)

SRC = "sched.conf"
KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle")
KNOWN_PLUGINS = ("gang", "priority", "conformance", "drf", "proportion", "predicates", "nodeorder")
DEFAULTED_FLAGS = [f for f in ENABLE_FLAGS if f not in ("enableHierarchy", "enabledClusterOrder")]

NODEORDER_PREFERRED_NODE_AFFINITY = """\
actions: allocate
tiers:
- plugins:
  - name: gang
    enableJobOrder: false
    enableHierarchy: false
    enableJobReady: true
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: false
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: false
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
  - name: nodeorder
    enableJobOrder: false
    enableHierarchy: false
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: false
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: true
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: false
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 0
      balancedresource.weight: 0
      nodeaffinity.weight: 10
      tainttoleration.weight: 0
      podaffinity.weight: 0
      podtopologyspread.weight: 0
      imagelocality.weight: 0
"""

PREEMPT_PREEMPTION_POLICY_NEVER = """\
actions: preempt
tiers:
- plugins:
  - name: conformance
    enableJobOrder: false
    enableHierarchy: false
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: true
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: false
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
  - name: gang
    enableJobOrder: false
    enableHierarchy: false
    enableJobReady: false
    enableJobPipelined: true
    enableTaskOrder: false
    enablePreemptable: true
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: true
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
  - name: priority
    enableJobOrder: true
    enableHierarchy: false
    enableJobReady: false
    enableJobPipelined: true
    enableTaskOrder: true
    enablePreemptable: true
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: false
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: true
    enabledOverused: false
    enabledAllocatable: false
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
  - name: proportion
    enableJobOrder: false
    enableHierarchy: false
    enableJobReady: false
    enableJobPipelined: false
    enableTaskOrder: false
    enablePreemptable: false
    enableReclaimable: false
    enablePreemptive: false
    enableQueueOrder: true
    enabledClusterOrder: false
    enablePredicate: false
    enableBestNode: false
    enableNodeOrder: false
    enableTargetJob: false
    enableReservedNodes: false
    enableJobEnqueued: false
    enabledVictim: false
    enableJobStarving: false
    enabledOverused: true
    enabledAllocatable: true
    enabledHyperNodeOrder: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
    enabledHyperNodeGradient: false
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: false
"""


def load(text: str, **kwargs: object) -> SchedulerConfiguration:
    return load_scheduler_conf(text, source=SRC, **kwargs)  # type: ignore[arg-type]


def error_of(text: str, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as info:
        load(text, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{SRC}: ")
    return message


def one_plugin(entry: str) -> str:
    """A configuration with one tier holding one plugin entry (``entry`` is the YAML body)."""
    body = "\n".join("    " + line for line in entry.splitlines())
    return f"actions: allocate\ntiers:\n- plugins:\n  - name: gang\n{body}\n"


def only_option(text: str) -> PluginOption:
    conf = load(text)
    assert len(conf.tiers) == 1 and len(conf.tiers[0].plugins) == 1
    return conf.tiers[0].plugins[0]


# --------------------------------------------------------------------------- enable flags


def test_enable_flags_are_the_25_upstream_keys_in_upstream_spelling() -> None:
    assert len(ENABLE_FLAGS) == 25
    assert len(set(ENABLE_FLAGS)) == 25
    assert ENABLE_FLAGS[0] == "enableJobOrder"
    assert ENABLE_FLAGS[-1] == "enabledHyperNodeGradient"
    for spelled_with_d in ("enabledClusterOrder", "enabledVictim", "enabledOverused", "enabledAllocatable"):
        assert spelled_with_d in ENABLE_FLAGS
    assert "enablePreemptive" in ENABLE_FLAGS


@pytest.mark.parametrize("flag", DEFAULTED_FLAGS)
def test_missing_enable_flag_defaults_to_true(flag: str) -> None:
    option = only_option(one_plugin(""))
    assert option.enabled(flag) is True


@pytest.mark.parametrize("flag", ENABLE_FLAGS)
def test_null_enable_flag_defaults_like_missing(flag: str) -> None:
    option = only_option(one_plugin(f"{flag}: null"))
    assert option.enabled(flag) is FLAG_DEFAULTS[flag]


def test_enabled_cluster_order_not_defaulted() -> None:
    assert only_option(one_plugin("")).enabled("enabledClusterOrder") is False
    assert only_option(one_plugin("enabledClusterOrder: true")).enabled("enabledClusterOrder") is True


def test_enable_hierarchy_not_defaulted() -> None:
    assert only_option(one_plugin("")).enabled("enableHierarchy") is False
    assert only_option(one_plugin("enableHierarchy: true")).enabled("enableHierarchy") is True


def test_only_hierarchy_and_cluster_order_escape_upstream_defaulting() -> None:
    assert {f for f, v in FLAG_DEFAULTS.items() if not v} == {"enableHierarchy", "enabledClusterOrder"}
    assert set(FLAG_DEFAULTS) == set(ENABLE_FLAGS)


@pytest.mark.parametrize("flag", ENABLE_FLAGS)
def test_explicit_false_flag_is_kept(flag: str) -> None:
    option = only_option(one_plugin(f"{flag}: false"))
    assert option.enabled(flag) is False
    assert all(option.enabled(f) is FLAG_DEFAULTS[f] for f in ENABLE_FLAGS if f != flag)


def test_every_flag_is_present_after_loading() -> None:
    option = only_option(one_plugin("enablePreemptable: false"))
    assert tuple(option.flags) == ENABLE_FLAGS
    assert all(isinstance(v, bool) for v in option.flags.values())


def test_enabled_with_unknown_flag_name_raises_value_error() -> None:
    option = only_option(one_plugin(""))
    with pytest.raises(ValueError, match="unknown plugin option flag 'enableJobOrdr'"):
        option.enabled("enableJobOrdr")


def test_non_bool_flag_is_error_naming_path_value_and_type() -> None:
    text = (
        "actions: allocate\n"
        "tiers:\n"
        "- plugins:\n  - name: priority\n"
        "- plugins:\n  - name: drf\n  - name: gang\n  - name: nodeorder\n    enableJobOrder: 'yes'\n"
    )
    assert (
        error_of(text)
        == "sched.conf: tiers[1].plugins[2].enableJobOrder: got 'yes' (str); expected true or false"
    )


@pytest.mark.parametrize(
    ("literal", "shown"), [("1", "1 (int)"), ("'true'", "'true' (str)"), ("[true]", "[True] (list)")]
)
def test_flag_that_is_not_a_yaml_bool_is_error(literal: str, shown: str) -> None:
    message = error_of(one_plugin(f"enableJobReady: {literal}"))
    assert message == f"sched.conf: tiers[0].plugins[0].enableJobReady: got {shown}; expected true or false"


def test_yaml_1_1_unquoted_yes_is_a_bool_like_upstream_yaml_v2() -> None:
    assert only_option(one_plugin("enableJobOrder: no")).enabled("enableJobOrder") is False


# --------------------------------------------------------------------------- plugin entries


def test_unknown_plugin_key_is_error_with_suggestion() -> None:
    message = error_of(one_plugin("enableJobOrdr: false"))
    assert message == (
        "sched.conf: tiers[0].plugins[0].enableJobOrdr: unknown key in plugin 'gang'; "
        "expected 'name', 'arguments' or an enable flag (did you mean 'enableJobOrder'?)"
    )


def test_unknown_plugin_key_with_wrong_prefix_suggests_upstream_spelling() -> None:
    assert "(did you mean 'enabledVictim'?)" in error_of(one_plugin("enableVictim: false"))


def test_unknown_plugin_key_without_close_match_has_no_suggestion() -> None:
    message = error_of(one_plugin("weight: 3"))
    assert message.endswith("expected 'name', 'arguments' or an enable flag")


def test_plugin_entry_must_be_a_mapping() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - gang\n")
    assert message == (
        "sched.conf: tiers[0].plugins[0]: got 'gang' (str); "
        "expected a mapping with a 'name' and optional enable flags and arguments"
    )


def test_plugin_without_name_is_error() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - enableJobOrder: true\n")
    assert message == "sched.conf: tiers[0].plugins[0].name: missing; expected a non-empty plugin name string"


@pytest.mark.parametrize(
    ("literal", "problem"), [("''", "empty"), ("3", "got 3 (int)"), ("[gang]", "got ['gang'] (list)")]
)
def test_plugin_name_must_be_non_empty_string(literal: str, problem: str) -> None:
    message = error_of(f"actions: allocate\ntiers:\n- plugins:\n  - name: {literal}\n")
    assert (
        message == f"sched.conf: tiers[0].plugins[0].name: {problem}; expected a non-empty plugin name string"
    )


def test_plugin_name_with_surrounding_whitespace_is_error() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - name: ' gang'\n")
    assert (
        message == "sched.conf: tiers[0].plugins[0].name: ' gang' has surrounding whitespace; expected 'gang'"
    )


def test_unknown_plugin_name_is_error_when_known_plugins_given() -> None:
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: gnag\n"
    message = error_of(text, known_plugins=KNOWN_PLUGINS)
    assert message == (
        "sched.conf: tiers[0].plugins[0].name: unknown plugin 'gnag'; "
        "expected one of conformance, drf, gang, nodeorder, predicates, priority, proportion "
        "(did you mean 'gang'?)"
    )


def test_unknown_plugin_name_is_accepted_without_known_plugins() -> None:
    conf = load("actions: allocate\ntiers:\n- plugins:\n  - name: my-plugin\n")
    assert conf.plugin_names() == ("my-plugin",)


def test_same_plugin_twice_is_allowed_like_upstream() -> None:
    text = (
        "actions: allocate\ntiers:\n"
        "- plugins:\n  - name: gang\n"
        "- plugins:\n  - name: gang\n    enableJobReady: false\n"
    )
    conf = load(text, known_plugins=KNOWN_PLUGINS)
    assert [t.plugins[0].name for t in conf.tiers] == ["gang", "gang"]
    assert conf.tiers[1].plugins[0].enabled("enableJobReady") is False
    assert conf.plugin_names() == ("gang",)


def test_plugin_arguments_absent_or_null_are_empty() -> None:
    assert only_option(one_plugin("")).arguments == {}
    assert only_option(one_plugin("arguments: null")).arguments == {}


def test_plugin_arguments_are_kept_as_yaml_decoded_them() -> None:
    option = only_option(
        one_plugin(
            "arguments:\n  binpack.weight: 10\n  binpack.cpu: '2'\n  factor: 1.5\n  nested: {a: [1, 2]}"
        )
    )
    assert dict(option.arguments) == {
        "binpack.weight": 10,
        "binpack.cpu": "2",
        "factor": 1.5,
        "nested": {"a": [1, 2]},
    }


def test_plugin_arguments_must_be_a_mapping() -> None:
    message = error_of(one_plugin("arguments: [1, 2]"))
    assert message == (
        "sched.conf: tiers[0].plugins[0].arguments: got [1, 2] (list); "
        "expected a mapping of argument names (strings) to values"
    )


def test_plugin_argument_keys_must_be_strings() -> None:
    message = error_of(one_plugin("arguments:\n  1: 2"))
    assert message == (
        "sched.conf: tiers[0].plugins[0].arguments: key 1 (int) is not a string; "
        "expected a mapping of argument names (strings) to values"
    )


# --------------------------------------------------------------------------- tiers


def test_absent_or_empty_tiers_give_no_tiers() -> None:
    assert load("actions: allocate\n").tiers == ()
    assert load("actions: allocate\ntiers: []\n").tiers == ()
    assert load("actions: allocate\ntiers:\n- plugins: []\n").tiers == (Tier(plugins=()),)
    assert load("actions: allocate\ntiers:\n- plugins:\n").tiers == (Tier(plugins=()),)


def test_tiers_must_be_a_list() -> None:
    message = error_of("actions: allocate\ntiers: {plugins: []}\n")
    assert message == (
        "sched.conf: tiers: got {'plugins': []} (dict); "
        "expected a list of tiers, each a mapping with a 'plugins' list"
    )


def test_tier_must_be_a_mapping() -> None:
    message = error_of("actions: allocate\ntiers:\n- gang\n")
    assert message == "sched.conf: tiers[0]: got 'gang' (str); expected a mapping with a 'plugins' list"


def test_tier_plugins_must_be_a_list() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins: gang\n")
    assert message == "sched.conf: tiers[0].plugins: got 'gang' (str); expected a list of plugin entries"


def test_unknown_tier_key_is_error_with_suggestion() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugin: []\n")
    assert message == (
        "sched.conf: tiers[0].plugin: unknown key in a tier; "
        "expected one of plugins (did you mean 'plugins'?)"
    )


def test_flag_at_tier_level_hints_at_indentation() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  enableJobOrder: false\n")
    assert message == (
        "sched.conf: tiers[0].enableJobOrder: unknown key in a tier; expected one of plugins "
        "('enableJobOrder' belongs inside a plugin entry; check the indentation)"
    )


def test_drf_hierarchy_with_proportion_in_same_tier_is_error() -> None:
    text = (
        "actions: allocate\ntiers:\n"
        "- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n"
    )
    assert error_of(text) == (
        "sched.conf: tiers[0]: plugin 'drf' with enableHierarchy: true and plugin 'proportion' "
        "are in the same tier; expected at most one of them (upstream rejects this combination)"
    )


def test_drf_hierarchy_with_proportion_in_other_tier_is_allowed() -> None:
    text = (
        "actions: allocate\ntiers:\n"
        "- plugins:\n  - name: drf\n    enableHierarchy: true\n"
        "- plugins:\n  - name: proportion\n"
    )
    assert load(text).plugin_names() == ("drf", "proportion")


def test_drf_without_hierarchy_next_to_proportion_is_allowed() -> None:
    text = "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n  - name: proportion\n"
    assert load(text).plugin_names() == ("drf", "proportion")


def test_plugin_names_follow_tier_order() -> None:
    text = (
        "actions: allocate\ntiers:\n"
        "- plugins:\n  - name: b\n  - name: a\n"
        "- plugins:\n  - name: c\n  - name: a\n"
    )
    assert load(text).plugin_names() == ("b", "a", "c")


# --------------------------------------------------------------------------- actions


def test_actions_are_split_on_commas_and_stripped() -> None:
    assert load("actions: ' enqueue ,allocate,  backfill '\n").actions == ("enqueue", "allocate", "backfill")
    assert load("actions: allocate\n").actions == ("allocate",)


def test_missing_actions_is_error() -> None:
    assert error_of("tiers: []\n") == (
        "sched.conf: actions: missing; "
        'expected a comma-separated string of action names, e.g. "enqueue, allocate, backfill"'
    )


def test_blank_actions_is_error() -> None:
    assert error_of("actions: '  '\n").startswith(
        "sched.conf: actions: empty; expected a comma-separated string"
    )


def test_actions_as_yaml_list_is_error() -> None:
    assert error_of("actions: [enqueue, allocate]\n").startswith(
        "sched.conf: actions: got ['enqueue', 'allocate'] (list); expected a comma-separated string"
    )


def test_empty_action_item_is_error() -> None:
    assert error_of("actions: enqueue,,allocate\n") == (
        "sched.conf: actions[1]: empty action name in 'enqueue,,allocate'; "
        'expected a comma-separated string of action names, e.g. "enqueue, allocate, backfill"'
    )


def test_trailing_comma_in_actions_is_error() -> None:
    assert error_of("actions: 'enqueue, allocate,'\n").startswith("sched.conf: actions[2]: empty action name")


def test_duplicate_action_is_error_naming_both_positions() -> None:
    assert error_of("actions: enqueue, allocate, enqueue\n") == (
        "sched.conf: actions[2]: duplicate action 'enqueue' (already at actions[0]); "
        "expected each action at most once"
    )


def test_unknown_action_is_error_listing_known_actions() -> None:
    assert error_of("actions: enqueue, alocate\n", known_actions=KNOWN_ACTIONS) == (
        "sched.conf: actions[1]: unknown action 'alocate'; "
        "expected one of allocate, backfill, enqueue, preempt, reclaim, shuffle (did you mean 'allocate'?)"
    )


# --------------------------------------------------------------------------- configurations, metrics


def test_action_configurations_are_parsed() -> None:
    text = (
        "actions: allocate, preempt\n"
        "configurations:\n"
        "- name: preempt\n  arguments:\n"
        "    enableTopologyAwarePreemption: true\n    minCandidateNodesAbsolute: 3\n"
        "- name: allocate\n"
    )
    conf = load(text, known_actions=KNOWN_ACTIONS)
    assert conf.configurations == (
        ActionConfiguration(
            name="preempt", arguments={"enableTopologyAwarePreemption": True, "minCandidateNodesAbsolute": 3}
        ),
        ActionConfiguration(name="allocate", arguments={}),
    )
    assert conf.action_arguments("preempt")["minCandidateNodesAbsolute"] == 3
    assert conf.action_arguments("allocate") == {}


def test_action_arguments_are_empty_when_not_configured() -> None:
    assert load("actions: allocate\n").action_arguments("allocate") == {}


def test_configuration_for_action_not_in_actions_is_allowed() -> None:
    conf = load("actions: allocate\nconfigurations:\n- name: preempt\n  arguments: {x: 1}\n")
    assert conf.action_arguments("preempt") == {"x": 1}


def test_configurations_must_be_a_list() -> None:
    assert error_of("actions: allocate\nconfigurations: {name: preempt}\n").startswith(
        "sched.conf: configurations: got {'name': 'preempt'} (dict); expected a list of entries"
    )


def test_configuration_entry_must_be_a_mapping() -> None:
    assert error_of("actions: allocate\nconfigurations:\n- preempt\n") == (
        "sched.conf: configurations[0]: got 'preempt' (str); "
        "expected a mapping with 'name' (an action) and optional 'arguments'"
    )


def test_configuration_without_name_is_error() -> None:
    assert error_of("actions: allocate\nconfigurations:\n- arguments: {}\n") == (
        "sched.conf: configurations[0].name: missing; expected an action name"
    )


def test_configuration_name_must_be_a_string() -> None:
    assert error_of("actions: allocate\nconfigurations:\n- name: 7\n") == (
        "sched.conf: configurations[0].name: got 7 (int); expected a non-empty action name string"
    )


def test_configuration_for_unknown_action_is_error_when_known_actions_given() -> None:
    message = error_of("actions: allocate\nconfigurations:\n- name: premept\n", known_actions=KNOWN_ACTIONS)
    assert message.startswith("sched.conf: configurations[0].name: unknown action 'premept'; expected one of")
    assert message.endswith("(did you mean 'preempt'?)")


def test_unknown_configuration_key_is_error_with_suggestion() -> None:
    assert error_of("actions: allocate\nconfigurations:\n- name: preempt\n  argument: {}\n") == (
        "sched.conf: configurations[0].argument: unknown key in an action configuration; "
        "expected one of name, arguments (did you mean 'arguments'?)"
    )


def test_duplicate_configuration_for_one_action_is_error() -> None:
    text = "actions: preempt\nconfigurations:\n- name: preempt\n- name: preempt\n"
    assert error_of(text) == (
        "sched.conf: configurations[1].name: duplicate entry for action 'preempt' "
        "(already at configurations[0]); "
        "expected at most one configurations entry per action"
    )


def test_configuration_arguments_must_be_a_mapping() -> None:
    assert error_of("actions: allocate\nconfigurations:\n- name: allocate\n  arguments: 3\n") == (
        "sched.conf: configurations[0].arguments: got 3 (int); "
        "expected a mapping of argument names (strings) to values"
    )


def test_metrics_are_kept_raw() -> None:
    conf = load("actions: allocate\nmetrics:\n  address: http://prometheus:9090\n  interval: 30s\n")
    assert dict(conf.metrics) == {"address": "http://prometheus:9090", "interval": "30s"}
    assert load("actions: allocate\n").metrics == {}


def test_metrics_must_be_a_mapping() -> None:
    assert (
        error_of("actions: allocate\nmetrics: [a]\n")
        == "sched.conf: metrics: got ['a'] (list); expected a mapping"
    )


# --------------------------------------------------------------------------- document level


def test_unknown_top_level_key_is_error_with_suggestion() -> None:
    assert error_of("actions: allocate\ntier: []\n") == (
        "sched.conf: tier: unknown key in the scheduler configuration; "
        "expected one of actions, tiers, configurations, metrics (did you mean 'tiers'?)"
    )


@pytest.mark.parametrize("text", ["", "   \n\t\n", "# only a comment\n", "---\n"])
def test_empty_configuration_is_error(text: str) -> None:
    assert error_of(text) == (
        "sched.conf: the configuration is empty; "
        'expected a YAML mapping with at least actions: "enqueue, allocate, backfill"'
    )


def test_top_level_that_is_not_a_mapping_is_error() -> None:
    assert error_of("- enqueue\n- allocate\n") == (
        "sched.conf: <top level>: got ['enqueue', 'allocate'] (list); "
        "expected a YAML mapping with keys actions, tiers, configurations, metrics"
    )


def test_yaml_syntax_error_reports_line_and_column() -> None:
    message = error_of("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n   enableJobOrder: true\n")
    assert message.startswith("sched.conf: line 5, column ")
    assert message.endswith("; expected valid YAML")


def test_unterminated_flow_sequence_reports_position() -> None:
    message = error_of("actions: [allocate\n")
    assert message.startswith("sched.conf: line 2, column 1: ")


def test_duplicate_yaml_key_is_error() -> None:
    message = error_of(one_plugin("enableJobOrder: true\nenableJobOrder: false"))
    assert (
        message == "sched.conf: line 6, column 5: found duplicate key 'enableJobOrder'; expected valid YAML"
    )


def test_yaml_merge_keys_are_not_reported_as_duplicates() -> None:
    text = (
        "actions: allocate\n"
        "tiers:\n- plugins:\n"
        "  - &base {name: gang, enableJobOrder: false}\n"
        "  - <<: *base\n    name: priority\n"
    )
    conf = load(text)
    assert [(p.name, p.enabled("enableJobOrder")) for p in conf.tiers[0].plugins] == [
        ("gang", False),
        ("priority", False),
    ]


def test_multiple_yaml_documents_are_error() -> None:
    message = error_of("actions: allocate\n---\nactions: enqueue\n")
    assert message == (
        "sched.conf: line 2, column 1: expected a single document in the stream, but found another document; "
        "expected valid YAML"
    )


def test_config_error_is_a_value_error_with_parts() -> None:
    with pytest.raises(ValueError) as info:
        load("actions: a,a\n")
    err = info.value
    assert isinstance(err, ConfigError)
    assert (err.source, err.field) == (SRC, "actions[1]")
    assert err.expected == "each action at most once"


def test_default_source_name_is_used_in_errors() -> None:
    with pytest.raises(ConfigError, match=r"^<config>: actions: missing"):
        load_scheduler_conf("tiers: []\n")


# --------------------------------------------------------------------------- immutability


def test_loaded_configuration_is_immutable() -> None:
    conf = load(one_plugin("arguments: {a: 1}"))
    option = conf.tiers[0].plugins[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        option.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        option.flags["enableJobOrder"] = False  # type: ignore[index]
    with pytest.raises(TypeError):
        option.arguments["a"] = 2  # type: ignore[index]


def test_plugin_option_create_applies_file_defaulting() -> None:
    loaded = only_option(one_plugin("enablePreemptable: false\narguments: {x: 1}"))
    assert PluginOption.create("gang", enablePreemptable=False, arguments={"x": 1}) == loaded


def test_plugin_option_constructor_requires_every_flag() -> None:
    with pytest.raises(ValueError, match="flags must hold exactly ENABLE_FLAGS"):
        PluginOption(name="gang", flags={"enableJobOrder": True}, arguments={})


def test_plugin_option_create_rejects_unknown_flag() -> None:
    with pytest.raises(ValueError, match="unknown plugin option flag"):
        PluginOption.create("gang", enableJobOrdr=True)


# --------------------------------------------------------------------------- conformance-case files


def test_conformance_nodeorder_case_loads_with_exact_flags_and_arguments() -> None:
    conf = load(NODEORDER_PREFERRED_NODE_AFFINITY, known_actions=KNOWN_ACTIONS, known_plugins=KNOWN_PLUGINS)
    assert conf.actions == ("allocate",)
    gang, nodeorder = conf.tiers[0].plugins
    assert [f for f in ENABLE_FLAGS if gang.enabled(f)] == ["enableJobReady"]
    assert [f for f in ENABLE_FLAGS if nodeorder.enabled(f)] == ["enableNodeOrder"]
    assert nodeorder.arguments["nodeaffinity.weight"] == 10
    assert nodeorder.arguments["leastrequested.weight"] == 0
    assert len(nodeorder.arguments) == 8
    assert gang.arguments == {}
    assert conf.configurations == ()


def test_conformance_preempt_case_loads_with_action_configuration() -> None:
    conf = load(PREEMPT_PREEMPTION_POLICY_NEVER, known_actions=KNOWN_ACTIONS, known_plugins=KNOWN_PLUGINS)
    assert conf.actions == ("preempt",)
    assert conf.plugin_names() == ("conformance", "gang", "priority", "proportion")
    enabled = {p.name: [f for f in ENABLE_FLAGS if p.enabled(f)] for p in conf.tiers[0].plugins}
    assert enabled == {
        "conformance": ["enablePreemptable"],
        "gang": ["enableJobPipelined", "enablePreemptable", "enableJobStarving"],
        "priority": [
            "enableJobOrder",
            "enableJobPipelined",
            "enableTaskOrder",
            "enablePreemptable",
            "enableJobStarving",
        ],
        "proportion": ["enableQueueOrder", "enabledOverused", "enabledAllocatable"],
    }
    assert conf.action_arguments("preempt") == {"enableTopologyAwarePreemption": False}


# --------------------------------------------------------------------------- files


def test_load_file_reads_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(NODEORDER_PREFERRED_NODE_AFFINITY, encoding="utf-8")
    assert load_scheduler_conf_file(path) == load(NODEORDER_PREFERRED_NODE_AFFINITY)
    path.write_text("actions: a,a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: actions\[1\]: duplicate action"):
        load_scheduler_conf_file(str(path))


def test_load_file_passes_known_names(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("actions: nope\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown action 'nope'"):
        load_scheduler_conf_file(path, known_actions=KNOWN_ACTIONS)


def test_load_missing_file_is_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.conf"
    with pytest.raises(ConfigError) as info:
        load_scheduler_conf_file(path)
    assert str(info.value) == f"{path}: file not found; expected an existing scheduler configuration file"


def test_load_directory_is_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=rf"^{tmp_path}: cannot read file \(.+\); expected a readable file$"
    ):
        load_scheduler_conf_file(tmp_path)


def test_load_non_utf8_file_is_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.conf"
    path.write_bytes(b"actions: \xe9\n")
    with pytest.raises(ConfigError, match=rf"^{path}: not UTF-8 text .*; expected a UTF-8 YAML file$"):
        load_scheduler_conf_file(path)


def test_load_file_with_yaml_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("actions: [a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: line 2, column 1: "):
        load_scheduler_conf_file(path)
