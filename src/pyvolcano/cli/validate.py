"""``pyvolcano validate FILE...``: admission without running anything.

Every document of every file is created, in order, in one in-memory store with
:class:`~pyvolcano.admission.VolcanoAdmission`, so an object may refer to one defined earlier
(a Job naming a Queue from the same files). The built-in ``root`` and ``default`` queues exist
from the start; a file may redefine either one once (it is admitted like a new queue and then
replaces the built-in).

Output (stdout), one line per object, in input order::

    OK Job default/test-job
    jobs.yaml: document 2: Job default/bad: spec.tasks[1].name: duplicated task name 'worker'

Exit code 0 when every object is valid, 2 otherwise (including unreadable files and YAML errors).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.api.manifest import ManifestError, iter_documents, read_manifest_text
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
    """Admit ``(where, document)`` pairs in order; yield ``(output line, valid?)`` per object.

    A document that is a ManifestError instead of a mapping reports that error."""
    admission = VolcanoAdmission()
    store = InMemoryStore(clock=lambda: 0.0, admission=admission)
    for q in BUILTIN_QUEUES.values():
        store.create(clone(q))
    builtins_pending = set(BUILTIN_QUEUES)
    for where, doc in docs:
        if isinstance(doc, ManifestError):
            yield str(doc), False
            continue
        if not isinstance(doc, Mapping):
            yield f"{where}: got {type(doc).__name__}; expected a Kubernetes object mapping", False
            continue
        kind = doc.get("kind")
        if not isinstance(kind, str) or not kind:
            yield f"{where}: kind: Required value", False
            continue
        obj = clone(dict(doc))
        try:
            md = obj.get("metadata")
            name = md.get("name") if isinstance(md, Mapping) else None
            if kind == "Queue" and isinstance(name, str) and name in builtins_pending:
                builtins_pending.discard(name)
                created = _replace_builtin_queue(store, admission, obj)
            else:
                created = store.create(obj)
        except StoreError as e:
            yield f"{where}: {e}", False
            continue
        cmd = created["metadata"]
        ns = None if kind in CLUSTER_SCOPED_KINDS else cmd.get("namespace")
        yield f"OK {kind} {object_key(kind, ns, cmd['name'])}", True


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
            for index, doc in iter_documents(read_manifest_text(path), source):
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

