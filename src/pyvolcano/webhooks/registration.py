"""The webhook configurations ``pyvolcano admission`` writes at start.

One ``MutatingWebhookConfiguration`` or ``ValidatingWebhookConfiguration`` per enabled path, with
upstream's names (``volcano-admission-service-jobs-mutate``, webhook ``mutatejob.volcano.sh``) and
the settings of upstream's Helm chart: the path's rule (group, version, resource, operations,
``scope: '*'``), ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, ``timeoutSeconds: 10``,
``admissionReviewVersions: [v1]``, ``reinvocationPolicy: Never`` for mutating webhooks, and a
``namespaceSelector`` that leaves out ``kube-system`` and the webhook's own namespace.
``sideEffects`` is ``None`` (upstream says ``NoneOnDryRun``; these webhooks have none at all).

Scope: a webhook outage must not block pods that are not Volcano's. The pod webhooks therefore
carry a ``matchConditions`` CEL expression, ``object.spec.schedulerName in ['volcano']`` (the
``--scheduler-name`` values): the API server does not call them for other pods, so with
``failurePolicy: Fail`` only Volcano's own pods wait for the webhook. ``matchConditions`` are GA
in Kubernetes 1.30 (beta, on by default, since 1.28); an ``objectSelector`` cannot select on
``spec``. Job, Queue and PodGroup are Volcano's own kinds and need no further scope. With
``--admission-conf`` the pod *mutating* webhook has no such condition: its resource groups are
meant for every pod (a Deployment's pods may be given ``schedulerName: volcano``), as upstream's.

``clientConfig`` is ``url: <--webhook-url><path>`` or ``service: {namespace, name, path, port:
443}``, with ``caBundle`` the PEM bytes of ``--ca-cert-file``. Upstream's current
webhook-manager only fills in the CA bundle of configurations its chart created; pyvolcano
creates them, or updates them when they differ, so a bare cluster needs nothing else.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.store.base import AlreadyExists, Conflict, NotFound, Store
from pyvolcano.webhooks.router import AdmissionService

__all__ = [
    "API_VERSION",
    "MANAGED_BY_LABEL",
    "ClientTarget",
    "Registration",
    "register",
    "webhook_configuration",
]

API_VERSION: Final = "admissionregistration.k8s.io/v1"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
_MANAGER: Final = "pyvolcano-admission"
_SERVICE_PORT: Final = 443
_TIMEOUT_SECONDS: Final = 10
_ATTEMPTS: Final = 5


@dataclass(frozen=True)
class ClientTarget:
    """Where the API server reaches the webhooks: a URL, or a Service (namespace and name)."""

    url: str = ""
    namespace: str = ""
    service_name: str = ""

    def __post_init__(self) -> None:
        if not self.url and not self.namespace and not self.service_name:
            raise ValueError("failed to start webhooks as both 'url' and 'namespace/name' of webhook are empty")
        if not self.url and not (self.namespace and self.service_name):
            raise ValueError("--webhook-namespace and --webhook-service-name must be given together "
                             "(or give --webhook-url)")
        if self.url and not self.url.startswith("https://"):
            raise ValueError(f"--webhook-url {self.url!r}: expected an https:// URL")

    def client_config(self, path: str, ca_bundle: bytes) -> dict[str, Any]:
        out: dict[str, Any]
        if self.url:
            out = {"url": self.url.rstrip("/") + path}
        else:
            out = {"service": {"namespace": self.namespace, "name": self.service_name, "path": path,
                               "port": _SERVICE_PORT}}
        if ca_bundle:
            out["caBundle"] = base64.b64encode(ca_bundle).decode()
        return out


def _cel_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def webhook_configuration(service: AdmissionService, target: ClientTarget, ca_bundle: bytes,
                          scheduler_names: Sequence[str], *, mutate_all_pods: bool = False) -> dict[str, Any]:
    """The configuration object registering ``service`` (``mutate_all_pods``: the pod mutating
    webhook sees every pod, for the resource groups of ``--admission-conf``)."""
    excluded = ["kube-system"] if not target.namespace else [target.namespace, "kube-system"]
    webhook: dict[str, Any] = {
        "name": service.webhook_name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": target.client_config(service.path, ca_bundle),
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded},
        ]},
        "objectSelector": {},
        "rules": [{
            "apiGroups": [service.group],
            "apiVersions": [service.version],
            "operations": list(service.operations),
            "resources": [service.resource],
            "scope": "*",
        }],
        "sideEffects": "None",
        "timeoutSeconds": _TIMEOUT_SECONDS,
    }
    if service.kind == "Pod" and not (service.mutating and mutate_all_pods):
        names = ", ".join(_cel_string(n) for n in scheduler_names)
        webhook["matchConditions"] = [
            {"name": "volcano-scheduled-pods", "expression": f"object.spec.schedulerName in [{names}]"},
        ]
    if service.mutating:
        webhook["reinvocationPolicy"] = "Never"
    return {
        "apiVersion": API_VERSION,
        "kind": "MutatingWebhookConfiguration" if service.mutating else "ValidatingWebhookConfiguration",
        "metadata": {"name": service.configuration_name, "labels": {MANAGED_BY_LABEL: _MANAGER}},
        "webhooks": [webhook],
    }


@dataclass(frozen=True)
class Registration:
    """What :func:`register` did to one configuration: ``created``, ``updated`` or ``unchanged``."""

    kind: str
    name: str
    action: str


def _apply(store: Store, desired: dict[str, Any]) -> Registration:
    kind, name = desired["kind"], desired["metadata"]["name"]
    for _ in range(_ATTEMPTS):
        try:
            current = store.get(kind, None, name)
        except NotFound:
            try:
                store.create(desired)
            except AlreadyExists:
                continue  # created meanwhile (another replica starting): compare with it
            return Registration(kind, name, "created")
        labels = dict(current.get("metadata", {}).get("labels") or {})
        if current.get("webhooks") == desired["webhooks"] and labels.get(MANAGED_BY_LABEL) == _MANAGER:
            return Registration(kind, name, "unchanged")
        labels[MANAGED_BY_LABEL] = _MANAGER
        updated = dict(current)
        updated["metadata"] = {**current["metadata"], "labels": labels}
        updated["webhooks"] = desired["webhooks"]
        try:
            store.update(updated)
        except (Conflict, NotFound):
            continue  # changed or deleted meanwhile: read again
        return Registration(kind, name, "updated")
    raise Conflict(kind, name, f"could not write the webhook configuration in {_ATTEMPTS} attempts; "
                               "it keeps changing")


def register(store: Store, services: Sequence[AdmissionService], target: ClientTarget, ca_bundle: bytes,
             scheduler_names: Sequence[str], *, mutate_all_pods: bool = False) -> list[Registration]:
    """Create or update the configuration of every service, in order."""
    return [_apply(store, webhook_configuration(s, target, ca_bundle, scheduler_names,
                                                mutate_all_pods=mutate_all_pods)) for s in services]
