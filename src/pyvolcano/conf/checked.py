"""The scheduler configuration as every reader takes it: parsed, then checked against a registry.

:func:`load_configuration` is the one way a configuration enters the scheduler, the
forecasts, ``schedule``, ``simulate``, ``replay`` and ``snapshot``. It parses the text with
:func:`~pyvolcano.conf.loader.load_scheduler_conf` (plugin and action names checked against
the registry's) and then builds every plugin of every tier and every configured action once
with its arguments, as the scheduler does when it opens a session, so that a bad argument is
reported before any session runs and names where it is (the ``metrics`` section is checked
too, :mod:`pyvolcano.conf.metrics`)::

    sched.conf: tiers[1].plugins[0].arguments.binpack.weight: got 'lots' (str); expected a number

Invariants: a configuration returned here opens a session without an argument error; every
failure is a :class:`~pyvolcano.conf.loader.ConfigError` (one line: source, field path, what
is wrong, what was expected). No text and no path means upstream's built-in default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.conf.defaults import default_configuration
from pyvolcano.conf.loader import ConfigError, load_scheduler_conf, load_scheduler_conf_file
from pyvolcano.conf.metrics import MetricsError, read_metrics
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.arguments import ArgumentError

if TYPE_CHECKING:
    from pyvolcano.framework.registry import Registry

__all__ = ["load_configuration"]

def load_configuration(registry: Registry, path: str | os.PathLike[str] | None = None, *, text: str | None = None,
                       source: str | None = None) -> SchedulerConfiguration:
    """The checked configuration of ``text`` (named ``source`` in errors), else of the file at
    ``path``, else upstream's default; raises :class:`ConfigError`."""
    if text is not None:
        where = source or (os.fspath(path) if path is not None else "<config>")
        config = load_scheduler_conf(text, source=where, known_actions=registry.action_names,
                                     known_plugins=registry.plugin_names)
    elif path is not None:
        where = os.fspath(path)
        config = load_scheduler_conf_file(path, known_actions=registry.action_names,
                                          known_plugins=registry.plugin_names)
    else:
        where = "<default configuration>"
        config = default_configuration()
    check_arguments(config, registry, where)
    try:
        read_metrics(config.metrics)
    except MetricsError as e:
        raise ConfigError(where, f"metrics.{e.field}", e.problem, e.expected) from None
    return config


def check_arguments(config: SchedulerConfiguration, registry: Registry, source: str) -> None:
    """Build every plugin and action of ``config`` once; a refused argument is a ConfigError
    naming its field."""
    for t, tier in enumerate(config.tiers):
        for p, opt in enumerate(tier.plugins):
            _build(source, f"tiers[{t}].plugins[{p}].arguments", registry.plugin(opt.name), opt.arguments)
    fields = {entry.name: f"configurations[{c}].arguments" for c, entry in enumerate(config.configurations)}
    for a, name in enumerate(config.actions):
        _build(source, fields.get(name, f"actions[{a}]"), registry.action(name), config.action_arguments(name))


def _build(source: str, field: str, factory: Callable[[Mapping[str, Any]], object],
           arguments: Mapping[str, Any]) -> None:
    try:
        factory(arguments)
    except ArgumentError as e:
        if e.argument is not None:
            field = f"{field}.{e.argument}"
        raise ConfigError(source, field, e.problem, e.expected or "an argument the plugin accepts") from None
