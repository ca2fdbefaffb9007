"""``pyvolcano schedule``: sessions on a cluster snapshot (contract in docs/architecture.md).

The snapshot is read by :func:`pyvolcano.runtime.snapshot.load_snapshot_and_config` from
files, directories and ``-``; their objects are merged in order, and an object defined twice,
in one file or two, is an error. The sessions are :func:`pyvolcano.runtime.cycle.schedule_objects`'s.
No object at all is an error too ("no objects passed to schedule", exit 2, as
``kubectl apply`` says of an empty input). The JSON keeps wall-clock timings out unless
``--timings`` is given (``stats.session_seconds``), so the same inputs print the same bytes.

A snapshot written by ``pyvolcano snapshot`` also carries the scheduler configuration, as the
``volcano-system/volcano-scheduler-configmap`` ConfigMap; it is used unless ``--config`` is
given, and its errors name the file and the ConfigMap. The snapshot's Volcano Jobs (and
Commands) are not scheduler inputs and are skipped; any other kind is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyvolcano.api.manifest import ManifestError, check_queue_parents
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli.output import emit, error, strip_timings, warn
from pyvolcano.conf import ConfigError
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.snapshot import load_snapshot_and_config
from pyvolcano.util.bulk_build import bulk_build, frozen_scope

__all__ = ["run_schedule"]


def run_schedule(sources: Sequence[str | Path] | str | Path, config_path: Path | None, *, sessions: int,
                 output: str, seed: int, timings: bool = False) -> int:
    with frozen_scope():
        return _run_schedule(sources, config_path, sessions=sessions, output=output, seed=seed, timings=timings)


def _run_schedule(sources: Sequence[str | Path] | str | Path, config_path: Path | None, *, sessions: int,
                  output: str, seed: int, timings: bool) -> int:
    if isinstance(sources, (str, Path)):
        sources = [sources]
    registry = default_registry()
    try:
        config = load_configuration(registry, config_path)
        with bulk_build():  # the snapshot and the cache live until the command ends
            objs, embedded = load_snapshot_and_config(sources, registry)
            if config_path is None and embedded is not None:
                config = embedded
            check_queue_parents(objs, ", ".join(str(s) for s in sources))
            cache = SchedulerCache.from_objects(objs)
    except (ManifestError, ConfigError) as e:
        error(str(e))
        return 2
    where = ", ".join(str(s) for s in sources)
    if not (objs.nodes or objs.pods or objs.podgroups or objs.queues or objs.priority_classes):
        error(f"{where}: no objects passed to schedule")
        return 2
    if not objs.nodes:
        warn(f"{where}: no Node objects; nothing can be bound")
    result = schedule_objects(cache, config, registry, sessions=sessions, seed=seed)
    if output in ("json", "yaml"):
        emit(result if timings else strip_timings(result), output)
    else:
        from pyvolcano.cli.printers import print_schedule_table

        print_schedule_table(result, cache, wide=output == "wide")
    return 0
