"""Upstream's built-in scheduler configuration, used when no configuration file is given.

``DEFAULT_SCHEDULER_CONF`` has the same content as ``DefaultSchedulerConf`` in upstream
``pkg/scheduler/util.go`` (volcano-sh/volcano, read at commit ed72c7c8), including the leading and
trailing newline of the Go raw string. Loading it applies the usual file defaulting, so every
plugin has all its enable flags on except ``enableHierarchy`` and ``enabledClusterOrder``.

:func:`default_configuration` is cached: the result is immutable, so sharing it is safe.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from pyvolcano.conf.loader import load_scheduler_conf
from pyvolcano.conf.schema import SchedulerConfiguration

__all__ = ["DEFAULT_SCHEDULER_CONF", "default_configuration"]

DEFAULT_SCHEDULER_CONF: Final[str] = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@cache
def default_configuration() -> SchedulerConfiguration:
    """The parsed :data:`DEFAULT_SCHEDULER_CONF` (upstream's fallback configuration)."""
    return load_scheduler_conf(DEFAULT_SCHEDULER_CONF, source="<default scheduler conf>")
