"""Specification tests for ``pyvolcano.framework.argument_keys``: the declared argument keys of a
plugin or action, and ``Arguments`` built with them."""

from __future__ import annotations

import pytest

from pyvolcano.framework.argument_keys import ArgumentKeys, KeyStatus, honoured, ignored, is_empty, is_false, refused
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.runtime.registry import default_registry

KEYS = ArgumentKeys("plugin binpack", (
    honoured("binpack.weight"),
    honoured("binpack.resources"),
    honoured("binpack.resources.", prefix=True),
    honoured("binpack.resources.example.com/", prefix=True, note="a longer prefix"),
    refused("binpack.volumes", "volumes are not modelled", "the key removed or set to false", accepts=is_false),
    ignored("binpack.lock", "no lock is taken"),
))


def test_an_exact_key_wins_over_a_prefix_and_the_longest_prefix_wins() -> None:
    assert KEYS.lookup("binpack.resources") == KEYS.keys[1]
    assert KEYS.lookup("binpack.resources.nvidia.com/gpu") == KEYS.keys[2]
    assert KEYS.lookup("binpack.resources.example.com/foo") == KEYS.keys[3]
    assert KEYS.lookup("binpack.resources.") is None  # a prefix needs something after it
    assert KEYS.lookup("binpack.wieght") is None


def test_the_closest_key_is_suggested_and_a_prefix_is_completed_with_the_keys_tail() -> None:
    assert KEYS.closest("binpack.wieght") == "binpack.weight"
    assert KEYS.closest("binpack.resource.nvidia.com/gpu") == "binpack.resources.nvidia.com/gpu"
    assert KEYS.closest("entirely-different") is None


def test_check_reports_unknown_refused_and_ignored_keys_in_order() -> None:
    findings = KEYS.check({"binpack.weight": 2, "binpack.wieght": 3, "binpack.volumes": True,
                           "binpack.lock": True, "binpack.resources.x": 1})
    assert [(f.key, f.is_error, f.is_warning) for f in findings] == [
        ("binpack.wieght", True, False), ("binpack.volumes", True, False), ("binpack.lock", False, True)]
    unknown, refusal, warning = findings
    assert unknown.problem == "plugin binpack has no argument binpack.wieght"
    assert unknown.expected.endswith("(did you mean 'binpack.weight'?)")
    assert refusal.problem == ("plugin binpack: binpack.volumes is not implemented in pyvolcano yet "
                               "(volumes are not modelled)")
    assert refusal.expected == "the key removed or set to false"
    assert warning.problem == "plugin binpack: binpack.lock is accepted without effect (no lock is taken)"


@pytest.mark.parametrize("value", [False, "false", "0", "F"])
def test_a_refused_switch_set_to_false_asks_for_nothing_and_is_taken(value: object) -> None:
    assert KEYS.check({"binpack.volumes": value}) == []


def test_is_empty_takes_null_and_empty_collections_only() -> None:
    assert [is_empty(v) for v in (None, [], {}, "", [{"a": "b"}], "x")] == [True, True, True, True, False, False]


def test_a_table_without_keys_says_the_owner_takes_no_arguments() -> None:
    (finding,) = ArgumentKeys("plugin gang").check({"anything": 1})
    assert (finding.problem, finding.expected) == ("plugin gang takes no arguments", "no 'arguments' for it")


def test_a_key_declared_twice_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        ArgumentKeys("plugin x", (honoured("a"), honoured("a")))


def test_arguments_built_with_a_table_refuse_the_first_bad_key_naming_it() -> None:
    with pytest.raises(ArgumentError) as info:
        Arguments({"binpack.weight": 1, "binpack.volumes": "yes"}, keys=KEYS)
    assert info.value.argument == "binpack.volumes"
    assert str(info.value).startswith("plugin binpack: binpack.volumes is not implemented in pyvolcano yet")


def test_arguments_take_the_owner_from_the_table_and_read_honoured_keys() -> None:
    args = Arguments({"binpack.weight": "3", "binpack.lock": True}, keys=KEYS)
    assert args.owner == "plugin binpack"
    assert args.get_int("binpack.weight", 1) == 3
    assert args.get_int("binpack.resources.nvidia.com/gpu", 1) == 1


def test_reading_a_key_the_table_does_not_honour_is_a_programming_error() -> None:
    args = Arguments({}, keys=KEYS)
    with pytest.raises(LookupError, match="does not honour"):
        args.get_bool("binpack.lock", False)
    with pytest.raises(LookupError):
        args.get_int("binpack.undeclared", 0)


def test_every_builtin_plugin_and_action_declares_its_arguments() -> None:
    registry = default_registry()
    for name in registry.plugin_names:
        keys = registry.plugin_keys(name)
        assert keys is not None and keys.owner == f"plugin {name}", name
    for name in registry.action_names:
        keys = registry.action_keys(name)
        assert keys is not None and keys.owner == f"action {name}", name


def test_every_refused_or_ignored_key_says_why_and_every_refusal_what_to_do() -> None:
    registry = default_registry()
    tables = [registry.plugin_keys(n) for n in registry.plugin_names] + [
        registry.action_keys(n) for n in registry.action_names]
    for table in tables:
        assert table is not None
        for key in table.keys:
            if key.status is not KeyStatus.HONOURED:
                assert key.reason, (table.owner, key.name)
            if key.status is KeyStatus.REFUSED:
                assert key.remedy, (table.owner, key.name)


def test_upstream_plugins_without_a_module_are_the_unimplemented_ones() -> None:
    registry = default_registry()
    assert set(registry.unimplemented_plugins).isdisjoint(registry.plugin_names)
    assert "pdb" in registry.unimplemented_plugins or "pdb" in registry.plugin_names


def test_the_configuration_docs_list_every_declared_key_in_its_owners_row_and_column() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1:]
    registry = default_registry()
    column = {KeyStatus.HONOURED: 0, KeyStatus.IGNORED: 1, KeyStatus.REFUSED: 2}
    tables = [registry.plugin_keys(n) for n in registry.plugin_names] + [
        registry.action_keys(n) for n in registry.action_names]
    for table in tables:
        assert table is not None
        name = table.owner.split(" ", 1)[1]
        assert name in rows, name
        for key in table.keys:
            listed = rows[name][column[key.status]]
            assert f"`{key.shown}`" in listed, (name, key.shown)
        if not table.keys:
            assert rows[name][0] == "none: it takes no arguments"


def test_the_configuration_docs_name_the_upstream_plugins_pyvolcano_does_not_have() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    heading = "### Upstream plugins pyvolcano does not have yet"
    missing = default_registry().unimplemented_plugins
    if not missing:
        assert heading not in text
        return
    section = text.split(heading, 1)[1]
    sentence = section.split("are refused by name", 1)[0]
    assert re.findall(r"`([\w-]+)`", sentence) == missing
