"""Job plugin interface, the plugin context and Go ``flag`` parsing of plugin arguments.

See :mod:`pyvolcano.controllers.job.plugins` for the hook contract. Shared helpers used by
several plugins (pod index, task key, domain names, ConfigMap/Secret upserts) live here too,
mirroring ``pkg/controllers/job/helpers`` and ``volcano.sh/apis/pkg/apis/helpers``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pyvolcano.api.names import JOB_API_VERSION, TASK_SPEC_KEY
from pyvolcano.controllers._common import annotations_of, controller_ref, name_of, namespace_of, spec
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.store.base import NotFound, Store

__all__ = [
    "DEFAULT_TASK_SPEC",
    "FlagError",
    "FlagSet",
    "JobPlugin",
    "MarkingPlugin",
    "PluginBuilder",
    "PluginContext",
    "PluginError",
    "append_env",
    "controlled_resources",
    "create_or_update_configmap",
    "create_or_update_secret",
    "delete_quietly",
    "make_domain_name",
    "make_pod_name",
    "pod_index_under_task",
    "task_index_under_job",
    "task_key",
]

DEFAULT_TASK_SPEC = "default"
logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PluginContext:
    """What plugins may touch: the store (to create Services, ConfigMaps, Secrets) and the
    runtime's entropy (SSH keys)."""

    store: Store
    entropy: Entropy


class JobPlugin(Protocol):
    name: str

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None: ...

    def on_job_add(self, job: dict[str, Any]) -> None: ...

    def on_job_delete(self, job: dict[str, Any]) -> None: ...

    def on_job_update(self, job: dict[str, Any]) -> None: ...


PluginBuilder = Callable[[PluginContext, Sequence[str]], JobPlugin]


class MarkingPlugin:
    """Job hooks of the plugins that only record themselves in ``controlledResources``
    (``plugin-<name>: <name>``) on add and remove that mark on delete (env, mpi, pytorch,
    tensorflow upstream)."""

    name: str

    def on_job_add(self, job: dict[str, Any]) -> None:
        controlled_resources(job)[f"plugin-{self.name}"] = self.name

    def on_job_delete(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") == self.name:
            del cr[f"plugin-{self.name}"]

    def on_job_update(self, job: dict[str, Any]) -> None:
        return None


class FlagError(ValueError):
    pass


class PluginError(Exception):
    """A plugin hook failed; the job controller treats it like a failed API call (requeue)."""


class FlagSet:
    """Go ``flag.FlagSet`` with ``ContinueOnError``: flags parsed before an error keep their values.

    Accepts ``-name``, ``--name``, ``-name=value`` and ``-name value`` (the latter not for
    booleans); parsing stops at the first non-flag argument or after ``--``.
    """

    def __init__(self, name: str):
        self.name = name
        self._kinds: dict[str, type] = {}
        self.values: dict[str, Any] = {}

    def string(self, name: str, default: str) -> None:
        self._kinds[name] = str
        self.values[name] = default

    def integer(self, name: str, default: int) -> None:
        self._kinds[name] = int
        self.values[name] = default

    def boolean(self, name: str, default: bool) -> None:
        self._kinds[name] = bool
        self.values[name] = default

    def parse(self, args: Sequence[str]) -> None:
        """Parse ``args``; on a bad flag log the error like upstream and keep what was parsed."""
        try:
            self._parse(list(args))
        except FlagError as e:
            logger.error("plugin %s flagset parse failed, err: %s", self.name, e)

    def _parse(self, args: list[str]) -> None:
        i = 0
        while i < len(args):
            arg = str(args[i])
            if len(arg) < 2 or not arg.startswith("-"):
                return
            body = arg[2:] if arg.startswith("--") else arg[1:]
            if arg == "--":
                return
            if not body or body.startswith("-") or body.startswith("="):
                raise FlagError(f"bad flag syntax: {arg}")
            name, has_value, value = body.partition("=")
            kind = self._kinds.get(name)
            if kind is None:
                raise FlagError(f"flag provided but not defined: -{name}")
            if kind is bool:
                if has_value:
                    parsed = _parse_bool(value)
                    if parsed is None:
                        raise FlagError(f'invalid boolean value "{value}" for -{name}')
                    self.values[name] = parsed
                else:
                    self.values[name] = True
            else:
                if not has_value:
                    if i + 1 >= len(args):
                        raise FlagError(f"flag needs an argument: -{name}")
                    i += 1
                    value = str(args[i])
                if kind is int:
                    try:
                        if not value.isascii():
                            raise ValueError(value)
                        self.values[name] = int(value, 0)
                    except ValueError:
                        raise FlagError(f'invalid value "{value}" for flag -{name}: parse error') from None
                else:
                    self.values[name] = value
            i += 1


def _parse_bool(text: str) -> bool | None:
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


# ---------------------------------------------------------------------- shared helpers
def make_pod_name(job_name: str, task_name: str, index: int) -> str:
    """``<job>-<task>-<index>`` (``jobhelpers.PodNameFmt``)."""
    return f"{job_name}-{task_name}-{index}"


def pod_index_under_task(pod: Mapping[str, Any]) -> str:
    """The last ``-``-separated part of the pod name when it has at least three parts, else ""."""
    parts = name_of(pod).split("-")
    return parts[-1] if len(parts) >= 3 else ""


def task_key(pod: Mapping[str, Any]) -> str:
    """The pod's task name (``volcano.sh/task-spec``), ``default`` when missing or empty."""
    return annotations_of(pod).get(TASK_SPEC_KEY) or DEFAULT_TASK_SPEC


def tasks_of(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in spec(job).get("tasks") or [] if isinstance(t, dict)]


def task_index_under_job(task_name: str, job: Mapping[str, Any]) -> int:
    for i, t in enumerate(tasks_of(job)):
        if t.get("name") == task_name:
            return i
    return -1


def template_spec(task: Mapping[str, Any]) -> dict[str, Any]:
    tmpl = task.get("template")
    sp = tmpl.get("spec") if isinstance(tmpl, dict) else None
    return sp if isinstance(sp, dict) else {}


def replicas_of(task: Mapping[str, Any]) -> int:
    try:
        return int(task.get("replicas") or 0)
    except (TypeError, ValueError):
        return 0


def make_domain_name(task: Mapping[str, Any], job: Mapping[str, Any], index: int) -> str:
    """``<hostname>.<subdomain>``, defaulting to the pod name and the job name."""
    ts = template_spec(task)
    host = str(ts.get("hostname") or "") or make_pod_name(name_of(job), str(task.get("name", "")), index)
    sub = str(ts.get("subdomain") or "") or name_of(job)
    return f"{host}.{sub}"


def controlled_resources(job: dict[str, Any]) -> dict[str, str]:
    """``job.status.controlledResources``, created if missing."""
    st = job.setdefault("status", {})
    cr = st.get("controlledResources")
    if not isinstance(cr, dict):
        cr = {}
        st["controlledResources"] = cr
    return cr


def containers(pod: dict[str, Any], *, init: bool = False) -> list[dict[str, Any]]:
    sp = pod.setdefault("spec", {})
    key = "initContainers" if init else "containers"
    return [c for c in sp.get(key) or [] if isinstance(c, dict)]


def append_env(container: dict[str, Any], *env: dict[str, Any]) -> None:
    container["env"] = [*(container.get("env") or []), *env]


def _owned(job: Mapping[str, Any], kind: str, name: str, api_version: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace_of(job),
            "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
        },
    }


def create_or_update_configmap(store: Store, job: Mapping[str, Any], data: dict[str, str], name: str) -> None:
    """``helpers.CreateOrUpdateConfigMap``: create it owned by the job, or replace changed data."""
    try:
        old = store.get("ConfigMap", namespace_of(job), name)
    except NotFound:
        cm = _owned(job, "ConfigMap", name)
        cm["data"] = data
        store.create(cm)
        return
    if (old.get("data") or {}) == data:
        return
    old["data"] = data
    store.update(old)


def create_or_update_secret(store: Store, job: Mapping[str, Any], data: dict[str, str], name: str) -> None:
    """``helpers.CreateOrUpdateSecret``; ``data`` values are base64 (as in a Secret manifest).

    Like upstream, an existing Secret is only rewritten when its ``config`` entry changed.
    """
    try:
        old = store.get("Secret", namespace_of(job), name)
    except NotFound:
        secret = _owned(job, "Secret", name)
        secret["data"] = data
        store.create(secret)
        return
    if (old.get("data") or {}).get("config") == data.get("config"):
        return
    old["data"] = data
    store.update(old)


def delete_quietly(store: Store, kind: str, namespace: str, name: str) -> None:
    """Delete, treating NotFound as success."""
    with contextlib.suppress(NotFound):
        store.delete(kind, namespace, name)
