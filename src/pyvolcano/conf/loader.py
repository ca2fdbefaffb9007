"""Load and validate ``volcano-scheduler.conf`` text into :class:`SchedulerConfiguration`.

Upstream (``pkg/scheduler/util.go: UnmarshalSchedulerConf``) decodes the YAML into Go structs,
applies ``ApplyPluginConfDefaults`` to every plugin entry, rejects ``drf`` with
``enableHierarchy: true`` next to ``proportion`` in the same tier, and resolves each
comma-separated action name. We keep those semantics and are stricter where upstream is silent
about mistakes:

* unknown keys (top level, tier, plugin entry, action configuration) are errors — upstream's
  non-strict YAML decoding ignores them, which turns a typo such as ``enableJobOrdr`` into a
  flag that silently stays on;
* a duplicated action in ``actions`` and a duplicated ``configurations`` entry are errors
  (upstream would run the action twice / silently use the first entry);
* a YAML mapping with the same key twice is an error (PyYAML would keep the last one);
* plugin and action names are checked against ``known_plugins`` / ``known_actions`` when the
  caller passes them (upstream skips an unknown plugin with a log line, and fails on an unknown
  action); a name in ``unimplemented_plugins`` (an upstream plugin pyvolcano does not have yet)
  is refused as such, not as a typo.

The same plugin listed twice is **allowed**, as upstream allows it (``framework.OpenSession``
builds every entry; the later instance replaces the earlier one in the session's plugin map).

Every failure raises :class:`ConfigError` with a single line of the form
``"{source}: {field path}: {what is wrong}; expected {what}"``. Field paths are 0-based, e.g.
``tiers[1].plugins[2].enableJobOrder`` or ``actions[3]`` (the 4th comma-separated item).

The only I/O in this module is reading the file in :func:`load_scheduler_conf_file`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from typing import Any, Final, NoReturn

from pyvolcano.conf.schema import (
    ENABLE_FLAGS,
    FLAG_DEFAULTS,
    ActionConfiguration,
    PluginOption,
    SchedulerConfiguration,
    Tier,
)
from pyvolcano.util import safe_yaml

__all__ = ["ConfigError", "load_scheduler_conf", "load_scheduler_conf_file"]

_TOP_LEVEL_KEYS: Final = ("actions", "tiers", "configurations", "metrics")
_TIER_KEYS: Final = ("plugins",)
_PLUGIN_KEYS: Final = ("name", *ENABLE_FLAGS, "arguments")
_CONFIGURATION_KEYS: Final = ("name", "arguments")
_ACTIONS_EXAMPLE: Final = '"enqueue, allocate, backfill"'
_EMPTY_EXPECTED: Final = f"a YAML mapping with at least actions: {_ACTIONS_EXAMPLE}"
_REPR_LIMIT: Final = 60


class ConfigError(ValueError):
    """An invalid scheduler configuration.

    ``str(err)`` is one line: ``"{source}: {field}: {problem}; expected {expected}"`` (the field
    part is left out when the error is not about a field, e.g. unreadable files). The parts are
    also available as attributes.
    """

    def __init__(self, source: str, field: str, problem: str, expected: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        self.expected = expected
        where = f"{source}: {field}" if field else source
        message = f"{where}: {problem}; expected {expected}"
        super().__init__(" ".join(message.split("\n")))


def _short(value: Any) -> str:
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    return text


def _got(value: Any) -> str:
    if value is None:
        return "got null"
    return f"got {_short(value)} ({type(value).__name__})"


def _suggest(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Reader:
    """Walks the decoded YAML, carrying the source name for error messages."""

    def __init__(
        self,
        source: str,
        known_actions: Collection[str] | None,
        known_plugins: Collection[str] | None,
        unimplemented_plugins: Collection[str] = (),
    ) -> None:
        self.source = source
        self.known_actions = known_actions
        self.known_plugins = known_plugins
        self.unimplemented_plugins = unimplemented_plugins

    def fail(self, field: str, problem: str, expected: str) -> NoReturn:
        raise ConfigError(self.source, field, problem, expected)

    # ------------------------------------------------------------------ generic shapes

    def mapping(self, value: Any, field: str, expected: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(field, _got(value), expected)
        for key in value:
            if not isinstance(key, str):
                self.fail(field, f"key {_short(key)} ({type(key).__name__}) is not a string", expected)
        return value

    def check_keys(self, value: Mapping[str, Any], field: str, allowed: tuple[str, ...], what: str) -> None:
        for key in value:
            if key not in allowed:
                hint = _suggest(key, allowed)
                if not hint and key in _PLUGIN_KEYS:
                    hint = f" ({key!r} belongs inside a plugin entry; check the indentation)"
                self.fail(
                    f"{field}.{key}" if field else key,
                    f"unknown key in {what}",
                    f"one of {', '.join(allowed)}{hint}",
                )

    def sequence(self, value: Any, field: str, expected: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(field, _got(value), expected)
        return value

    def arguments(self, value: Any, field: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        return self.mapping(value, field, "a mapping of argument names (strings) to values")

    def known_name(self, name: str, field: str, known: Collection[str] | None, kind: str) -> None:
        if known is not None and name not in known:
            self.fail(
                field,
                f"unknown {kind} {name!r}",
                f"one of {', '.join(sorted(known))}{_suggest(name, known)}",
            )

    # ------------------------------------------------------------------ sections

    def document(self, doc: Any) -> SchedulerConfiguration:
        if doc is None:
            self.fail("", "the configuration is empty", _EMPTY_EXPECTED)
        top = self.mapping(doc, "<top level>", "a YAML mapping with keys " + ", ".join(_TOP_LEVEL_KEYS))
        self.check_keys(top, "", _TOP_LEVEL_KEYS, "the scheduler configuration")
        actions = self.actions(top.get("actions"))
        tiers = self.tiers(top.get("tiers"))
        configurations = self.configurations(top.get("configurations"))
        metrics = top.get("metrics")
        metrics_map = {} if metrics is None else self.mapping(metrics, "metrics", "a mapping")
        return SchedulerConfiguration(
            actions=actions, tiers=tiers, configurations=configurations, metrics=metrics_map
        )

    def actions(self, value: Any) -> tuple[str, ...]:
        expected = f"a comma-separated string of action names, e.g. {_ACTIONS_EXAMPLE}"
        if value is None:
            self.fail("actions", "missing", expected)
        if not isinstance(value, str):
            self.fail("actions", _got(value), expected)
        if not value.strip():
            self.fail("actions", "empty", expected)
        names: list[str] = []
        first_index: dict[str, int] = {}
        for index, raw in enumerate(value.split(",")):
            field = f"actions[{index}]"
            name = raw.strip()
            if not name:
                self.fail(field, f"empty action name in {value!r}", expected)
            if name in first_index:
                self.fail(
                    field,
                    f"duplicate action {name!r} (already at actions[{first_index[name]}])",
                    "each action at most once",
                )
            self.known_name(name, field, self.known_actions, "action")
            first_index[name] = index
            names.append(name)
        return tuple(names)

    def tiers(self, value: Any) -> tuple[Tier, ...]:
        tiers: list[Tier] = []
        items = self.sequence(value, "tiers", "a list of tiers, each a mapping with a 'plugins' list")
        for t_index, item in enumerate(items):
            field = f"tiers[{t_index}]"
            tier = self.mapping(item, field, "a mapping with a 'plugins' list")
            self.check_keys(tier, field, _TIER_KEYS, "a tier")
            plugins_field = f"{field}.plugins"
            entries = self.sequence(tier.get("plugins"), plugins_field, "a list of plugin entries")
            options = tuple(
                self.plugin(entry, f"{plugins_field}[{p_index}]") for p_index, entry in enumerate(entries)
            )
            self.check_hierarchy_conflict(options, field)
            tiers.append(Tier(plugins=options))
        return tuple(tiers)

    def plugin(self, value: Any, field: str) -> PluginOption:
        entry = self.mapping(value, field, "a mapping with a 'name' and optional enable flags and arguments")
        name = entry.get("name")
        name_expected = "a non-empty plugin name string"
        if name is None:
            self.fail(f"{field}.name", "missing", name_expected)
        if not isinstance(name, str):
            self.fail(f"{field}.name", _got(name), name_expected)
        if not name.strip():
            self.fail(f"{field}.name", "empty", name_expected)
        if name != name.strip():
            self.fail(f"{field}.name", f"{name!r} has surrounding whitespace", f"{name.strip()!r}")
        if name in self.unimplemented_plugins:
            self.fail(f"{field}.name", f"upstream Volcano's plugin {name!r} is not implemented in pyvolcano yet",
                      "the plugin entry removed (docs/configuration.md lists the plugins pyvolcano implements)")
        self.known_name(name, f"{field}.name", self.known_plugins, "plugin")
        for key in entry:
            if key not in _PLUGIN_KEYS:
                self.fail(
                    f"{field}.{key}",
                    f"unknown key in plugin {name!r}",
                    f"'name', 'arguments' or an enable flag{_suggest(key, _PLUGIN_KEYS)}",
                )
        flags: dict[str, bool] = {}
        for flag in ENABLE_FLAGS:
            raw = entry.get(flag)
            if raw is None:
                flags[flag] = FLAG_DEFAULTS[flag]
            elif isinstance(raw, bool):
                flags[flag] = raw
            else:
                self.fail(f"{field}.{flag}", _got(raw), "true or false")
        arguments = self.arguments(entry.get("arguments"), f"{field}.arguments")
        return PluginOption(name=name, flags=flags, arguments=arguments)

    def check_hierarchy_conflict(self, options: tuple[PluginOption, ...], field: str) -> None:
        # Upstream UnmarshalSchedulerConf: "proportion and drf with hierarchy enabled conflicts",
        # checked per tier only.
        names = {option.name for option in options}
        if "proportion" in names and any(
            option.name == "drf" and option.enabled("enableHierarchy") for option in options
        ):
            self.fail(
                field,
                "plugin 'drf' with enableHierarchy: true and plugin 'proportion' are in the same tier",
                "at most one of them (upstream rejects this combination)",
            )

    def configurations(self, value: Any) -> tuple[ActionConfiguration, ...]:
        result: list[ActionConfiguration] = []
        first_index: dict[str, int] = {}
        expected_entry = "a mapping with 'name' (an action) and optional 'arguments'"
        items = self.sequence(value, "configurations", f"a list of entries, each {expected_entry}")
        for index, item in enumerate(items):
            field = f"configurations[{index}]"
            entry = self.mapping(item, field, expected_entry)
            self.check_keys(entry, field, _CONFIGURATION_KEYS, "an action configuration")
            name = entry.get("name")
            if name is None:
                self.fail(f"{field}.name", "missing", "an action name")
            if not isinstance(name, str) or not name.strip():
                self.fail(f"{field}.name", _got(name), "a non-empty action name string")
            self.known_name(name, f"{field}.name", self.known_actions, "action")
            if name in first_index:
                self.fail(
                    f"{field}.name",
                    f"duplicate entry for action {name!r} (already at configurations[{first_index[name]}])",
                    "at most one configurations entry per action",
                )
            first_index[name] = index
            arguments = self.arguments(entry.get("arguments"), f"{field}.arguments")
            result.append(ActionConfiguration(name=name, arguments=arguments))
        return tuple(result)


def _parse_yaml(text: str, source: str) -> Any:
    try:
        return safe_yaml.load(text, source)
    except safe_yaml.InputError as err:
        raise ConfigError(source, err.where or "YAML", err.problem, err.expected) from None


def load_scheduler_conf(
    text: str,
    *,
    source: str = "<config>",
    known_actions: Collection[str] | None = None,
    known_plugins: Collection[str] | None = None,
    unimplemented_plugins: Collection[str] = (),
) -> SchedulerConfiguration:
    """Parse and validate configuration text; see the module docstring for the rules.

    ``source`` names the text in error messages (usually the file name). When ``known_actions``
    / ``known_plugins`` are given, action and plugin names outside them are errors.
    """
    if not text.strip():
        raise ConfigError(source, "", "the configuration is empty", _EMPTY_EXPECTED)
    reader = _Reader(source, known_actions, known_plugins, unimplemented_plugins)
    return reader.document(_parse_yaml(text, source))


def load_scheduler_conf_file(
    path: str | os.PathLike[str],
    *,
    known_actions: Collection[str] | None = None,
    known_plugins: Collection[str] | None = None,
    unimplemented_plugins: Collection[str] = (),
) -> SchedulerConfiguration:
    """Read ``path`` (UTF-8) and load it with :func:`load_scheduler_conf`, naming the file in errors."""
    source = os.fspath(path)
    try:
        text = safe_yaml.read_text(source)
    except safe_yaml.InputError as err:
        raise ConfigError(source, "", err.problem, err.expected) from None
    except FileNotFoundError:
        raise ConfigError(source, "", "file not found", "an existing scheduler configuration file") from None
    except UnicodeDecodeError as err:
        raise ConfigError(source, "", f"not UTF-8 text ({err.reason})", "a UTF-8 YAML file") from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ConfigError(source, "", f"cannot read file ({reason})", "a readable file") from None
    return load_scheduler_conf(text, source=source, known_actions=known_actions, known_plugins=known_plugins,
                               unimplemented_plugins=unimplemented_plugins)
