"""Where each kind lives in the Kubernetes API: group, version, plural, scope, status subresource.

The store protocol names objects by ``kind`` alone (as the in-memory store does); this table
turns a kind into its REST path. It lists every kind a pyvolcano component reads or writes.
The Volcano kinds match upstream's CRDs (``config/crd/volcano/bases``): Job and Queue have a
status subresource, as do CronJob, JobFlow and JobTemplate; PodGroup (``subresources: {}``) and
Command have none, so a PodGroup's status is written through the object itself.

A kind marked ``optional`` belongs to a CRD that a cluster may not serve (an older Volcano
bundle, or plain Kubernetes without the topology or the workflow CRDs): a 404 for its collection means "no such
objects", not an error (the informers of :mod:`pyvolcano.kube.store` list none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

__all__ = ["RESOURCES", "Resource", "resource_for"]


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    status_subresource: bool = False
    optional: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """Path of the collection; all namespaces when ``namespace`` is None."""
        if self.namespaced and namespace is not None:
            return f"{self._prefix()}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{self._prefix()}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        ns = (namespace or "default") if self.namespaced else None
        path = f"{self.collection_path(ns)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path


def _r(kind: str, api_version: str, plural: str, namespaced: bool = True, status: bool = False,
       optional: bool = False) -> Resource:
    group, _, version = api_version.rpartition("/")
    return Resource(kind, group, version, plural, namespaced, status, optional)


RESOURCES: Final[dict[str, Resource]] = {
    r.kind: r
    for r in (
        _r("Pod", "v1", "pods", status=True),
        _r("Node", "v1", "nodes", namespaced=False, status=True),
        _r("Namespace", "v1", "namespaces", namespaced=False, status=True),
        _r("Service", "v1", "services", status=True),
        _r("ConfigMap", "v1", "configmaps"),
        _r("ResourceQuota", "v1", "resourcequotas", status=True),
        _r("Secret", "v1", "secrets"),
        _r("PersistentVolumeClaim", "v1", "persistentvolumeclaims", status=True),
        _r("PersistentVolume", "v1", "persistentvolumes", namespaced=False, status=True),
        _r("StorageClass", "storage.k8s.io/v1", "storageclasses", namespaced=False),
        _r("CSINode", "storage.k8s.io/v1", "csinodes", namespaced=False),
        _r("CSIDriver", "storage.k8s.io/v1", "csidrivers", namespaced=False),
        _r("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities"),
        _r("ServiceAccount", "v1", "serviceaccounts"),
        _r("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies"),
        _r("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", namespaced=False),
        _r("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", status=True),
        _r("Lease", "coordination.k8s.io/v1", "leases"),
        _r("ReplicaSet", "apps/v1", "replicasets", status=True),
        _r("StatefulSet", "apps/v1", "statefulsets", status=True),
        _r("DaemonSet", "apps/v1", "daemonsets", status=True),
        _r("Event", "events.k8s.io/v1", "events"),
        _r("MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations",
           namespaced=False),
        _r("ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
           namespaced=False),
        _r("CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False,
           status=True),
        _r("Job", "batch.volcano.sh/v1alpha1", "jobs", status=True),
        _r("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups"),
        _r("Queue", "scheduling.volcano.sh/v1beta1", "queues", namespaced=False, status=True),
        _r("Command", "bus.volcano.sh/v1alpha1", "commands"),
        _r("HyperNode", "topology.volcano.sh/v1alpha1", "hypernodes", namespaced=False, status=True, optional=True),
        _r("Numatopology", "nodeinfo.volcano.sh/v1alpha1", "numatopologies", namespaced=False, optional=True),
        _r("DeviceClass", "resource.k8s.io/v1", "deviceclasses", namespaced=False, optional=True),
        _r("ResourceSlice", "resource.k8s.io/v1", "resourceslices", namespaced=False, optional=True),
        _r("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", status=True, optional=True),
        _r("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", optional=True),
        _r("CronJob", "batch.volcano.sh/v1alpha1", "cronjobs", status=True, optional=True),
        _r("JobFlow", "flow.volcano.sh/v1alpha1", "jobflows", status=True, optional=True),
        _r("JobTemplate", "flow.volcano.sh/v1alpha1", "jobtemplates", status=True, optional=True),
    )
}


def resource_for(kind: str) -> Resource:
    """The API resource of ``kind``; KeyError names the kinds that are known."""
    try:
        return RESOURCES[kind]
    except KeyError:
        raise KeyError(f"kind {kind!r} is not served by the Kubernetes store; known: {', '.join(RESOURCES)}") from None
