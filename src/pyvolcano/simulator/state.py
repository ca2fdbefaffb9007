"""The cluster's current state a simulation starts from: raw documents plus their typed objects.

:class:`ClusterState` holds the scheduler's inputs twice: the manifests (``docs``, what a
forward simulation loads into its store, with the Volcano Jobs so that their controller can
create the pods they still need) and their parsed :class:`ClusterObjects` (what a scheduler
cache is built from), with the scheduler configuration the state carries and the instant it
was taken (``now``, virtual seconds). :func:`state_from_snapshot` reads files as ``pyvolcano
schedule`` does; :func:`state_from_store` reads a synced Kubernetes store (read-only), with
the configuration of the cluster's ``volcano-system/volcano-scheduler-configmap`` ConfigMap
when it can be read and loads (else ``config`` is None and ``notes`` says why). Both keep the
workflow kinds (CronJobs, JobTemplates, JobFlows: :data:`WORKFLOW_KINDS`), whose controllers
create jobs in a forecast as they would on the cluster. ``now`` of a
snapshot is its newest timestamp unless given. :func:`load_state` is what the commands call:
the state of a snapshot or a live cluster, and the configuration to run it with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.api.inputs import read_inputs
from pyvolcano.api.manifest import ClusterObjects, ManifestError, check_queue_parents, iter_documents, parse_objects
from pyvolcano.api.names import FLOW_API_VERSION, JOB_API_VERSION, SCHEDULER_KINDS
from pyvolcano.conf import ConfigError
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import Registry
from pyvolcano.runtime.snapshot import (
    CONFIG_KEY,
    CONFIG_MAP,
    CONFIG_NAMESPACE,
    load_snapshot_and_config,
    read_config_text,
)
from pyvolcano.store.base import NotFound, Store, StoreError, Synced, from_rfc3339

__all__ = ["WORKFLOW_KINDS", "ClusterState", "LiveReadError", "live_scheduler_config", "live_source", "load_state",
           "newest_timestamp", "state_from_snapshot", "state_from_store"]


WORKFLOW_KINDS = ((JOB_API_VERSION, "CronJob"), (FLOW_API_VERSION, "JobTemplate"), (FLOW_API_VERSION, "JobFlow"))
"""``(apiVersion, kind)`` of the objects that create Volcano Jobs."""


class LiveReadError(Exception):
    """The live cluster could not be read."""


@dataclass(slots=True)
class ClusterState:
    docs: list[dict[str, Any]]
    objects: ClusterObjects
    config: SchedulerConfiguration | None
    now: float
    source: str
    notes: tuple[str, ...] = field(default=())


def newest_timestamp(docs: Sequence[dict[str, Any]]) -> float:
    """The newest ``creationTimestamp`` or pod ``startTime`` in ``docs`` (0 without any)."""
    best = 0.0
    for d in docs:
        for text in ((d.get("metadata") or {}).get("creationTimestamp"), (d.get("status") or {}).get("startTime")):
            if isinstance(text, str):
                try:
                    best = max(best, from_rfc3339(text))
                except ValueError:
                    continue
    return best


def state_from_snapshot(sources: Sequence[str | Path], registry: Registry, now: float | None = None) -> ClusterState:
    """Read a snapshot (files, directories, ``-``); raises ManifestError or ConfigError."""
    objs, config = load_snapshot_and_config(sources, registry)
    where = ", ".join(str(s) for s in sources)
    check_queue_parents(objs, where)
    docs: list[dict[str, Any]] = []
    for source, text in read_inputs(sources):
        if isinstance(text, ManifestError):
            raise text
        docs += [d for _i, d in iter_documents(text, source) if isinstance(d, dict) and _is_state_doc(d)]
    return ClusterState(docs, objs, config, newest_timestamp(docs) if now is None else now, where)


def state_from_store(store: Store, timeout: float, source: str, now: float, registry: Registry | None = None
                     ) -> ClusterState:
    """Every scheduler input a synced store lists, and the cluster's scheduler configuration when
    ``registry`` is given (reads only: nothing is written)."""
    if isinstance(store, Synced) and not store.wait_for_sync(timeout):
        raise LiveReadError(f"{source}: the objects were not listed within {timeout:g}s")
    docs = [obj for kind in SCHEDULER_KINDS for obj in store.list(kind)]
    objs = parse_objects(list(enumerate(docs)), source)
    check_queue_parents(objs, source)
    config, notes = (None, ()) if registry is None else live_scheduler_config(store, registry)
    try:
        docs += [{**job, "apiVersion": JOB_API_VERSION, "kind": "Job"} for job in store.list("Job")]
    except StoreError as e:
        notes += (f"Volcano Jobs not read ({e}); forecasts will not create the pods they have still to create",)
    for api, kind in WORKFLOW_KINDS:
        try:
            docs += [{**obj, "apiVersion": api, "kind": kind} for obj in store.list(kind)]
        except NotFound:
            continue  # the cluster does not serve the kind (no CRD): there are none
        except StoreError as e:
            notes += (f"{kind}s not read ({e}); forecasts will not create the jobs they have still to create",)
    return ClusterState(docs, objs, config, now, source, notes)


def _is_state_doc(doc: dict[str, Any]) -> bool:
    kind, api = doc.get("kind"), doc.get("apiVersion")
    return (kind in SCHEDULER_KINDS and api != JOB_API_VERSION) or (kind == "Job" and api == JOB_API_VERSION) \
        or (api, kind) in WORKFLOW_KINDS


def live_scheduler_config(store: Store, registry: Registry) -> tuple[SchedulerConfiguration | None, tuple[str, ...]]:
    """The configuration in the cluster's scheduler ConfigMap, or None with a note saying why
    (not there, not readable, no ``volcano-scheduler.conf`` key, or it does not load): the
    answer then uses upstream's built-in default, as the scheduler itself would not start."""
    where = f"ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP}"
    fallback = "using upstream's default scheduler configuration"
    text = read_config_text(store)
    if isinstance(text, StoreError):
        return None, (f"{where} not read ({text}); {fallback}",)
    if text is None:
        return None, (f"{where} has no {CONFIG_KEY} key; {fallback}",)
    try:
        return load_configuration(registry, text=text, source=f"{where}: data.{CONFIG_KEY}"), ()
    except ConfigError as e:
        return None, (f"{e}; {fallback}",)


def load_state(registry: Registry, *, cluster: str | None, kubeconfig: str | None, context: str | None,
               config_path: Path | None, timeout: float, now: float | None, user_agent: str,
               wall_clock: Callable[[], float]) -> tuple[ClusterState, SchedulerConfiguration]:
    """The state of the snapshot ``cluster`` (else of the live cluster, read at ``now`` or the
    whole second of ``wall_clock``) and the configuration to run it with: ``config_path``, else
    the snapshot's or the live cluster's scheduler ConfigMap, else upstream's default. Raises
    ManifestError, ConfigError or LiveReadError; notes on a live cluster are in ``state.notes``."""
    config = load_configuration(registry, config_path)
    if cluster is not None:
        state = state_from_snapshot([cluster], registry, now)
    else:
        from pyvolcano.kube import connect

        store = connect(kubeconfig=kubeconfig, context=context, kinds=SCHEDULER_KINDS, user_agent=user_agent)
        try:
            at = float(math.floor(wall_clock())) if now is None else now  # whole seconds, as timestamps are
            state = state_from_store(store, timeout, live_source(kubeconfig, context), at,
                                     None if config_path is not None else registry)
        finally:
            store.stop()
    if config_path is None and state.config is not None:
        config = state.config
    return state, config


def live_source(kubeconfig: str | None, context: str | None) -> str:
    """How messages name the live cluster: its kubeconfig, else the current context (kubectl's
    default: in-cluster, ``$KUBECONFIG``, ``~/.kube/config``)."""
    where = f"the cluster of {kubeconfig}" if kubeconfig else "the current cluster"
    return f"{where} (context {context})" if context else where
