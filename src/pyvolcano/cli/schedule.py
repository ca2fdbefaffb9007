"""``pyvolcano schedule``: sessions on a cluster snapshot (contract in ARCHITECTURE.md).

The snapshot is read from files, directories and ``-`` (:mod:`pyvolcano.cli.inputs`); their
objects are merged in order, and an object defined twice, in one file or two, is an error.
No object at all is an error too ("no objects passed to schedule", exit 2, as
``kubectl apply`` says of an empty input). The JSON keeps wall-clock timings out unless
``--timings`` is given (``stats.session_seconds``), so the same inputs print the same bytes.

A snapshot written by ``pyvolcano snapshot`` also carries the scheduler configuration, as the
``volcano-system/volcano-scheduler-configmap`` ConfigMap; it is used unless ``--config`` is
given, and its errors name the file and the ConfigMap. The snapshot's Volcano Jobs (and
Commands) are not scheduler inputs and are skipped; any other kind is an error.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.manifest import ClusterObjects, ManifestError, check_queue_parents, load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli.inputs import read_inputs
from pyvolcano.cli.output import emit, error, strip_timings, warn
from pyvolcano.conf import ConfigError, default_configuration, load_scheduler_conf, load_scheduler_conf_file
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.registry import Registry, default_registry
from pyvolcano.runtime.snapshot import CONFIG_KEY, CONFIG_MAP, CONFIG_NAMESPACE
from pyvolcano.util.bulk_build import bulk_build, frozen_scope

__all__ = ["load_snapshot", "load_snapshot_and_config", "run_schedule", "schedule_objects"]

# Kinds a snapshot may hold besides the scheduler's inputs: skipped here (vcctl reads them).
_SKIPPED_KINDS = {("batch.volcano.sh/v1alpha1", "Job"), ("bus.volcano.sh/v1alpha1", "Command")}
_SCHEDULER_KINDS = ("v1 Pod, v1 Node, scheduling.volcano.sh/v1beta1 PodGroup, scheduling.volcano.sh/v1beta1 Queue, "
                    "scheduling.k8s.io/v1 PriorityClass, topology.volcano.sh/v1alpha1 HyperNode")


def load_config(path: Path | None, registry: Registry) -> SchedulerConfiguration:
    """The configuration at ``path`` (upstream's default without one), its plugin and action
    arguments checked by building each once, so that a bad argument names the file and field."""
    if path is None:
        return default_configuration()
    conf = load_scheduler_conf_file(path, known_actions=registry.action_names, known_plugins=registry.plugin_names)
    for t, tier in enumerate(conf.tiers):
        for p, opt in enumerate(tier.plugins):
            _build(path, f"tiers[{t}].plugins[{p}].arguments", lambda o=opt: registry.plugin(o.name)(o.arguments))
    for c, entry in enumerate(conf.configurations):
        if entry.name in conf.actions:
            _build(path, f"configurations[{c}].arguments",
                   lambda n=entry.name: registry.action(n)(conf.action_arguments(n)))
    return conf


def _build(path: Path, field: str, build: Any) -> None:
    try:
        build()
    except ArgumentError as e:
        problem, _, expected = str(e).partition("; expected ")
        raise ConfigError(str(path), field, problem, expected or "an argument the plugin accepts") from None


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


def load_snapshot(sources: Sequence[str | Path]) -> ClusterObjects:
    """The objects of every source, merged in order; raises :class:`ManifestError`."""
    return _load(sources)[0]


def load_snapshot_and_config(sources: Sequence[str | Path], registry: Registry
                             ) -> tuple[ClusterObjects, SchedulerConfiguration | None]:
    """The objects of every source and the configuration their scheduler ConfigMap carries (or None)."""
    objs, embedded = _load(sources)
    if embedded is None:
        return objs, None
    where, doc = embedded
    text = (doc.get("data") or {}).get(CONFIG_KEY)
    if not isinstance(text, str):
        raise ManifestError(f"{where}: data.{CONFIG_KEY}: expected the configuration text")
    return objs, load_scheduler_conf(text, source=f"{where}: data.{CONFIG_KEY}", known_actions=registry.action_names,
                                     known_plugins=registry.plugin_names)


def _is_config_map(doc: dict[str, Any]) -> bool:
    md = doc.get("metadata") or {}
    return (doc.get("apiVersion"), doc.get("kind")) == ("v1", "ConfigMap") and md.get("name") == CONFIG_MAP \
        and (md.get("namespace") or "default") == CONFIG_NAMESPACE


def _load(sources: Sequence[str | Path]) -> tuple[ClusterObjects, tuple[str, dict[str, Any]] | None]:
    merged = ClusterObjects()
    embedded: tuple[str, dict[str, Any]] | None = None
    first: dict[tuple[str, str], str] = {}
    for source, text in read_inputs(sources):
        if isinstance(text, ManifestError):
            raise text
        objs = load_manifest_text(text, source, allow_other=True)
        for i, doc in objs.other:
            where = f"{source}: document {i}"
            if _is_config_map(doc):
                if embedded is not None:
                    raise ManifestError(f"{where}: a second ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP} (the first is "
                                        f"{embedded[0]})")
                embedded = (f"{where} (ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP})", doc)
            elif (doc.get("apiVersion"), doc.get("kind")) not in _SKIPPED_KINDS:
                raise ManifestError(f"{where}: apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} is not "
                                    f"supported; expected one of {_SCHEDULER_KINDS}, the {CONFIG_NAMESPACE}/"
                                    f"{CONFIG_MAP} ConfigMap, batch.volcano.sh/v1alpha1 Job")
            merged.other.append((i, doc))
        for attr in ("nodes", "pods", "podgroups", "queues", "priority_classes", "hypernodes"):
            for obj in getattr(objs, attr):
                key = (type(obj).__name__, f"{getattr(obj, 'namespace', '') or ''}/{obj.name}".lstrip("/"))
                if key in first:
                    raise ManifestError(f"{source}: duplicate {key[0]} {key[1]} (first defined in {first[key]})")
                first[key] = source
                getattr(merged, attr).append(obj)
    return merged, embedded


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
        config = load_config(config_path, registry)
        with bulk_build():  # the snapshot and the cache live until the command ends
            objs, embedded = load_snapshot_and_config(sources, registry)
            if config_path is None and embedded is not None:
                config = embedded
            check_queue_parents(objs, ", ".join(str(s) for s in sources))
            cache = SchedulerCache.from_objects(objs)
        # Instantiate every plugin and action once so bad arguments fail before any session.
        for tier in config.tiers:
            for opt in tier.plugins:
                registry.plugin(opt.name)(opt.arguments)
        for name in config.actions:
            registry.action(name)(config.action_arguments(name))
    except (ManifestError, ConfigError, ArgumentError) as e:
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
