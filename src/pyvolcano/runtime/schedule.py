"""Sessions on a snapshot: the decisions ``pyvolcano schedule`` prints.

:func:`schedule_objects` runs sessions one after another on a cache built from a snapshot
(:func:`pyvolcano.runtime.snapshot.load_snapshot_and_config`) and returns the command's
JSON object: binds, evictions, pipelined tasks, PodGroup phases and the last session's
pending diagnoses, each sorted, so that the same inputs and seed give the same document.
The snapshot is taken "now", at its newest object; each further session is one schedule
period (one second) later. Wall-clock timings are kept apart (``stats.session_seconds``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.registry import Registry

__all__ = ["schedule_objects"]


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
