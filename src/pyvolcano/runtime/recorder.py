"""The decision recorder: the inputs and decisions of the live scheduler's last N sessions.

``pyvolcano scheduler --record DIR`` gives :class:`~pyvolcano.runtime.scheduler.LiveScheduler`
a :class:`SessionRecorder`. Before each session it captures what the session will decide on;
after it, it writes ``DIR/session-NNNNNNNN/`` with

* ``cluster.yaml`` — the cache's objects in the snapshot format ``pyvolcano schedule`` reads
  (the scheduler configuration as its ConfigMap first, then PriorityClasses, Queues, Nodes,
  Numatopologies, HyperNodes, PodDisruptionBudgets, ResourceQuotas, the storage objects,
  DeviceClasses, ResourceSlices, ResourceClaims, PodGroups, Pods), one JSON line per document
  (valid YAML, and written about
  twenty times faster than block YAML: 13,000 objects in 0.2 s);
* ``session.json`` — what else the session depends on: ``now``, the RNG state, the node
  index where the last node search stopped, the cache's session count, the options, the
  plugins' own state (``SessionMemo.plugin_state``: tdm's last victim round, rescheduling's
  last run), the CPUs numa-aware gave bound pods that the nodes' exporters do not list yet, and
  the nodes' measured load (usage, rescheduling);
* ``result.json`` — the session's decisions: binds, evictions, pipelined pods, nominations
  and PodGroup phases.

Only the newest ``keep`` sessions stay (older directories are removed after each write), so
disk use is bounded by ``keep`` snapshots. A directory appears whole or not at all (written
under a temporary name, then renamed).

Invariants that make :func:`replay_session` decide exactly as the live session did:

* The objects are the *cache's* view, not the API server's: the recorder mirrors every event
  the scheduler folds into its cache (:meth:`observe`), and at capture time overlays what the
  cache assumed but the API server has not confirmed yet (binds in flight: ``nodeName`` and the
  bind annotations; evictions in flight: ``deletionTimestamp``; PodGroup status written by the
  last session; nominated nodes; volume bindings in flight: a PV's ``claimRef``, a claim's
  ``selected-node`` annotation; claim allocations in flight: a ResourceClaim's ``status.allocation``).
* Objects are written in the cache's own order (node rows, pod insertion order), and replay
  rebuilds the cache through the same :func:`~pyvolcano.cache.ingest.apply_event` in that
  order, so every order-dependent choice (node search start, tie-breaks) is repeated.
* ``now`` and the RNG state are recorded, never re-read.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.api.numatopology import PodMeta
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.cache.ingest import apply_event, podgroup_status
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.snapshot import (
    CONFIG_KEY,
    CONFIG_MAP,
    CONFIG_NAMESPACE,
    clean,
    config_document,
    dump_json_documents,
)
from pyvolcano.store.base import clone, object_key, to_rfc3339

__all__ = ["FORMAT_VERSION", "RecordedSession", "SessionRecorder", "load_session", "replay_session",
           "result_record"]

logger = logging.getLogger(__name__)

FORMAT_VERSION: Final = 1
_SESSION_DIR: Final = re.compile(r"^session-(\d{8})$")


def result_record(result: SessionResult) -> dict[str, Any]:
    """The decisions of a session, as ``result.json`` keeps them (and replay compares them)."""
    return {
        "binds": [[pod, node] for pod, node in result.binds],
        "evictions": [[ns, name, reason] for ns, name, reason in result.evict_requests],
        "pipelined": dict(sorted(result.pipelined.items())),
        "nominated": dict(sorted(result.nominated.items())),
        "podgroups": dict(sorted(result.podgroup_phases.items())),
    }


@dataclass
class _Capture:
    documents: list[dict[str, Any]]
    session: dict[str, Any]


class SessionRecorder:
    """Mirrors the scheduler's inputs and writes one directory per session; see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str], *, keep: int = 10):
        if keep < 1:
            raise ValueError(f"keep: got {keep}; expected at least 1 session")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.keep = keep
        self._mirror: dict[str, dict[str, dict[str, Any]]] = {}
        existing = self.sessions()
        self._next = (int(_SESSION_DIR.match(existing[-1].name).group(1)) + 1) if existing else 1  # type: ignore[union-attr]

    # ------------------------------------------------------------------ inputs
    def observe(self, event_type: str, kind: str, obj: dict[str, Any]) -> None:
        """One event the scheduler applies to its cache (the same object, before it is parsed)."""
        md = obj.get("metadata") or {}
        key = object_key(kind, md.get("namespace"), str(md.get("name", "")))
        bucket = self._mirror.setdefault(kind, {})
        if event_type != "DELETED":
            bucket[key] = clone(obj)
        elif kind == "Node" and key in bucket:
            # The cache keeps a deleted node's row, unschedulable and empty (ingest.apply_event).
            gone = bucket[key]
            gone.setdefault("spec", {})["unschedulable"] = True
            gone.setdefault("status", {})["allocatable"] = {}
        else:
            bucket.pop(key, None)

    def _raw(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        obj = self._mirror.get(kind, {}).get(object_key(kind, namespace, name))
        return None if obj is None else clean(obj)

    def _capture_volumes(self, cache: SchedulerCache, add: Any) -> None:
        v = cache.volumes
        for name in v.classes:
            add(self._raw("StorageClass", None, name))
        for name in v.csi_drivers:
            add(self._raw("CSIDriver", None, name))
        for name in v.csi_nodes:
            add(self._raw("CSINode", None, name))
        for name, pv in v.pvs.items():
            obj = add(self._raw("PersistentVolume", None, name))
            if obj is not None and pv.claim_ref is not None and not (obj.get("spec") or {}).get("claimRef"):
                ref = pv.claim_ref  # a volume binding in flight
                obj.setdefault("spec", {})["claimRef"] = {"namespace": ref.namespace, "name": ref.name,
                                                          **({"uid": ref.uid} if ref.uid else {})}
        for pvc in v.pvcs.values():
            obj = add(self._raw("PersistentVolumeClaim", pvc.namespace, pvc.name))
            if obj is not None and pvc.annotations:
                md = obj.setdefault("metadata", {})
                md["annotations"] = {**(md.get("annotations") or {}), **pvc.annotations}
        for cap in v.capacities.values():
            add(self._raw("CSIStorageCapacity", cap.namespace, cap.name))

    def _capture_dra(self, cache: SchedulerCache, add: Any) -> None:
        dra = cache.dra
        for name in dra.classes:
            add(self._raw("DeviceClass", None, name))
        for name in dra.slices:
            add(self._raw("ResourceSlice", None, name))
        for key, claim in dra.claims.items():
            obj = add(self._raw("ResourceClaim", claim.namespace, claim.name))
            assumed = dra.assumed.get(key)
            if obj is not None and assumed is not None and assumed.allocation is not None and not (
                    obj.get("status") or {}).get("allocation"):  # an allocation in flight
                obj.setdefault("status", {})["allocation"] = assumed.allocation.to_dict()

    def capture(self, cache: SchedulerCache, *, now: float, rng: np.random.Generator, config_text: str | None,
                options: SchedulerOptions) -> _Capture:
        """The inputs of the session about to run on ``cache``."""
        docs: list[dict[str, Any]] = []
        missing = 0

        def add(obj: dict[str, Any] | None) -> dict[str, Any] | None:
            nonlocal missing
            if obj is None:
                missing += 1
            else:
                docs.append(obj)
            return obj

        for name in cache.priority_classes:
            add(self._raw("PriorityClass", None, name))
        for name in cache.queues:
            add(self._raw("Queue", None, name))
        for info in cache.node_list:
            add(self._raw("Node", None, info.node.name))
        for name in cache.numatopologies:
            add(self._raw("Numatopology", None, name))
        for name in cache.hypernodes:
            add(self._raw("HyperNode", None, name))
        for pdb in cache.pod_disruption_budgets.values():
            add(self._raw("PodDisruptionBudget", pdb.namespace, pdb.name))
        for quotas in cache.resource_quotas.values():
            for rq in quotas.values():
                add(self._raw("ResourceQuota", rq.namespace, rq.name))
        self._capture_volumes(cache, add)
        self._capture_dra(cache, add)
        for job in cache.jobs.values():
            pg = job.podgroup
            if pg is not None and (obj := add(self._raw("PodGroup", pg.namespace, pg.name))) is not None:
                obj["status"] = {**(obj.get("status") or {}), **podgroup_status(pg)}
        for pod in cache.pods.values():
            obj = add(self._raw("Pod", pod.namespace, pod.name))
            if obj is None:
                continue
            spec, md, st = obj.setdefault("spec", {}), obj.setdefault("metadata", {}), obj.setdefault("status", {})
            if pod.node_name and not spec.get("nodeName"):  # a bind in flight
                spec["nodeName"] = pod.node_name
                md["annotations"] = dict(pod.annotations)
            if pod.deletion_timestamp is not None and not md.get("deletionTimestamp"):  # an eviction in flight
                md["deletionTimestamp"] = to_rfc3339(pod.deletion_timestamp)
            if pod.nominated_node_name:
                st["nominatedNodeName"] = pod.nominated_node_name
        if missing:
            logger.warning("recorder: %d cached objects were never observed; the recording is incomplete", missing)
        session = {
            "format": FORMAT_VERSION, "now": now, "rng": rng.bit_generator.state,
            "last_processed_node_index": cache.memo.last_processed_node_index, "cache_sessions": cache.sessions,
            "options": asdict(options), "default_configuration": config_text is None, "incomplete": missing,
            "plugin_state": json.loads(json.dumps(cache.memo.plugin_state)),
            "node_usage": {node: [u.metrics_time, dict(u.cpu), dict(u.memory)]
                           for node, u in sorted(cache.node_usage.items())},
            "unassigned_numa": {node: [[*meta, {res: sorted(cpus) for res, cpus in sets.items()}]
                                       for meta, sets in held.items()]
                                for node, held in sorted(cache.unassigned_numa.items())},
        }
        if config_text is not None:
            docs.insert(0, config_document(config_text))
        return _Capture(docs, session)

    # ------------------------------------------------------------------ decisions
    def commit(self, capture: _Capture, result: SessionResult) -> Path:
        """Write the session's directory and drop the oldest beyond ``keep``; returns the directory."""
        name = f"session-{self._next:08d}"
        self._next += 1
        tmp = Path(tempfile.mkdtemp(dir=self.directory, prefix=f".{name}."))
        try:
            (tmp / "cluster.yaml").write_text(dump_json_documents(capture.documents), encoding="utf-8")
            (tmp / "session.json").write_text(json.dumps(capture.session, sort_keys=True) + "\n", encoding="utf-8")
            (tmp / "result.json").write_text(json.dumps(result_record(result), sort_keys=True) + "\n",
                                             encoding="utf-8")
            final = self.directory / name
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for old in self.sessions()[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def sessions(self) -> list[Path]:
        """The recorded session directories, oldest first."""
        return sorted(p for p in self.directory.iterdir() if p.is_dir() and _SESSION_DIR.match(p.name))


# ---------------------------------------------------------------------------- replay
@dataclass
class RecordedSession:
    path: Path
    session: dict[str, Any]
    documents: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    config_text: str | None = None
    result: dict[str, Any] = field(default_factory=dict)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ManifestError(f"{path}: not a JSON document: {e}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected a JSON object")
    return data


def load_session(path: str | os.PathLike[str]) -> RecordedSession:
    """A recorded session directory; :class:`ManifestError` names the file that is wrong."""
    root = Path(path)
    if not root.is_dir():
        raise ManifestError(f"{root}: not a recorded session directory (expected DIR/session-NNNNNNNN)")
    session = _read_json(root / "session.json")
    if session.get("format") != FORMAT_VERSION:
        raise ManifestError(f"{root / 'session.json'}: format: got {session.get('format')!r}; expected "
                            f"{FORMAT_VERSION}")
    for key in ("now", "rng", "last_processed_node_index", "cache_sessions", "options"):
        if key not in session:
            raise ManifestError(f"{root / 'session.json'}: {key}: missing")
    rec = RecordedSession(root, session, result=_read_json(root / "result.json"))
    cluster = root / "cluster.yaml"
    try:
        text = cluster.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError(f"{cluster}: cannot read: {e.strerror or e}") from None
    for i, doc in iter_documents(text, str(cluster)):
        if not isinstance(doc, dict):
            raise ManifestError(f"{cluster}: document {i}: expected a Kubernetes object mapping")
        md = doc.get("metadata") or {}
        if doc.get("kind") == "ConfigMap" and md.get("name") == CONFIG_MAP \
                and md.get("namespace") == CONFIG_NAMESPACE:
            text_value = (doc.get("data") or {}).get(CONFIG_KEY)
            if not isinstance(text_value, str):
                raise ManifestError(f"{cluster}: document {i}: data.{CONFIG_KEY}: expected the configuration text")
            rec.config_text = text_value
        else:
            rec.documents.append((i, doc))
    return rec


def replay_session(rec: RecordedSession, registry: Any = None) -> dict[str, Any]:
    """Re-run a recorded session; returns its decisions in :func:`result_record`'s form."""
    from pyvolcano.runtime.configuration import load_configuration
    from pyvolcano.runtime.registry import default_registry

    registry = registry or default_registry()
    source = str(rec.path / "cluster.yaml")
    config = load_configuration(registry, text=rec.config_text,
                                source=f"{source}: ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP}")
    opts = dict(rec.session["options"])
    opts["scheduler_names"] = tuple(opts.get("scheduler_names") or ("volcano",))
    opts["ignored_provisioners"] = tuple(opts.get("ignored_provisioners") or ())
    try:
        options = SchedulerOptions(**opts)
    except TypeError as e:
        raise ManifestError(f"{rec.path / 'session.json'}: options: {e}") from None
    cache = SchedulerCache(options)
    cache.evictions_delete_immediately = False
    for _i, doc in rec.documents:
        apply_event(cache, "ADDED", str(doc.get("kind", "")), doc)
    cache.memo.last_processed_node_index = int(rec.session["last_processed_node_index"])
    cache.sessions = int(rec.session["cache_sessions"])
    cache.memo.plugin_state = json.loads(json.dumps(rec.session.get("plugin_state") or {}))
    cache.set_node_usage({node: NodeUsage(float(t), cpu, mem)
                          for node, (t, cpu, mem) in (rec.session.get("node_usage") or {}).items()})
    for node, held in (rec.session.get("unassigned_numa") or {}).items():
        for uid, name, ns, sets in held:
            cache.add_unassigned_numa(node, PodMeta(uid, name, ns), {res: frozenset(c) for res, c in sets.items()})
    rng = np.random.default_rng()
    rng.bit_generator.state = rec.session["rng"]
    result = run_once(cache, config, registry.plugin_factories(config.plugin_names()),
                      registry.action_factories(config.actions), now=float(rec.session["now"]), rng=rng)
    return json.loads(json.dumps(result_record(result), sort_keys=True))
