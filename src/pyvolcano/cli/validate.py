"""``pyvolcano validate FILE...``: admission without running anything.

Every document of every file is created, in order, in one in-memory store with
:class:`~pyvolcano.admission.VolcanoAdmission`, so an object may refer to one defined earlier
(a Job naming a Queue from the same files). The built-in ``root`` and ``default`` queues exist
from the start; a file may redefine either one once (it is admitted like a new queue and then
replaces the built-in).

An object's kind is decided by ``apiVersion`` and ``kind`` together (:mod:`pyvolcano.api.kinds`).
A kind pyvolcano validates is first checked strictly for unknown fields, as ``kubectl``'s default
``--validate=strict`` has the API server do (:mod:`pyvolcano.api.fields`), then admitted. A real
kind pyvolcano does not model (a ConfigMap, a ``batch/v1`` Job, an Argo Workflow, an unknown API
group) is reported as ``NOT CHECKED`` and not stored; a kind or version that does not exist in a
known API group (``kind: Jobb``, ``kind: job``, ``v2`` Node) is an error.

Output (stdout), one line per object, in input order, then the warnings::

    OK Job default/test-job
    jobs.yaml: document 2: Job default/bad: spec.tasks[1].name: duplicated task name 'worker'
    NOT CHECKED Deployment default/web (apps/v1): pyvolcano does not know the API group 'apps'
    warning: jobs.yaml: document 3: Job default/j: spec.priorityClassName: no PriorityClass with name ...

A warning is for an object the API server accepts but that cannot work: a Job whose pods name a
PriorityClass that does not exist (checked after all files, so a class defined later counts).

Exit code 0 when every object is valid or not checked (warnings included), 2 otherwise
(including unreadable files and YAML errors).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.admission._common import quote
from pyvolcano.admission.priority import find_priority_class
from pyvolcano.api.fields import unknown_fields
from pyvolcano.api.kinds import KindStatus, resolve
from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.store import CLUSTER_SCOPED_KINDS, InMemoryStore, StoreError, clone, object_key

__all__ = ["BUILTIN_QUEUES", "run_validate", "validate_documents"]

BUILTIN_QUEUES: dict[str, dict[str, Any]] = {
    "root": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "root"},
             "spec": {"reclaimable": False, "weight": 1}, "status": {"state": "Open"}},
    "default": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                "spec": {"reclaimable": True, "weight": 1}, "status": {"state": "Open"}},
}


def run_validate(paths: list[Path]) -> int:
    """Validate the objects in ``paths``; print one line per object; return 0 or 2."""
    ok = True
    for line, good in validate_documents(_documents(paths)):
        print(line)
        ok = ok and good
    return 0 if ok else 2


def validate_documents(docs: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, bool]]:
    """Admit ``(where, document)`` pairs in order; yield ``(output line, valid?)`` per object,
    then one warning line (valid) per admitted Job whose pods the API server would refuse.

    A document that is a ManifestError instead of a mapping reports that error."""
    admission = VolcanoAdmission()
    store = InMemoryStore(clock=lambda: 0.0, admission=admission)
    for q in BUILTIN_QUEUES.values():
        store.create(clone(q))
    builtins_pending = set(BUILTIN_QUEUES)
    jobs: list[tuple[str, dict[str, Any]]] = []
    for where, doc in docs:
        if isinstance(doc, ManifestError):
            yield str(doc), False
            continue
        if not isinstance(doc, Mapping):
            yield f"{where}: got {type(doc).__name__}; expected a Kubernetes object mapping", False
            continue
        kind, api = doc.get("kind"), doc.get("apiVersion")
        if not isinstance(kind, str) or not kind or not isinstance(api, str) or not api:
            yield f"{where}: {_type_problem(kind, api)}", False
            continue
        md = doc.get("metadata")
        name = md.get("name") if isinstance(md, Mapping) else None
        ns = md.get("namespace") if isinstance(md, Mapping) else None
        generate = md.get("generateName") if isinstance(md, Mapping) else None
        shown = name if isinstance(name, str) and name else (
            f"{generate}*" if isinstance(generate, str) and generate else "?")
        key = object_key(kind, ns if isinstance(ns, str) else None, shown)
        res = resolve(api, kind)
        if res.status is KindStatus.UNKNOWN:
            yield f"{where}: {kind} {key}: {res.message}", False
            continue
        if res.status is KindStatus.NOT_CHECKED:
            yield f"NOT CHECKED {kind} {key} ({api}): {res.message}", True
            continue
        unknown = unknown_fields(doc, api, kind)
        if unknown:
            yield f"{where}: {kind} {key}: " + "; ".join(f"{f}: {m}" for f, m in unknown), False
            continue
        obj = clone(dict(doc))
        try:
            if kind == "Queue" and isinstance(name, str) and name in builtins_pending:
                builtins_pending.discard(name)
                created = _replace_builtin_queue(store, admission, obj)
            else:
                created = store.create(obj)
        except StoreError as e:
            yield f"{where}: {e}", False
            continue
        cmd = created["metadata"]
        if kind == "Job":
            jobs.append((where, created))
        ns = None if kind in CLUSTER_SCOPED_KINDS else cmd.get("namespace")
        yield f"OK {kind} {object_key(kind, ns, cmd['name'])}", True
    for where, job in jobs:
        for line in _job_priority_class_warnings(where, job, store):
            yield line, True


def _type_problem(kind: Any, api: Any) -> str:
    for key, value in (("kind", kind), ("apiVersion", api)):
        if value is None or value == "":
            return f"{key}: Required value"
        if not isinstance(value, str):
            return f"{key}: Invalid value: {quote(value)}: expected a string"
    raise AssertionError("kind and apiVersion are both non-empty strings")


def _job_priority_class_warnings(where: str, job: Mapping[str, Any], store: InMemoryStore) -> Iterator[str]:
    """The job controller copies the job's ``priorityClassName`` onto every pod without one of its
    own; the Priority admission plugin refuses a pod whose class does not exist, so such a job is
    admitted but none of its pods can ever be created."""
    md = job["metadata"]
    key = object_key("Job", md.get("namespace"), md["name"])
    spec: Mapping[str, Any] = job["spec"] if isinstance(job.get("spec"), Mapping) else {}
    job_pc = spec.get("priorityClassName") or ""
    seen: set[str] = set()
    tasks: list[Any] = spec["tasks"] if isinstance(spec.get("tasks"), list) else []
    for i, task in enumerate(tasks):
        tmpl_spec = ((task.get("template") or {}).get("spec") or {}) if isinstance(task, Mapping) else {}
        own = tmpl_spec.get("priorityClassName") if isinstance(tmpl_spec, Mapping) else None
        name, path = (own, f"spec.tasks[{i}].template.spec.priorityClassName") if own else (
            job_pc, "spec.priorityClassName")
        if not isinstance(name, str) or not name or name in seen or find_priority_class(store, name) is not None:
            continue
        seen.add(name)
        yield (f"warning: {where}: Job {key}: {path}: no PriorityClass with name {name} was found; the API "
               "server's Priority admission will refuse to create the job's pods")


def _replace_builtin_queue(store: InMemoryStore, admission: VolcanoAdmission, obj: dict[str, Any]) -> dict[str, Any]:
    """Admit a user's definition of ``root`` / ``default`` as a CREATE, then store it in place of
    the built-in queue of that name."""
    obj["metadata"].pop("namespace", None)
    admitted = admission.admit("CREATE", obj, None, store)
    current = store.get("Queue", None, admitted["metadata"]["name"])
    admitted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    admitted["metadata"].pop("uid", None)
    updated = store.update(admitted)
    if isinstance(obj.get("status"), Mapping):
        updated = store.update_status({**updated, "status": obj["status"]})
    return updated


def _documents(paths: list[Path]) -> Iterator[tuple[str, Any]]:
    for path in paths:
        source = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            yield source, ManifestError(f"{source}: cannot read: {e.strerror or e}")
            continue
        except UnicodeDecodeError:
            yield source, ManifestError(f"{source}: not UTF-8 text")
            continue
        try:
            for index, doc in iter_documents(text, source):
                if doc is None:
                    continue
                yield from _expand(f"{source}: document {index}", doc)
        except ManifestError as e:
            yield source, e


def _expand(where: str, doc: Any) -> Iterator[tuple[str, Any]]:
    """A ``kind: List`` document stands for its items."""
    if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        for k, item in enumerate(doc["items"]):
            yield f"{where} items[{k}]", item
        return
    yield where, doc

