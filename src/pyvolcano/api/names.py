"""Well-known API names: Volcano's annotation and label keys, its API versions, the kinds the
scheduler watches, and the Kubernetes grammars of object names, label keys and label values.

Every module that reads or writes one of these names takes it from here, so that a key is
spelled once. The keys carry upstream's names (``pkg/apis/batch/v1alpha1/labels.go``,
``pkg/apis/scheduling/v1beta1/labels.go``); a ``*_KEY`` is used as an annotation, a label or
both, as upstream uses it.

The grammars are those of ``k8s.io/apimachinery/pkg/util/validation``: the ``*_FMT`` strings
are upstream's regular expressions, kept verbatim because messages and CRD schemas quote them,
and the ``is_*`` predicates add the length limits. Callers word their own messages.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "BUS_API_VERSION",
    "CLOSED_BY_PARENT_KEY",
    "COOLDOWN_KEY",
    "CREATED_BY_JOB_FLOW_KEY",
    "CREATED_BY_JOB_TEMPLATE_KEY",
    "CRONJOB_SCHEDULED_TIMESTAMP_KEY",
    "DNS1035_LABEL_FMT",
    "DNS1123_LABEL_FMT",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_FMT",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "FLOW_API_VERSION",
    "GROUP_MIN_MEMBER_KEY",
    "GROUP_NAME_KEY",
    "HIERARCHY_KEY",
    "HIERARCHY_WEIGHTS_KEY",
    "JDB_MAX_UNAVAILABLE_KEY",
    "JDB_MIN_AVAILABLE_KEY",
    "JOB_API_VERSION",
    "JOB_FORWARDING_KEY",
    "JOB_NAMESPACE_KEY",
    "JOB_NAME_KEY",
    "JOB_TYPE_KEY",
    "JOB_VERSION_KEY",
    "LABEL_VALUE_FMT",
    "NETWORK_TOPOLOGY_MODE_KEY",
    "NETWORK_TOPOLOGY_SOURCE_KEY",
    "NETWORK_TOPOLOGY_TIER_KEY",
    "NODEGROUP_NAME_KEY",
    "NODEGROUP_RESOURCE_LIMITS_KEY",
    "NUMA_POLICY_KEY",
    "OUT_OF_SYNC_KEY",
    "PARTITION_ID_KEY",
    "POD_DURATION_KEY",
    "PREEMPTABLE_KEY",
    "QUALIFIED_NAME_FMT",
    "QUALIFIED_NAME_MAX_LENGTH",
    "QUEUE_NAME_ANNOTATION",
    "QUEUE_NAME_KEY",
    "RETRY_COUNT_KEY",
    "REVOCABLE_ZONE_KEY",
    "SCHEDULER_KINDS",
    "SCHEDULING_API_VERSION",
    "TASK_INDEX_KEY",
    "TASK_PRIORITY_KEY",
    "TASK_SPEC_KEY",
    "TASK_TOPOLOGY_AFFINITY_KEY",
    "TASK_TOPOLOGY_ANTI_AFFINITY_KEY",
    "TASK_TOPOLOGY_TASK_ORDER_KEY",
    "TEMPLATE_UID_KEY",
    "TOPOLOGY_API_VERSION",
    "dns1035_label_matches",
    "dns1123_label_matches",
    "dns1123_subdomain_matches",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "is_qualified_name",
    "label_value_matches",
    "qualified_name_part_matches",
]

# ----------------------------------------------------------------------------- API versions

JOB_API_VERSION: Final = "batch.volcano.sh/v1alpha1"
SCHEDULING_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
BUS_API_VERSION: Final = "bus.volcano.sh/v1alpha1"
TOPOLOGY_API_VERSION: Final = "topology.volcano.sh/v1alpha1"
FLOW_API_VERSION: Final = "flow.volcano.sh/v1alpha1"
"""JobFlow and JobTemplate (CronJob is ``batch.volcano.sh/v1alpha1``, as Job is)."""

STORAGE_KINDS: Final = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
                        "CSIStorageCapacity")
"""The storage objects volume binding reads (:mod:`pyvolcano.cache.volumes`)."""

DRA_KINDS: Final = ("DeviceClass", "ResourceSlice", "ResourceClaim")
"""The ``resource.k8s.io/v1`` objects dynamic resource allocation reads (:mod:`pyvolcano.cache.dra`)."""

SCHEDULER_KINDS: Final = ("PodDisruptionBudget", "Node", "Pod", "PriorityClass", "ResourceQuota", "PodGroup", "Queue",
                          "Numatopology", "HyperNode", *STORAGE_KINDS, *DRA_KINDS)
"""What vc-scheduler's cache watches: in the order upstream's ``SchedulerCache`` registers its
informers (``pkg/scheduler/cache/cache.go``: PodDisruptionBudgets for the pdb plugin, nodes,
pods, priority classes, resource quotas, then the Volcano informers for PodGroups, Queues,
Numatopologies and HyperNodes), then the storage informers volume binding reads and the DRA
manager's. A cluster without the HyperNode or the Numatopology CRD has none of them, and one
without the resource API no DRA objects: their informers list none
(:mod:`pyvolcano.kube.store`)."""

# ----------------------------------------------------------------------------- Volcano Jobs and their pods

JOB_NAME_KEY: Final = "volcano.sh/job-name"
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
JOB_TYPE_KEY: Final = "volcano.sh/job-type"
JOB_FORWARDING_KEY: Final = "volcano.sh/job-forwarding"
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
TEMPLATE_UID_KEY: Final = "volcano.sh/template-uid"
RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
PARTITION_ID_KEY: Final = "volcano.sh/partition-id"
OUT_OF_SYNC_KEY: Final = "volcano.sh/controller-out-of-sync"
QUEUE_NAME_KEY: Final = "volcano.sh/queue-name"
NUMA_POLICY_KEY: Final = "volcano.sh/numa-topology-policy"

# ----------------------------------------------------------------------------- workflows
CRONJOB_SCHEDULED_TIMESTAMP_KEY: Final = "volcano.sh/cronjob-scheduled-timestamp"
"""On a job a CronJob created: its scheduled time, RFC 3339 in the CronJob's time zone."""
CREATED_BY_JOB_TEMPLATE_KEY: Final = "volcano.sh/createdByJobTemplate"
"""On a job a JobFlow created (label and annotation): ``<namespace>.<JobTemplate name>``."""
CREATED_BY_JOB_FLOW_KEY: Final = "volcano.sh/createdByJobFlow"
"""On a job a JobFlow created (label and annotation): ``<namespace>.<JobFlow name>``."""

# ----------------------------------------------------------------------------- scheduling

GROUP_NAME_KEY: Final = "scheduling.k8s.io/group-name"
"""The PodGroup a pod belongs to (an annotation)."""
GROUP_MIN_MEMBER_KEY: Final = "scheduling.volcano.sh/group-min-member"
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
"""The queue of a pod's PodGroup, on a pod or workload without a Volcano Job."""
TASK_PRIORITY_KEY: Final = "volcano.sh/task-priority"
PREEMPTABLE_KEY: Final = "volcano.sh/preemptable"
COOLDOWN_KEY: Final = "volcano.sh/cooldown-time"
REVOCABLE_ZONE_KEY: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE_KEY: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY: Final = "volcano.sh/jdb-max-unavailable"
NETWORK_TOPOLOGY_MODE_KEY: Final = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER_KEY: Final = "volcano.sh/network-topology-highest-tier"
POD_DURATION_KEY: Final = "pyvolcano.io/duration"
"""How long a pod runs (a Go duration): the simulated kubelets end it then, and the reservation
plugin counts on it as the pod's expected runtime."""
TASK_TOPOLOGY_AFFINITY_KEY: Final = "volcano.sh/task-topology-affinity"
TASK_TOPOLOGY_ANTI_AFFINITY_KEY: Final = "volcano.sh/task-topology-anti-affinity"
TASK_TOPOLOGY_TASK_ORDER_KEY: Final = "volcano.sh/task-topology-task-order"
"""PodGroup annotations of the task-topology plugin: ``;``-separated groups of ``,``-separated task names."""
NETWORK_TOPOLOGY_SOURCE_KEY: Final = "volcano.sh/network-topology-source"
"""The label a discovered HyperNode carries: the discovery source that manages it (``label``)."""

# ----------------------------------------------------------------------------- queues

HIERARCHY_KEY: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_KEY: Final = "volcano.sh/hierarchy-weights"
CLOSED_BY_PARENT_KEY: Final = "volcano.sh/closed-by-parent"
NODEGROUP_NAME_KEY: Final = "volcano.sh/nodegroup-name"
"""The node label naming a node's node group (Queue ``spec.affinity``, the nodegroup plugin)."""
NODEGROUP_RESOURCE_LIMITS_KEY: Final = "volcano.sh/nodegroup-resource-limits"
"""A Queue annotation: JSON map of node group to ResourceList, the most the queue may use there."""

# ----------------------------------------------------------------------------- name grammars

DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT: Final = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT: Final = "(" + QUALIFIED_NAME_FMT + ")?"

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
QUALIFIED_NAME_MAX_LENGTH: Final = 63
"""Of the name part of a qualified name, and of a label value."""

_DNS1123_LABEL: Final = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN: Final = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL: Final = re.compile(DNS1035_LABEL_FMT)
_QUALIFIED_NAME: Final = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE: Final = re.compile(LABEL_VALUE_FMT)


def dns1123_label_matches(text: str) -> bool:
    """Whether ``text`` has the form of a DNS-1123 label (length not checked)."""
    return _DNS1123_LABEL.fullmatch(text) is not None


def dns1123_subdomain_matches(text: str) -> bool:
    """Whether ``text`` has the form of a DNS-1123 subdomain (length not checked)."""
    return _DNS1123_SUBDOMAIN.fullmatch(text) is not None


def dns1035_label_matches(text: str) -> bool:
    """Whether ``text`` has the form of a DNS-1035 label (length not checked)."""
    return _DNS1035_LABEL.fullmatch(text) is not None


def qualified_name_part_matches(text: str) -> bool:
    """Whether ``text`` has the form of the name part of a qualified name (length not checked)."""
    return _QUALIFIED_NAME.fullmatch(text) is not None


def label_value_matches(text: str) -> bool:
    """Whether ``text`` has the form of a label value, empty included (length not checked)."""
    return _LABEL_VALUE.fullmatch(text) is not None


def is_dns1123_label(text: str) -> bool:
    """``IsDNS1123Label``: at most 63 lower-case alphanumerics or '-', alphanumeric at both ends."""
    return len(text) <= DNS1123_LABEL_MAX_LENGTH and dns1123_label_matches(text)


def is_dns1123_subdomain(text: str) -> bool:
    """``IsDNS1123Subdomain``: at most 253 characters of dot-separated DNS-1123 labels."""
    return len(text) <= DNS1123_SUBDOMAIN_MAX_LENGTH and dns1123_subdomain_matches(text)


def is_qualified_name(text: str) -> bool:
    """``IsQualifiedName``: ``[prefix/]name``, a DNS-1123 subdomain prefix and a name part of at
    most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends."""
    prefix, slash, name = text.rpartition("/")
    if slash and (not prefix or "/" in prefix or not is_dns1123_subdomain(prefix)):
        return False
    return 0 < len(name) <= QUALIFIED_NAME_MAX_LENGTH and qualified_name_part_matches(name)


def is_label_value(text: str) -> bool:
    """``IsValidLabelValue``: empty, or a qualified name's name part."""
    return len(text) <= QUALIFIED_NAME_MAX_LENGTH and label_value_matches(text)
