"""The ``svc`` job plugin (``pkg/controllers/job/plugins/svc``).

On job initiation it creates, all owned by the job:

* a headless Service ``<job>`` (``clusterIP: None``) selecting the job's pods by
  ``volcano.sh/job-name`` and ``volcano.sh/job-namespace``, with
  ``publishNotReadyAddresses`` from ``--publish-not-ready-addresses``;
* a ConfigMap ``<job>-svc`` holding, per task, ``<task>.host`` (one domain name per line),
  ``VC_<TASK>_HOSTS`` (comma separated) and ``VC_<TASK>_NUM`` (task names upper-cased, ``-``
  replaced by ``_``); a task whose template sets ``hostname`` contributes only one host;
* a NetworkPolicy ``<job>`` admitting ingress only from the job's own pods, unless
  ``--disable-network-policy``.

Each pod gets ``hostname`` (its name) and ``subdomain`` (the job name) unless its template
sets them, every ``VC_<TASK>_HOSTS``/``VC_<TASK>_NUM`` as env vars read from the ConfigMap
(unless ``--inject-hosts-env=false``), and the ConfigMap mounted at ``/etc/volcano``.
On later syncs the ConfigMap is refreshed (replica changes); on kill everything is deleted.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, JOB_NAME_KEY, JOB_NAMESPACE_KEY
from pyvolcano.controllers._common import controller_ref, name_of, namespace_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    PluginContext,
    append_env,
    containers,
    controlled_resources,
    create_or_update_configmap,
    delete_quietly,
    make_pod_name,
    replicas_of,
    tasks_of,
    template_spec,
)
from pyvolcano.store.base import NotFound

__all__ = ["CONFIGMAP_MOUNT_PATH", "ServicePlugin", "generate_hosts"]

CONFIGMAP_MOUNT_PATH = "/etc/volcano"


def _env_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def generate_hosts(job: dict[str, Any]) -> dict[str, str]:
    """``svc.GenerateHosts``: the ConfigMap data for the job's tasks."""
    shape = tuple(
        (str(ts.get("name", "")), replicas_of(ts), str(template_spec(ts).get("hostname") or ""),
         str(template_spec(ts).get("subdomain") or ""))
        for ts in tasks_of(job)
    )
    return dict(_hosts(name_of(job), shape))


@functools.lru_cache(maxsize=256)
def _hosts(job_name: str, shape: tuple[tuple[str, int, str, str], ...]) -> tuple[tuple[str, str], ...]:
    data: list[tuple[str, str]] = []
    for task_name, replicas, hostname, subdomain in shape:
        hosts: list[str] = []
        for i in range(replicas):
            hosts.append(f"{hostname or make_pod_name(job_name, task_name, i)}.{subdomain or job_name}")
            if hostname:
                break
        key = _env_key(task_name)
        data.append((f"{key}.host", "\n".join(hosts)))
        data.append((f"VC_{key.upper()}_HOSTS", ",".join(hosts)))
        data.append((f"VC_{key.upper()}_NUM", str(len(hosts))))
    return tuple(data)


class ServicePlugin:
    name = "svc"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.boolean("publish-not-ready-addresses", False)
        flags.boolean("disable-network-policy", False)
        flags.boolean("inject-hosts-env", True)
        flags.parse(arguments)
        self.publish_not_ready_addresses = bool(flags.values["publish-not-ready-addresses"])
        self.disable_network_policy = bool(flags.values["disable-network-policy"])
        self.inject_hosts_env = bool(flags.values["inject-hosts-env"])

    def cm_name(self, job: dict[str, Any]) -> str:
        return f"{name_of(job)}-{self.name}"

    # ------------------------------------------------------------------ hooks
    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        sp = pod.setdefault("spec", {})
        if not sp.get("hostname"):
            sp["hostname"] = name_of(pod)
        if not sp.get("subdomain"):
            sp["subdomain"] = name_of(job)
        if self.inject_hosts_env:
            names: list[str] = []
            for ts in tasks_of(job):
                key = _env_key(str(ts.get("name", ""))).upper()
                names += [f"VC_{key}_HOSTS", f"VC_{key}_NUM"]
            env = [
                {"name": n, "valueFrom": {"configMapKeyRef": {"name": self.cm_name(job), "key": n}}} for n in names
            ]
            for init in (False, True):
                for c in containers(pod, init=init):
                    append_env(c, *env)
        self._mount_configmap(pod, job)

    def on_job_add(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") == self.name:
            return
        store = self.ctx.store
        create_or_update_configmap(store, job, generate_hosts(job), self.cm_name(job))
        self._create_service_if_not_exist(job)
        if not self.disable_network_policy:
            self._create_network_policy_if_not_exist(job)
        cr[f"plugin-{self.name}"] = self.name

    def on_job_delete(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") != self.name:
            return
        store, ns = self.ctx.store, namespace_of(job)
        delete_quietly(store, "ConfigMap", ns, self.cm_name(job))
        delete_quietly(store, "Service", ns, name_of(job))
        del cr[f"plugin-{self.name}"]
        if not self.disable_network_policy:
            delete_quietly(store, "NetworkPolicy", ns, name_of(job))

    def on_job_update(self, job: dict[str, Any]) -> None:
        create_or_update_configmap(self.ctx.store, job, generate_hosts(job), self.cm_name(job))

    # ------------------------------------------------------------------ helpers
    def _mount_configmap(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        cm = self.cm_name(job)
        sp = pod.setdefault("spec", {})
        sp["volumes"] = [*(sp.get("volumes") or []), {"name": cm, "configMap": {"name": cm}}]
        mount = {"mountPath": CONFIGMAP_MOUNT_PATH, "name": cm}
        for init in (False, True):
            for c in containers(pod, init=init):
                c["volumeMounts"] = [*(c.get("volumeMounts") or []), dict(mount)]

    def _selector(self, job: dict[str, Any]) -> dict[str, str]:
        return {JOB_NAME_KEY: name_of(job), JOB_NAMESPACE_KEY: namespace_of(job)}

    def _create_service_if_not_exist(self, job: dict[str, Any]) -> None:
        store = self.ctx.store
        try:
            store.get("Service", namespace_of(job), name_of(job))
            return
        except NotFound:
            pass
        spec: dict[str, Any] = {"clusterIP": "None", "selector": self._selector(job)}
        if self.publish_not_ready_addresses:
            spec["publishNotReadyAddresses"] = True
        store.create({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name_of(job),
                "namespace": namespace_of(job),
                "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
            },
            "spec": spec,
        })

    def _create_network_policy_if_not_exist(self, job: dict[str, Any]) -> None:
        store = self.ctx.store
        try:
            store.get("NetworkPolicy", namespace_of(job), name_of(job))
            return
        except NotFound:
            pass
        store.create({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": name_of(job),
                "namespace": namespace_of(job),
                "ownerReferences": [controller_ref(job, JOB_API_VERSION, "Job")],
            },
            "spec": {
                "podSelector": {"matchLabels": self._selector(job)},
                "ingress": [{"from": [{"podSelector": {"matchLabels": self._selector(job)}}]}],
                "policyTypes": ["Ingress"],
            },
        })
