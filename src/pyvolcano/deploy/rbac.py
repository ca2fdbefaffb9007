"""The verb table: exactly what each component may do on the API, and the RBAC built from it.

Every :class:`Permission` names the code that needs it. The table is derived from the store
calls each component makes, mapped to API verbs the way the Kubernetes store issues them:
informers ``list`` and ``watch``, and a read of a kind the component watches is served from
its informer cache (no request); any other :meth:`Store.get` is ``get`` and :meth:`Store.list`
is ``list``; ``create``, ``update``, ``patch`` and ``delete`` are themselves;
:meth:`Store.update_status` is ``update`` and ``patch`` on ``<resource>/status`` (a merge
patch of what changed, or a PUT) and a status patch is ``patch`` there (PodGroup has no
status subresource, so its status goes with the object);
:meth:`Store.bind` is ``create`` on ``pods/binding``. Leader election takes a
Lease in the install namespace (client-go's ``get``, ``create``, ``update``), so that grant is
a Role there, not cluster-wide. Events are written as ``events.k8s.io/v1`` (``create``, and
``patch`` for a repeated event's series count).

``docs/kubernetes.md`` prints this table (a test keeps the two equal), and the bundle's
ClusterRoles and Roles are built from it and from nothing else.

Invariants: verbs within a permission are unique and in :data:`VERB_ORDER`; a
(group, resource, namespace) appears once per component.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "COMPONENTS",
    "INSTALL_NAMESPACE",
    "VERB_ORDER",
    "Component",
    "Permission",
    "component",
    "rbac_objects",
    "verb_table_markdown",
]

VERB_ORDER: Final = ("get", "list", "watch", "create", "update", "patch", "delete")

INSTALL_NAMESPACE: Final = "<install namespace>"
"""Placeholder for the namespace the bundle is installed in (``--namespace``)."""

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"

INFORM: Final = ("list", "watch")
# Store.update_status: a merge patch of the changed status while the informer holds the version
# read, a PUT otherwise (pyvolcano.kube.store)
UPDATE_STATUS: Final = ("update", "patch")
LEADER_LEASE: Final = ("get", "create", "update")


@dataclass(frozen=True, slots=True)
class Permission:
    group: str  # "" is the core API group
    resource: str  # "pods", "pods/binding", ...
    verbs: tuple[str, ...]
    why: str
    namespace: str | None = None  # None: every namespace (ClusterRole); else a Role in that namespace

    @property
    def group_name(self) -> str:
        return self.group or "core"


@dataclass(frozen=True, slots=True)
class Component:
    name: str  # the pyvolcano command
    service_account: str
    permissions: tuple[Permission, ...]
    optional: bool = False  # only in the bundle when asked for (fake-nodes)


def _p(group: str, resource: str, verbs: tuple[str, ...], why: str, namespace: str | None = None) -> Permission:
    return Permission(group, resource, verbs, why, namespace)


_EVENTS: Final = _p("events.k8s.io", "events", ("create", "patch"), "events with upstream's reasons and messages")
_LEASE: Final = _p("coordination.k8s.io", "leases", LEADER_LEASE, "leader election (--leader-elect)",
                   INSTALL_NAMESPACE)

COMPONENTS: Final = (
    Component("scheduler", "volcano-scheduler", (
        _p("", "pods", ("list", "watch", "delete"), "cache informer; evictions are deletions"),
        _p("", "pods/binding", ("create",), "binds (Store.bind)"),
        _p("", "pods/status", ("patch",), "PodScheduled condition; nominatedNodeName of preemptors"),
        _p("", "nodes", INFORM, "cache informer"),
        _p("scheduling.volcano.sh", "podgroups", ("list", "watch", "patch"),
           "cache informer; PodGroup phase and conditions at session close"),
        _p("scheduling.volcano.sh", "queues", INFORM, "cache informer"),
        _p("scheduling.k8s.io", "priorityclasses", INFORM, "cache informer"),
        _p("topology.volcano.sh", "hypernodes", INFORM, "network topology: the HyperNode tree"),
        _p("policy", "poddisruptionbudgets", INFORM, "cache informer: the pdb plugin's budgets"),
        _p("", "resourcequotas", INFORM, "cache informer: the resourcequota plugin's quotas"),
        _p("nodeinfo.volcano.sh", "numatopologies", ("list", "watch", "delete"),
           "numa-aware: the nodes' NUMA layout; a deleted node's Numatopology is deleted"),
        _p("", "persistentvolumeclaims", ("get", "list", "watch", "update"),
           "cache informer; volume binding: the selected-node annotation for a provisioner"),
        _p("", "persistentvolumes", ("get", "list", "watch", "update"),
           "cache informer; volume binding: the claimRef of the PV chosen for a claim"),
        _p("storage.k8s.io", "storageclasses", INFORM, "volume binding: binding modes, provisioners, topologies"),
        _p("storage.k8s.io", "csinodes", INFORM, "CSI attach limits"),
        _p("storage.k8s.io", "csidrivers", INFORM, "CSI attach limits and storage capacity tracking"),
        _p("storage.k8s.io", "csistoragecapacities", INFORM, "volume binding: capacity of a provisioner per node"),
        _p("resource.k8s.io", "deviceclasses", INFORM, "dynamic resource allocation: DeviceClasses"),
        _p("resource.k8s.io", "resourceslices", INFORM, "dynamic resource allocation: the devices of each node"),
        _p("resource.k8s.io", "resourceclaims", ("get", "list", "watch", "update"),
           "dynamic resource allocation: claims; the delete-protection finalizer before allocating"),
        _p("resource.k8s.io", "resourceclaims/status", UPDATE_STATUS,
           "dynamic resource allocation: allocation and reservedFor before the bind, removed on rollback"),
        _EVENTS,
        _LEASE,
    )),
    Component("controller-manager", "volcano-controllers", (
        _p("batch.volcano.sh", "jobs", ("list", "watch", "create", "update", "delete"),
           "job controller (annotations, PVC names); garbage collector deletes finished jobs; CronJob and JobFlow "
           "controllers create their jobs and delete old, replaced or retained ones"),
        _p("batch.volcano.sh", "jobs/status", UPDATE_STATUS, "job controller (Store.update_status)"),
        _p("batch.volcano.sh", "cronjobs", INFORM, "CronJob controller"),
        _p("batch.volcano.sh", "cronjobs/status", UPDATE_STATUS,
           "CronJob controller: active, last schedule and success"),
        _p("flow.volcano.sh", "jobflows", INFORM, "JobFlow controller"),
        _p("flow.volcano.sh", "jobflows/status", UPDATE_STATUS, "JobFlow controller: phase and job lists"),
        _p("flow.volcano.sh", "jobtemplates", INFORM, "JobFlow controller reads templates; JobTemplate controller"),
        _p("flow.volcano.sh", "jobtemplates/status", UPDATE_STATUS, "JobTemplate controller: jobDependsOnList"),
        _p("bus.volcano.sh", "commands", ("list", "watch", "delete"), "job and queue controllers consume commands"),
        _p("", "pods", ("list", "watch", "create", "patch", "delete"),
           "job controller creates and kills task pods; podgroup controller annotates plain pods"),
        _p("scheduling.volcano.sh", "podgroups", ("list", "watch", "create", "update", "delete"),
           "job and podgroup controllers own PodGroups; queue controller counts them"),
        _p("scheduling.volcano.sh", "queues", ("list", "watch", "create", "patch"),
           "queue controller: root and default queues, parent and closed-by-parent"),
        _p("scheduling.volcano.sh", "queues/status", ("patch",), "queue controller: state and counts"),
        _p("scheduling.k8s.io", "priorityclasses", INFORM, "PodGroup priority from the tasks' classes"),
        _p("", "persistentvolumeclaims", ("get", "create"), "job volumes"),
        _p("", "services", ("get", "create", "delete"), "svc job plugin"),
        _p("", "configmaps", ("list", "watch", "create", "update", "delete"),
           "svc and ssh job plugins; HyperNode controller: the discovery ConfigMap (informer)"),
        _p("", "secrets", ("get", "create", "update", "delete"), "ssh job plugin"),
        _p("networking.k8s.io", "networkpolicies", ("get", "create", "delete"), "svc job plugin"),
        _p("apps", "replicasets", ("get", "list", "watch"),
           "podgroup controller: ReplicaSet informer (min member, deletion) and owner annotations"),
        _p("apps", "statefulsets", ("get", "list", "watch"),
           "podgroup controller: StatefulSet informer (min member, deletion) and owner annotations"),
        _p("apps", "daemonsets", ("get",), "podgroup controller inherits owner annotations"),
        _p("batch", "jobs", ("get",), "podgroup controller inherits owner annotations"),
        _p("topology.volcano.sh", "hypernodes", ("list", "watch", "create", "update", "delete"),
           "HyperNode controller: HyperNodes discovered from node labels"),
        _p("topology.volcano.sh", "hypernodes/status", UPDATE_STATUS, "HyperNode controller: status.nodeCount"),
        _p("", "nodes", INFORM, "HyperNode controller: node counts and label discovery"),
        _LEASE,
    )),
    Component("admission", "volcano-admission", (
        _p("scheduling.volcano.sh", "queues", INFORM, "queue informer: job, podgroup and queue webhooks check queues"),
        _p("scheduling.volcano.sh", "podgroups", ("list",), "queue webhook: a queue's allocated pods"),
        _p("", "pods", ("list",), "queue webhook: a queue's allocated pods"),
        _p("", "namespaces", ("get",), "podgroup webhook: the namespace's queue annotation"),
        _p("admissionregistration.k8s.io", "mutatingwebhookconfigurations", ("get", "create", "update"),
           "registers its own webhooks at start"),
        _p("admissionregistration.k8s.io", "validatingwebhookconfigurations", ("get", "create", "update"),
           "registers its own webhooks at start"),
    )),
    Component("fake-nodes", "volcano-fake-nodes", (
        _p("", "nodes", ("create",), "registers its nodes"),
        _p("", "nodes/status", ("patch",), "Ready condition and heartbeats, capacity"),
        _p("", "pods", ("list", "watch", "delete"), "pods bound to its nodes; removing terminated pods"),
        _p("", "pods/status", ("patch",), "Pending -> Running -> Succeeded/Failed"),
        _p("coordination.k8s.io", "leases", ("create", "patch"), "node heartbeats", NODE_LEASE_NAMESPACE),
        _p("nodeinfo.volcano.sh", "numatopologies", ("get", "create", "update", "delete"),
           "simulated resource exporter: each node's Numatopology (--numa-nodes)"),
        _p("resource.k8s.io", "resourceslices", ("get", "create", "update", "delete"),
           "--dra: the ResourceSlice of each GPU node"),
    ), optional=True),
)


def component(name: str) -> Component:
    for c in COMPONENTS:
        if c.name == name:
            return c
    raise KeyError(name)


def _rule(p: Permission) -> dict[str, Any]:
    return {"apiGroups": [p.group], "resources": [p.resource], "verbs": list(p.verbs)}


def rbac_objects(c: Component, namespace: str) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole + ClusterRoleBinding, and one Role + RoleBinding per namespace."""
    subject = {"kind": "ServiceAccount", "name": c.service_account, "namespace": namespace}
    docs: list[dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": c.service_account, "namespace": namespace},
    }]
    cluster = [p for p in c.permissions if p.namespace is None]
    if cluster:
        docs.append({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": c.service_account},
            "rules": [_rule(p) for p in cluster],
        })
        docs.append({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{c.service_account}-role"},
            "subjects": [dict(subject)],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": c.service_account},
        })
    namespaces: list[str] = []
    for p in c.permissions:
        if p.namespace is not None and p.namespace not in namespaces:
            namespaces.append(p.namespace)
    for ns_key in namespaces:
        ns = namespace if ns_key == INSTALL_NAMESPACE else ns_key
        docs.append({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": c.service_account, "namespace": ns},
            "rules": [_rule(p) for p in c.permissions if p.namespace == ns_key],
        })
        docs.append({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": f"{c.service_account}-role", "namespace": ns},
            "subjects": [dict(subject)],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": c.service_account},
        })
    return docs


def verb_table_markdown() -> str:
    """The verb table as the Markdown table ``docs/kubernetes.md`` shows."""
    rows = ["| component (ServiceAccount) | API group | resource | verbs | where | needed for |",
            "|---|---|---|---|---|---|"]
    for c in COMPONENTS:
        for p in c.permissions:
            where = "cluster" if p.namespace is None else (
                "install namespace" if p.namespace == INSTALL_NAMESPACE else p.namespace)
            rows.append(f"| {c.name} (`{c.service_account}`) | `{p.group_name}` | `{p.resource}` | "
                        f"{', '.join(p.verbs)} | {where} | {p.why} |")
    return "\n".join(rows) + "\n"
