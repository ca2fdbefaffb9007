"""The scheduler configuration as every reader takes it: parsed, then checked against a registry.

:func:`load_configuration` is the one way a configuration enters the scheduler, the
forecasts, ``schedule``, ``simulate``, ``replay`` and ``snapshot``. It parses the text with
:func:`~pyvolcano.conf.loader.load_scheduler_conf` (plugin and action names checked against
the registry's) and then builds every plugin of every tier and every configured action once
with its arguments, as the scheduler does when it opens a session, so that a bad argument is
reported before any session runs and names where it is (the ``metrics`` section is checked
too, :mod:`pyvolcano.conf.metrics`)::

    sched.conf: tiers[1].plugins[0].arguments.binpack.weight: got 'lots' (str); expected a number

Every argument key is checked against the plugin's or action's declared table
(:mod:`pyvolcano.framework.argument_keys`) before anything is built: an unknown key is an error
with the closest declared key suggested (or, when the key is another plugin's, that plugin
named); a key pyvolcano does not implement is an error saying what to do; a key accepted without
effect is a warning, kept on :attr:`SchedulerConfiguration.warnings` and logged once per load::

    sched.conf: tiers[1].plugins[0].arguments.binpack.wieght: plugin binpack has no argument
    binpack.wieght; expected one of binpack.weight, ... (did you mean 'binpack.weight'?)

Invariants: a configuration returned here opens a session without an argument error; every
failure is a :class:`~pyvolcano.conf.loader.ConfigError` (one line: source, field path, what
is wrong, what was expected). No text and no path means upstream's built-in default.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.conf.defaults import default_configuration
from pyvolcano.conf.loader import ConfigError, load_scheduler_conf, load_scheduler_conf_file
from pyvolcano.conf.metrics import MetricsError, read_metrics
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import ArgumentError

if TYPE_CHECKING:
    from pyvolcano.runtime.registry import Registry

__all__ = ["check_arguments", "load_configuration"]

logger = logging.getLogger("pyvolcano.conf")

_METRICS_READERS = ("usage", "rescheduling")
"""The plugins that read the configuration's ``metrics`` section (upstream ``GetMetricsConf``)."""

def load_configuration(registry: Registry, path: str | os.PathLike[str] | None = None, *, text: str | None = None,
                       source: str | None = None) -> SchedulerConfiguration:
    """The checked configuration of ``text`` (named ``source`` in errors), else of the file at
    ``path``, else upstream's default; raises :class:`ConfigError`."""
    if text is not None:
        where = source or (os.fspath(path) if path is not None else "<config>")
        config = load_scheduler_conf(text, source=where, known_actions=registry.action_names,
                                     known_plugins=registry.plugin_names,
                                     unimplemented_plugins=registry.unimplemented_plugins)
    elif path is not None:
        where = os.fspath(path)
        config = load_scheduler_conf_file(path, known_actions=registry.action_names,
                                          known_plugins=registry.plugin_names,
                                          unimplemented_plugins=registry.unimplemented_plugins)
    else:
        where = "<default configuration>"
        config = default_configuration()
    warnings = check_arguments(config, registry, where)
    try:
        read_metrics(config.metrics)
    except MetricsError as e:
        raise ConfigError(where, f"metrics.{e.field}", e.problem, e.expected) from None
    for line in warnings:
        logger.warning("%s", line)
    return dataclasses.replace(config, warnings=warnings) if warnings else config


def check_arguments(config: SchedulerConfiguration, registry: Registry, source: str) -> tuple[str, ...]:
    """Check every argument key of ``config`` against its owner's table, then build every plugin
    and action once; a refused argument is a ConfigError naming its field. Returns the warnings
    (keys accepted without effect), one line each."""
    warnings: list[str] = []
    readers = [name for name in _METRICS_READERS if name in registry.plugin_names]
    if config.metrics and not readers:
        warnings.append(f"{source}: metrics: accepted without effect (the node-usage metrics source feeds "
                        f"upstream's {' and '.join(_METRICS_READERS)} plugins, which pyvolcano does not implement yet)")
    for t, tier in enumerate(config.tiers):
        for p, opt in enumerate(tier.plugins):
            field = f"tiers[{t}].plugins[{p}].arguments"
            keys = registry.plugin_keys(opt.name)
            warnings += _check_keys(source, field, keys, opt.arguments, lambda: _owners(registry))
            _build(source, field, registry.plugin(opt.name), opt.arguments)
    fields = {entry.name: f"configurations[{c}].arguments" for c, entry in enumerate(config.configurations)}
    for a, name in enumerate(config.actions):
        field = fields.get(name, f"actions[{a}]")
        arguments = config.action_arguments(name)
        warnings += _check_keys(source, field, registry.action_keys(name), arguments, lambda: [])
        _build(source, field, registry.action(name), arguments)
    return tuple(warnings)


def _check_keys(source: str, field: str, keys: ArgumentKeys | None, arguments: Mapping[str, Any],
                others: Callable[[], list[ArgumentKeys]]) -> list[str]:
    if keys is None:
        return []
    warnings: list[str] = []
    for finding in keys.check(arguments):
        where = f"{field}.{finding.key}"
        if finding.is_warning:
            warnings.append(f"{source}: {where}: {finding.problem}")
            continue
        expected = finding.expected
        if finding.declared is None:
            owner = next((o.owner for o in others() if o is not keys and o.honours(finding.key)), None)
            if owner is not None:
                expected = f"it under {owner}, which takes it"
        raise ConfigError(source, where, finding.problem, expected)
    return warnings


def _owners(registry: Registry) -> list[ArgumentKeys]:
    """Every plugin's table (imports every plugin module: only on the way to an error)."""
    tables = (registry.plugin_keys(name) for name in registry.plugin_names)
    return [t for t in tables if t is not None]


def _build(source: str, field: str, factory: Callable[[Mapping[str, Any]], object],
           arguments: Mapping[str, Any]) -> None:
    try:
        factory(arguments)
    except ArgumentError as e:
        if e.argument is not None:
            field = f"{field}.{e.argument}"
        raise ConfigError(source, field, e.problem, e.expected or "an argument the plugin accepts") from None
