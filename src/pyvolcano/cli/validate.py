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

A ConfigMap holding a scheduler configuration (key ``volcano-scheduler.conf``) or an admission
configuration (``volcano-admission.conf``) is checked as the scheduler and the webhook server
read it: plugin names and arguments (each plugin's own checks), the ``metrics`` section, the
resource groups; other ConfigMaps are ``NOT CHECKED``.

Output (stdout), one line per object, in input order, then the warnings::

    OK Job default/frame-render
    jobs.yaml: document 2: Job default/bad: spec.tasks[1].name: duplicated task name 'worker'
    NOT CHECKED Deployment default/web (apps/v1): pyvolcano does not know the API group 'apps'
    warning: jobs.yaml: document 3: Job default/j: spec.priorityClassName: no PriorityClass with name ...

A warning is for an object the API server accepts but that cannot work: a Job whose pods name a
PriorityClass that does not exist (checked after all files, so a class defined later counts); a
CronJob or JobTemplate whose jobs the job webhooks would refuse (their own webhooks do not look
inside the job template); a JobFlow step without a JobTemplate of its name in the inputs;
or for a field that changes placement upstream only through a scheduler plugin, or that
pyvolcano does not act on yet (:mod:`pyvolcano.api.plugin_fields`: a Queue's ``spec.affinity``
is honoured only by the nodegroup plugin)::

    warning: queues.yaml: document 0: Queue q1: spec.affinity (node-group affinity) is honoured only by the
    nodegroup plugin

Exit code 0 when every object is valid or not checked (warnings included), 2 otherwise (including
unreadable files and YAML errors, and no object at all: "no objects passed to validate", as
``kubectl apply`` says of an empty input).

Inputs are files, directories and ``-`` (:mod:`pyvolcano.api.inputs`). ``-o wide`` prefixes
every line with its file and document. ``-o json|yaml`` prints the admitted objects instead,
with the defaults admission filled in (one object, or a ``v1 List`` of several, as
``kubectl create --dry-run=server -o yaml`` does), and the error lines on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.admission._common import quote
from pyvolcano.admission.priority import find_priority_class
from pyvolcano.api.fields import unknown_fields
from pyvolcano.api.inputs import read_inputs
from pyvolcano.api.kinds import KindStatus, resolve
from pyvolcano.api.manifest import ManifestError, iter_documents
from pyvolcano.api.plugin_fields import fields_of, job_fields, message
from pyvolcano.cli.output import emit, error, one_line
from pyvolcano.store import CLUSTER_SCOPED_KINDS, InMemoryStore, StoreError, clone, object_key

__all__ = ["BUILTIN_QUEUES", "run_validate", "validate_documents"]

BUILTIN_QUEUES: dict[str, dict[str, Any]] = {
    "root": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "root"},
             "spec": {"reclaimable": False, "weight": 1}, "status": {"state": "Open"}},
    "default": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                "spec": {"reclaimable": True, "weight": 1}, "status": {"state": "Open"}},
}


def run_validate(paths: Sequence[str | os.PathLike[str]], *, output: str | None = None) -> int:
    """Validate the objects in ``paths``; print one line per object (or the admitted objects
    with ``output`` json/yaml); return 0 or 2."""
    ok = True
    seen = 0
    admitted: list[dict[str, Any]] = []
    current = [""]

    def tap(docs: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        for where, doc in docs:
            current[0] = where
            yield where, doc

    for text, good in validate_documents(tap(_documents(paths)), admitted=admitted):
        where, line = one_line(current[0]), one_line(text)
        if line.startswith("warning: "):
            print(line, file=sys.stderr)
            continue
        seen += 1
        ok = ok and good
        if output in ("json", "yaml"):
            if not good:
                print(line, file=sys.stderr)
        elif output == "wide" and good:
            print(f"{where}: {line}")
        else:
            print(line)
    if seen == 0:
        where = ", ".join(os.fspath(p) for p in paths)
        error(f"{where}: no objects passed to validate")
        return 2
    if output in ("json", "yaml") and admitted:
        emit(admitted[0] if len(admitted) == 1 else {"apiVersion": "v1", "kind": "List", "items": admitted},
             output)
    return 0 if ok else 2


def validate_documents(docs: Iterator[tuple[str, Any]], *,
                       admitted: list[dict[str, Any]] | None = None) -> Iterator[tuple[str, bool]]:
    """Admit ``(where, document)`` pairs in order; yield ``(output line, valid?)`` per object,
    then one warning line (valid) per admitted Job whose pods the API server would refuse; append
    each admitted object (defaults filled in) to ``admitted`` when given.

    A document that is a ManifestError instead of a mapping reports that error."""
    admission = VolcanoAdmission()
    store = InMemoryStore(clock=lambda: 0.0, admission=admission)
    for q in BUILTIN_QUEUES.values():
        store.create(clone(q))
    builtins_pending = set(BUILTIN_QUEUES)
    jobs: list[tuple[str, dict[str, Any]]] = []
    workflows: list[tuple[str, dict[str, Any]]] = []
    field_warnings: list[str] = []
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
        if (api, kind) == ("v1", "ConfigMap") and _configuration_keys(doc):
            yield from _check_configurations(where, key, doc)
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
        if admitted is not None:
            admitted.append(created)
        cmd = created["metadata"]
        if kind == "Job":
            jobs.append((where, created))
        elif kind in ("CronJob", "JobTemplate", "JobFlow"):
            workflows.append((where, created))
        ns = None if kind in CLUSTER_SCOPED_KINDS else cmd.get("namespace")
        shown_key = object_key(kind, ns, cmd["name"])
        field_warnings += _plugin_field_warnings(where, kind, shown_key, created)
        yield f"OK {kind} {shown_key}", True
    for where, job in jobs:
        for line in _job_priority_class_warnings(where, job, store):
            yield line, True
    for where, obj in workflows:
        for line in _workflow_warnings(where, obj, store, admission):
            yield line, True
    for line in field_warnings:
        yield line, True


def _workflow_warnings(where: str, obj: dict[str, Any], store: InMemoryStore,
                       admission: VolcanoAdmission) -> Iterator[str]:
    """The jobs a CronJob or JobTemplate makes, through the job webhooks as their controller's
    create would send them (nothing is stored); the JobTemplates a JobFlow's steps need."""
    kind, md = obj["kind"], obj["metadata"]
    ns = md.get("namespace") or "default"
    key = object_key(kind, ns, md["name"])
    if kind == "JobFlow":
        from pyvolcano.api.jobflow import flow_steps

        for step in flow_steps(obj):
            try:
                store.get("JobTemplate", ns, step.name)
            except StoreError:
                yield (f"warning: {where}: JobFlow {key}: flow {step.name!r}: no JobTemplate {ns}/{step.name}; its job "
                       "is created only once that JobTemplate exists")
        return
    spec = obj.get("spec") or {}
    template, path = ((spec.get("jobTemplate") or {}).get("spec"), "spec.jobTemplate.spec") if kind == "CronJob" \
        else (spec, "spec")
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": md["name"], "namespace": ns}, "spec": clone(template or {})}
    try:
        admission.admit("CREATE", job, None, store)
    except StoreError as e:
        problems = getattr(e, "errors", None) or [("", str(e))]
        text = "; ".join(f"{f}: {m}" if f else m for f, m in problems)
        yield f"warning: {where}: {kind} {key}: {path}: the job webhooks would refuse the jobs it creates: {text}"


def _plugin_field_warnings(where: str, kind: str, key: str, obj: Mapping[str, Any]) -> list[str]:
    """One warning per field of ``obj`` that only a plugin acts on, or pyvolcano not yet."""
    if kind == "Job":
        found = [(path, f) for path, f in job_fields(obj)]
    else:
        found = [(f.path, f) for f in fields_of(kind, obj)]
    return [f"warning: {where}: {kind} {key}: {message(f, with_configuration=False, path=path)}"
            for path, f in found]


_SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
_ADMISSION_CONF_KEY = "volcano-admission.conf"


def _configuration_keys(doc: Mapping[str, Any]) -> list[str]:
    data = doc.get("data")
    if not isinstance(data, Mapping):
        return []
    return [k for k in (_SCHEDULER_CONF_KEY, _ADMISSION_CONF_KEY) if isinstance(data.get(k), str)]


def _check_configurations(where: str, key: str, doc: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """A ConfigMap holding a scheduler configuration (``volcano-scheduler.conf``: actions,
    plugins and their arguments, the metrics section) or an admission one
    (``volcano-admission.conf``: the resource groups) is checked as the component reads it."""
    from pyvolcano.admission.resource_groups import AdmissionConfError, load_admission_conf
    from pyvolcano.conf import ConfigError
    from pyvolcano.runtime.configuration import load_configuration
    from pyvolcano.runtime.registry import default_registry

    data = doc["data"]
    ok = True
    for name in _configuration_keys(doc):
        source = f"{where}: ConfigMap {key}: data.{name}"
        try:
            if name == _SCHEDULER_CONF_KEY:
                load_configuration(default_registry(), text=data[name], source=source)
            else:
                load_admission_conf(data[name], source)
        except (ConfigError, AdmissionConfError) as e:
            ok = False
            yield str(e), False
    if ok:
        yield f"OK ConfigMap {key} ({', '.join(_configuration_keys(doc))})", True


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


def _documents(paths: Sequence[str | os.PathLike[str]]) -> Iterator[tuple[str, Any]]:
    for source, text in read_inputs(paths):
        if isinstance(text, ManifestError):
            yield source, text
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
