"""``pyvolcano schedule``: sessions on a cluster snapshot (contract in ARCHITECTURE.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.manifest import ManifestError, load_manifest_file
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import ConfigError, default_configuration, load_scheduler_conf_file
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.registry import Registry, default_registry

__all__ = ["run_schedule", "schedule_objects"]


def load_config(path: Path | None, registry: Registry) -> SchedulerConfiguration:
    if path is None:
        return default_configuration()
    return load_scheduler_conf_file(path, known_actions=registry.action_names, known_plugins=registry.plugin_names)


def schedule_objects(cache: SchedulerCache, config: SchedulerConfiguration, registry: Registry, *,
                     sessions: int, seed: int) -> dict[str, Any]:
    """Run ``sessions`` sessions and return the contract's JSON object (without timings).

    ``diagnoses`` holds the last session's pending diagnosis of every job left short, by
    PodGroup key (the schema of :meth:`pyvolcano.diagnosis.Diagnosis.to_dict`).
    """
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    rng = np.random.default_rng(seed)
    # The snapshot is taken "now": no earlier than its newest object; each further session is
    # one second later (upstream's default --schedule-period).
    base = max([0.0, *(p.creation_timestamp for p in cache.pods.values()),
                *(pg.creation_timestamp for pg in cache.podgroups())])
    binds: dict[str, str] = {}
    evictions: list[str] = []
    pipelined: dict[str, str] = {}
    timings: list[float] = []
    diagnoses: dict[str, Any] = {}
    for i in range(sessions):
        t0 = time.perf_counter()
        res = cache.run_session(config, plugins, actions, now=base + float(i), rng=rng)
        timings.append(time.perf_counter() - t0)
        for key, node in res.binds:
            binds[key] = node
        evictions.extend(res.evictions)
        pipelined = res.pipelined
        diagnoses = {key: d.to_dict() for key, d in sorted(res.diagnoses.items())}
    podgroups = {f"{pg.namespace}/{pg.name}": pg.phase for pg in cache.podgroups()}
    return {
        "binds": dict(sorted(binds.items())),
        "evictions": sorted(evictions),
        "pipelined": dict(sorted(pipelined.items())),
        "podgroups": dict(sorted(podgroups.items())),
        "diagnoses": diagnoses,
        "stats": {"sessions": sessions, "session_seconds": [round(t, 6) for t in timings]},
    }


def run_schedule(cluster: Path, config_path: Path | None, *, sessions: int, output: str, seed: int) -> int:
    registry = default_registry()
    try:
        config = load_config(config_path, registry)
        objs = load_manifest_file(cluster)
        cache = SchedulerCache.from_objects(objs)
        # Instantiate every plugin and action once so bad arguments fail before any session.
        for tier in config.tiers:
            for opt in tier.plugins:
                registry.plugin(opt.name)(opt.arguments)
        for name in config.actions:
            registry.action(name)(config.action_arguments(name))
    except (ManifestError, ConfigError, ArgumentError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = schedule_objects(cache, config, registry, sessions=sessions, seed=seed)
    if output == "json":
        sys.stdout.write(json.dumps(result, sort_keys=False) + "\n")
    else:
        from pyvolcano.cli.printers import print_schedule_table

        print_schedule_table(result, cache)
    return 0
