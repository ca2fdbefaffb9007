"""Scheduler configuration: schema, YAML loader and upstream's built-in default.

The loader that checks a configuration against a registry's plugins and actions is
:func:`pyvolcano.runtime.configuration.load_configuration`, beside the registry.
"""

from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF, default_configuration
from pyvolcano.conf.loader import ConfigError, load_scheduler_conf, load_scheduler_conf_file
from pyvolcano.conf.schema import (
    ENABLE_FLAGS,
    FLAG_DEFAULTS,
    ActionConfiguration,
    PluginOption,
    SchedulerConfiguration,
    Tier,
    apply_flag_defaults,
)

__all__ = [
    "DEFAULT_SCHEDULER_CONF",
    "ENABLE_FLAGS",
    "FLAG_DEFAULTS",
    "ActionConfiguration",
    "ConfigError",
    "PluginOption",
    "SchedulerConfiguration",
    "Tier",
    "apply_flag_defaults",
    "default_configuration",
    "load_scheduler_conf",
    "load_scheduler_conf_file",
]
