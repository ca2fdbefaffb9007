"""The install bundle: every object pyvolcano needs on a cluster, as plain dicts.

:func:`build_bundle` returns, in this order: the Namespace, the four CRDs
(:mod:`~pyvolcano.deploy.crds`), per component a ServiceAccount with its ClusterRole, Role and
bindings (:mod:`~pyvolcano.deploy.rbac`), the scheduler's ConfigMap holding upstream's default
``volcano-scheduler.conf``, the metrics Services of the scheduler and the controller-manager,
the admission Service (443 -> 8443), the Deployments of
``scheduler``, ``controller-manager`` and ``admission``, and (with ``queues=True``) the ``root``
and ``default`` Queues with the spec upstream's scheduler gives them when it creates them
(``newDefaultAndRootQueue``: root not reclaimable, default reclaimable, both weight 1).

The Queues are left out by default: ``kubectl apply`` maps every object to its API before it
creates anything, so in one apply that also creates the Queue CRD it refuses the Queues ("ensure
CRDs are installed first") and exits 1. The controller-manager creates ``root`` and ``default``
at start (as upstream's scheduler does), so ``pyvolcano install | kubectl apply -f -`` gives the
same cluster in one step; ``--queues`` adds them for a second apply or a GitOps repository.
Object names follow upstream's chart installed as release ``volcano``.

The admission server needs a TLS Secret (``volcano-admission-secret`` with ``tls.crt``,
``tls.key`` and ``ca.crt``); it is part of the bundle only when its files are given
(``Certificates``: read from files, or made by :mod:`pyvolcano.deploy.certs`, which the
builder never calls itself, because generated keys make the output differ on every run).

Invariants: the output depends only on the arguments (no clock, no randomness, fixed order);
the namespace and image appear wherever a namespace or image is named.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from pyvolcano import __version__
from pyvolcano.api.names import is_dns1123_label
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.deploy.crds import custom_resource_definitions
from pyvolcano.deploy.rbac import COMPONENTS, rbac_objects

__all__ = [
    "ADMISSION_PORT",
    "ADMISSION_SECRET",
    "ADMISSION_SERVICE",
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "SCHEDULER_CONFIGMAP",
    "BundleError",
    "Certificates",
    "build_bundle",
    "check_namespace",
    "default_queues",
    "dump_documents",
]

DEFAULT_NAMESPACE: Final = "volcano-system"
DEFAULT_IMAGE: Final = f"pyvolcano:{__version__}"
SCHEDULER_CONFIGMAP: Final = "volcano-scheduler-configmap"
SCHEDULER_CONF_KEY: Final = "volcano-scheduler.conf"
SCHEDULER_CONF_DIR: Final = "/volcano.scheduler"
ADMISSION_SECRET: Final = "volcano-admission-secret"
ADMISSION_SERVICE: Final = "volcano-admission-service"
ADMISSION_CERT_DIR: Final = "/admission.local.config/certificates"
# The command's default paths plus HyperNode and CronJob validation, which upstream's chart enables
# too, and JobFlow validation, which it does not (docs/differences.md).
ENABLED_ADMISSION: Final = ("/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,"
                            "/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate,"
                            "/jobflows/validate")
ADMISSION_PORT: Final = 8443
HEALTHZ_PORT: Final = 11251  # upstream's default --healthz-address :11251
METRICS_PORTS: Final = {"scheduler": 8080, "controller-manager": 8081}  # upstream's --listen-address defaults

_IMAGE: Final = re.compile(r"^[^\s]+$")


class BundleError(ValueError):
    """A bad option: the message names the option and what was expected."""


@dataclass(frozen=True, slots=True)
class Certificates:
    """PEM texts for the admission server's Secret."""

    tls_crt: str
    tls_key: str
    ca_crt: str


def check_namespace(namespace: str) -> None:
    """Raise :class:`BundleError` unless ``namespace`` is a DNS-1123 label."""
    if not is_dns1123_label(namespace):
        raise BundleError(f"--namespace: got {namespace!r}; expected a DNS-1123 label such as volcano-system "
                          "(lower-case letters, digits and '-', at most 63 characters)")


def _check_options(namespace: str, image: str) -> None:
    check_namespace(namespace)
    if not _IMAGE.match(image):
        raise BundleError(f"--image: got {image!r}; expected an image reference such as pyvolcano:{__version__}")


def _labels(app: str) -> dict[str, str]:
    return {"app": app}


def _container(name: str, image: str, args: list[str], *, ports: list[dict[str, Any]],
               mounts: list[dict[str, Any]], probe: dict[str, Any] | None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": ports,
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [*mounts, {"name": "tmp", "mountPath": "/tmp"}],
    }
    if probe is not None:
        c["livenessProbe"] = probe
        c["readinessProbe"] = copy.deepcopy(probe)
    return c


def _deployment(name: str, namespace: str, app: str, service_account: str, container: dict[str, Any],
                volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(app)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": _labels(app)},
            "template": {
                "metadata": {"labels": _labels(app)},
                "spec": {
                    "serviceAccountName": service_account,
                    "priorityClassName": "system-cluster-critical",
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [*volumes, {"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def _healthz_probe(scheme: str = "HTTP") -> dict[str, Any]:
    return {"httpGet": {"path": "/healthz", "port": HEALTHZ_PORT, "scheme": scheme}, "initialDelaySeconds": 5,
            "periodSeconds": 10}


def _ports(component: str) -> list[dict[str, Any]]:
    return [{"name": "metrics", "containerPort": METRICS_PORTS[component], "protocol": "TCP"},
            {"name": "healthz", "containerPort": HEALTHZ_PORT, "protocol": "TCP"}]


def _leader_args(namespace: str) -> list[str]:
    return ["--leader-elect", f"--leader-elect-resource-namespace={namespace}", "--enable-healthz",
            "--enable-metrics"]


def _metrics_service(name: str, namespace: str, app: str, port: int) -> dict[str, Any]:
    """Upstream's ``<component>-service``: the metrics port, annotated for Prometheus scraping."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name, "namespace": namespace, "labels": _labels(app),
            "annotations": {"prometheus.io/path": "/metrics", "prometheus.io/port": str(port),
                            "prometheus.io/scrape": "true"},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": _labels(app),
            "ports": [{"name": "metrics", "port": port, "protocol": "TCP", "targetPort": port}],
        },
    }


def _scheduler(namespace: str, image: str) -> list[dict[str, Any]]:
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SCHEDULER_CONFIGMAP, "namespace": namespace},
        "data": {SCHEDULER_CONF_KEY: DEFAULT_SCHEDULER_CONF.lstrip("\n")},
    }
    args = ["scheduler", f"--scheduler-conf={SCHEDULER_CONF_DIR}/{SCHEDULER_CONF_KEY}", *_leader_args(namespace)]
    container = _container("volcano-scheduler", image, args, ports=_ports("scheduler"),
                           mounts=[{"name": "scheduler-config", "mountPath": SCHEDULER_CONF_DIR, "readOnly": True}],
                           probe=_healthz_probe())
    volumes = [{"name": "scheduler-config", "configMap": {"name": SCHEDULER_CONFIGMAP}}]
    return [configmap,
            _metrics_service("volcano-scheduler-service", namespace, "volcano-scheduler", METRICS_PORTS["scheduler"]),
            _deployment("volcano-scheduler", namespace, "volcano-scheduler", "volcano-scheduler", container, volumes)]


def _controllers(namespace: str, image: str) -> list[dict[str, Any]]:
    args = ["controller-manager", *_leader_args(namespace)]
    container = _container("volcano-controllers", image, args, ports=_ports("controller-manager"), mounts=[],
                           probe=_healthz_probe())
    # Where the HyperNode controller looks for its discovery ConfigMap, as upstream's chart sets it.
    container["env"] = [{"name": "KUBE_POD_NAMESPACE", "value": namespace},
                        {"name": "HELM_RELEASE_NAME", "value": "volcano"}]
    return [_metrics_service("volcano-controllers-service", namespace, "volcano-controller",
                             METRICS_PORTS["controller-manager"]),
            _deployment("volcano-controllers", namespace, "volcano-controller", "volcano-controllers", container, [])]


def _admission(namespace: str, image: str) -> list[dict[str, Any]]:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": ADMISSION_SERVICE, "namespace": namespace, "labels": _labels("volcano-admission")},
        "spec": {
            "selector": _labels("volcano-admission"),
            "ports": [{"port": 443, "protocol": "TCP", "targetPort": ADMISSION_PORT}],
        },
    }
    args = [
        "admission",
        f"--tls-cert-file={ADMISSION_CERT_DIR}/tls.crt",
        f"--tls-private-key-file={ADMISSION_CERT_DIR}/tls.key",
        f"--ca-cert-file={ADMISSION_CERT_DIR}/ca.crt",
        f"--webhook-namespace={namespace}",
        f"--webhook-service-name={ADMISSION_SERVICE}",
        f"--port={ADMISSION_PORT}",
        "--enable-healthz",
        f"--enabled-admission={ENABLED_ADMISSION}",
    ]
    container = _container(
        "admission", image, args,
        ports=[{"name": "webhook", "containerPort": ADMISSION_PORT, "protocol": "TCP"},
               {"name": "healthz", "containerPort": HEALTHZ_PORT, "protocol": "TCP"}],
        mounts=[{"name": "admission-certs", "mountPath": ADMISSION_CERT_DIR, "readOnly": True}],
        probe=_healthz_probe(scheme="HTTPS"),  # the admission server's /healthz is served over TLS
    )
    volumes = [{"name": "admission-certs", "secret": {"secretName": ADMISSION_SECRET, "defaultMode": 0o444}}]
    return [service, _deployment("volcano-admission", namespace, "volcano-admission", "volcano-admission",
                                 container, volumes)]


def _admission_secret(namespace: str, certs: Certificates) -> dict[str, Any]:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": ADMISSION_SECRET, "namespace": namespace},
        "data": {"ca.crt": b64(certs.ca_crt), "tls.crt": b64(certs.tls_crt), "tls.key": b64(certs.tls_key)},
    }


def _queue(name: str, reclaimable: bool) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"reclaimable": reclaimable, "weight": 1}}


def default_queues() -> list[dict[str, Any]]:
    """``root`` and ``default`` with the spec upstream's scheduler creates them with."""
    return [_queue("root", False), _queue("default", True)]


def build_bundle(namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE, *, fake_nodes: bool = False,
                 certificates: Certificates | None = None, crds: bool = True,
                 components: bool = True, queues: bool = False) -> list[dict[str, Any]]:
    """The objects of the bundle, in apply order (see the module docstring).

    ``fake_nodes`` adds the ``volcano-fake-nodes`` ServiceAccount and its RBAC; ``crds=False`` or
    ``components=False`` leaves out the CRDs or everything else (to apply the CRDs first).
    Raises :class:`BundleError` for a namespace or image that cannot be valid.
    """
    _check_options(namespace, image)
    docs: list[dict[str, Any]] = []
    if components:
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    if crds:
        docs.extend(custom_resource_definitions())
    if not components:
        return docs
    for c in COMPONENTS:
        if c.optional and not (fake_nodes and c.name == "fake-nodes"):
            continue
        docs.extend(rbac_objects(c, namespace))
    if certificates is not None:
        docs.append(_admission_secret(namespace, certificates))
    docs.extend(_scheduler(namespace, image))
    docs.extend(_controllers(namespace, image))
    docs.extend(_admission(namespace, image))
    if queues:
        docs.extend(default_queues())
    return docs


# ----------------------------------------------------------------------------- YAML


class _Dumper(yaml.SafeDumper):
    """safe_dump with block literals for multi-line strings (the scheduler configuration) and
    without anchors: an object shared by two places is written out twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)


def dump_documents(docs: Iterable[Mapping[str, Any]]) -> str:
    """A multi-document YAML stream, each document introduced by ``---``; keys keep their order."""
    parts = [yaml.dump(dict(d), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
             for d in docs]
    return "".join(f"---\n{p}" for p in parts)
