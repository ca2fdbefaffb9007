"""Specification tests for ``pyvolcano.conf.defaults``: upstream's built-in configuration."""

from __future__ import annotations

from pyvolcano.conf import (
    DEFAULT_SCHEDULER_CONF,
    ENABLE_FLAGS,
    FLAG_DEFAULTS,
    default_configuration,
    load_scheduler_conf,
)

# pkg/scheduler/util.go DefaultSchedulerConf, as documented in the design notes (§16).
UPSTREAM_DEFAULT_LINES = [
    'actions: "enqueue, allocate, backfill"',
    "tiers:",
    "- plugins:",
    "  - name: priority",
    "  - name: gang",
    "  - name: conformance",
    "- plugins:",
    "  - name: overcommit",
    "  - name: drf",
    "  - name: predicates",
    "  - name: proportion",
    "  - name: nodeorder",
]


def test_default_text_matches_upstream_go_raw_string() -> None:
    assert "\n" + "\n".join(UPSTREAM_DEFAULT_LINES) + "\n" == DEFAULT_SCHEDULER_CONF


def test_default_actions_are_enqueue_allocate_backfill() -> None:
    assert default_configuration().actions == ("enqueue", "allocate", "backfill")


def test_default_tiers_are_priority_gang_conformance_then_five_more() -> None:
    tiers = default_configuration().tiers
    assert [[p.name for p in tier.plugins] for tier in tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]


def test_default_plugins_have_file_defaulted_flags_and_no_arguments() -> None:
    for tier in default_configuration().tiers:
        for option in tier.plugins:
            assert dict(option.flags) == dict(FLAG_DEFAULTS)
            assert option.arguments == {}
            assert not option.enabled("enableHierarchy")
            assert not option.enabled("enabledClusterOrder")
            assert sum(option.enabled(f) for f in ENABLE_FLAGS) == 23


def test_default_has_no_action_configurations_or_metrics() -> None:
    conf = default_configuration()
    assert conf.configurations == ()
    assert conf.metrics == {}
    assert conf.action_arguments("allocate") == {}


def test_default_configuration_is_shared_and_equal_to_loading_the_text() -> None:
    assert default_configuration() is default_configuration()
    assert default_configuration() == load_scheduler_conf(DEFAULT_SCHEDULER_CONF)


def test_default_validates_against_upstream_action_and_plugin_names() -> None:
    conf = load_scheduler_conf(
        DEFAULT_SCHEDULER_CONF,
        known_actions=("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"),
        known_plugins=(
            "priority",
            "gang",
            "conformance",
            "overcommit",
            "drf",
            "predicates",
            "proportion",
            "nodeorder",
        ),
    )
    assert conf == default_configuration()
