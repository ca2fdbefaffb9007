"""Registries of plugin and action factories (explicit maps, no import-time registration).

A :class:`Registry` is built from the built-in name → module maps (``actions.BUILTIN_ACTIONS``,
``plugins.BUILTIN_PLUGINS``; optionally extra factories, e.g. in tests) and passed to whoever
composes a scheduler: the configuration loader checks a configuration against it
(:mod:`pyvolcano.runtime.configuration`) and the scheduling cycle gets its factories. It sits
above the actions and plugins it names, so nothing below imports it. Nothing is global: two
registries never share state.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from pyvolcano.framework.interfaces import ActionFactory, PluginFactory

__all__ = ["Registry", "default_registry"]


class Registry:
    def __init__(
        self,
        plugin_modules: Mapping[str, str],
        action_modules: Mapping[str, str],
        *,
        extra_plugins: Mapping[str, PluginFactory] | None = None,
        extra_actions: Mapping[str, ActionFactory] | None = None,
    ):
        self._plugin_modules = dict(plugin_modules)
        self._action_modules = dict(action_modules)
        self._plugins: dict[str, PluginFactory] = dict(extra_plugins or {})
        self._actions: dict[str, ActionFactory] = dict(extra_actions or {})

    @property
    def plugin_names(self) -> list[str]:
        return sorted({*self._plugin_modules, *self._plugins})

    @property
    def action_names(self) -> list[str]:
        return sorted({*self._action_modules, *self._actions})

    def plugin(self, name: str) -> PluginFactory:
        if name not in self._plugins:
            mod = importlib.import_module(self._plugin_modules[name])
            self._plugins[name] = mod.new
        return self._plugins[name]

    def action(self, name: str) -> ActionFactory:
        if name not in self._actions:
            mod = importlib.import_module(self._action_modules[name])
            self._actions[name] = mod.new
        return self._actions[name]

    def plugin_factories(self, names: list[str] | tuple[str, ...]) -> dict[str, PluginFactory]:
        return {n: self.plugin(n) for n in names}

    def action_factories(self, names: list[str] | tuple[str, ...]) -> dict[str, ActionFactory]:
        return {n: self.action(n) for n in names}


def default_registry() -> Registry:
    from pyvolcano.actions import BUILTIN_ACTIONS
    from pyvolcano.plugins import BUILTIN_PLUGINS

    return Registry(BUILTIN_PLUGINS, BUILTIN_ACTIONS)
