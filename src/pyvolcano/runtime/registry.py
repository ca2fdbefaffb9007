"""Registries of plugin and action factories (explicit maps, no import-time registration).

A :class:`Registry` is built from the built-in name → module maps (``actions.BUILTIN_ACTIONS``,
``plugins.BUILTIN_PLUGINS``; optionally extra factories, e.g. in tests) and passed to whoever
composes a scheduler: the configuration loader checks a configuration against it
(:mod:`pyvolcano.runtime.configuration`) and the scheduling cycle gets its factories. It sits
above the actions and plugins it names, so nothing below imports it. Nothing is global: two
registries never share state.

Each built-in module exposes ``new(arguments)`` and its declared argument keys, ``ARGUMENTS``
(:mod:`pyvolcano.framework.argument_keys`); :meth:`Registry.plugin_keys` and
:meth:`Registry.action_keys` hand the tables to the configuration check. A factory given as an
extra has no table unless it carries one as an ``ARGUMENTS`` attribute. ``upstream_plugins``
names every plugin upstream Volcano has, so that one pyvolcano does not implement yet is
refused as such rather than as a typo.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Mapping

from pyvolcano.framework.argument_keys import ArgumentKeys
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
        upstream_plugins: Collection[str] = (),
    ):
        self._upstream_plugins = tuple(upstream_plugins)
        self._plugin_modules = dict(plugin_modules)
        self._action_modules = dict(action_modules)
        self._plugins: dict[str, PluginFactory] = dict(extra_plugins or {})
        self._extras = frozenset(extra_plugins or ())
        self._extra_actions = frozenset(extra_actions or ())
        self._actions: dict[str, ActionFactory] = dict(extra_actions or {})

    @property
    def plugin_names(self) -> list[str]:
        return sorted({*self._plugin_modules, *self._plugins})

    @property
    def action_names(self) -> list[str]:
        return sorted({*self._action_modules, *self._actions})

    @property
    def unimplemented_plugins(self) -> list[str]:
        """Upstream Volcano's plugins that this registry has no factory for."""
        known = {*self._plugin_modules, *self._plugins}
        return sorted(n for n in self._upstream_plugins if n not in known)

    def plugin_keys(self, name: str) -> ArgumentKeys | None:
        """The declared argument keys of plugin ``name`` (None: not declared)."""
        if name in self._extras or name not in self._plugin_modules:
            return _factory_keys(self._plugins.get(name))
        return _module_keys(self._plugin_modules[name])

    def action_keys(self, name: str) -> ArgumentKeys | None:
        """The declared argument keys of action ``name`` (None: not declared)."""
        if name in self._extra_actions or name not in self._action_modules:
            return _factory_keys(self._actions.get(name))
        return _module_keys(self._action_modules[name])

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


def _module_keys(module: str) -> ArgumentKeys | None:
    keys = getattr(importlib.import_module(module), "ARGUMENTS", None)
    return keys if isinstance(keys, ArgumentKeys) else None


def _factory_keys(factory: object | None) -> ArgumentKeys | None:
    keys = getattr(factory, "ARGUMENTS", None)
    return keys if isinstance(keys, ArgumentKeys) else None


def default_registry() -> Registry:
    from pyvolcano.actions import BUILTIN_ACTIONS
    from pyvolcano.plugins import BUILTIN_PLUGINS, UPSTREAM_PLUGINS

    return Registry(BUILTIN_PLUGINS, BUILTIN_ACTIONS, upstream_plugins=UPSTREAM_PLUGINS)
