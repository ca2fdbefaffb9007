"""Built-in scheduler plugins, by upstream name.

The registry is an explicit literal map from upstream plugin name to the module that
implements it; each module exposes ``new(arguments) -> Plugin`` and ``ARGUMENTS``, the
argument keys it takes (:mod:`pyvolcano.framework.argument_keys`). Modules are imported when
a configuration first uses them, so importing this package has no side effects.
"""

from __future__ import annotations

BUILTIN_PLUGINS: dict[str, str] = {
    "gang": "pyvolcano.plugins.gang",
    "priority": "pyvolcano.plugins.priority",
    "conformance": "pyvolcano.plugins.conformance",
    "drf": "pyvolcano.plugins.drf",
    "proportion": "pyvolcano.plugins.proportion",
    "capacity": "pyvolcano.plugins.capacity",
    "overcommit": "pyvolcano.plugins.overcommit",
    "predicates": "pyvolcano.plugins.predicates",
    "nodeorder": "pyvolcano.plugins.nodeorder",
    "binpack": "pyvolcano.plugins.binpack",
    "sla": "pyvolcano.plugins.sla",
    "resource-strategy-fit": "pyvolcano.plugins.resource_strategy_fit",
    "deviceshare": "pyvolcano.plugins.deviceshare",
    "random": "pyvolcano.plugins.gpu_policies.random",
    "dotprod": "pyvolcano.plugins.gpu_policies.dotprod",
    "gpuclustering": "pyvolcano.plugins.gpu_policies.gpuclustering",
    "gpupacking": "pyvolcano.plugins.gpu_policies.gpupacking",
    "bestfit": "pyvolcano.plugins.gpu_policies.bestfit",
    "fgd": "pyvolcano.plugins.gpu_policies.fgd",
    "network-topology-aware": "pyvolcano.plugins.network_topology_aware",
    "tdm": "pyvolcano.plugins.tdm",
    "task-topology": "pyvolcano.plugins.task_topology",
    "numa-aware": "pyvolcano.plugins.numa_aware",
    "cdp": "pyvolcano.plugins.cdp",
    "rescheduling": "pyvolcano.plugins.rescheduling",
    "usage": "pyvolcano.plugins.usage",
    "pdb": "pyvolcano.plugins.pdb",
    "nodegroup": "pyvolcano.plugins.nodegroup",
    "extender": "pyvolcano.plugins.extender",
    "resourcequota": "pyvolcano.plugins.resourcequota",
    # Not upstream's: reservations for blocked gangs with backfill around them (opt-in).
    "reservation": "pyvolcano.plugins.reservation",
}

UPSTREAM_PLUGINS: tuple[str, ...] = (
    "binpack", "capacity", "cdp", "conformance", "deviceshare", "drf", "extender", "gang",
    "network-topology-aware", "nodegroup", "nodeorder", "numa-aware", "overcommit", "pdb", "predicates",
    "priority", "proportion", "rescheduling", "resource-strategy-fit", "resourcequota", "sla",
    "task-topology", "tdm", "usage",
)
"""Every plugin upstream registers (``pkg/scheduler/plugins/factory.go``); those without a
module above are refused by name as not implemented yet."""

__all__ = ["BUILTIN_PLUGINS", "UPSTREAM_PLUGINS"]
