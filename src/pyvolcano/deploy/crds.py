"""CustomResourceDefinitions for Volcano's Job, CronJob, PodGroup, Queue, Command, HyperNode,
Numatopology, JobFlow and JobTemplate.

Names, scope, versions, subresources and printer columns are upstream's
(``config/crd/volcano/bases``, ``config/crd/jobflow/bases``), so ``kubectl get vcjob``/``pg``/``q``/
``cronvcjob``/``jf``/``jt`` and every client written
for upstream Volcano work unchanged. Notably PodGroup has *no* status subresource upstream
(``subresources: {}``): its status is written with the object itself, and so it is here.

The ``openAPIV3Schema`` of each kind is written here, not taken from upstream. It is a
structural schema (every node typed; see the Kubernetes documentation on structural schemas)
that types every field of Volcano's own API with upstream's defaults, enums and bounds, so the
API server rejects a malformed ``minAvailable`` or ``queue`` before admission and prunes
nothing a Volcano manifest may carry. Two subtrees are deliberately left open with
``x-kubernetes-preserve-unknown-fields``: a task's pod ``template`` and a volume's
``volumeClaim``. Upstream inlines the whole core/v1 PodTemplateSpec and PersistentVolumeClaimSpec
schemas there (thousands of lines, tied to one Kubernetes release); here the pods and claims the
controller creates from them are validated by the API server when they are created, with the
cluster's own version of those schemas, and admission checks the parts Volcano reads.

Invariants: :func:`custom_resource_definitions` is pure and returns fresh dicts in a fixed
order; :func:`schema_for` gives the schema the API server validates a kind with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.api.names import DNS1123_LABEL_FMT, DNS1123_SUBDOMAIN_FMT

__all__ = ["CRD_SPECS", "CrdSpec", "custom_resource_definitions", "schema_for"]

Schema = dict[str, Any]

# apimachinery's resource.Quantity grammar (sign, decimal number, then a binary/decimal SI
# suffix or a decimal exponent); the same text every CRD generator emits for a Quantity.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS1123_SUBDOMAIN: Final = f"^{DNS1123_SUBDOMAIN_FMT}$"
DNS1123_LABEL: Final = f"^{DNS1123_LABEL_FMT}$"

JOB_EVENTS: Final = ("*", "PodPending", "PodRunning", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted",
                     "OutOfSync", "CommandIssued", "JobUpdated", "TaskFailed")
JOB_PHASES: Final = ("Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed",
                     "Terminating", "Terminated", "Failed")
PODGROUP_PHASES: Final = ("Pending", "Running", "Unknown", "Inqueue", "Completed")
QUEUE_STATES: Final = ("Open", "Closed", "Closing", "Unknown")
CONCURRENCY_POLICIES: Final = ("Allow", "Forbid", "Replace")
JOBFLOW_PHASES: Final = ("Succeed", "Terminating", "Failed", "Running", "Pending")


# ----------------------------------------------------------------------------- schema atoms


def _obj(properties: dict[str, Schema] | None = None, *, required: tuple[str, ...] = (), **extra: Any) -> Schema:
    s: Schema = {"type": "object"}
    if properties is not None:
        s["properties"] = properties
    if required:
        s["required"] = list(required)
    s.update(extra)
    return s


def _open_object() -> Schema:
    """An object whose content the API server keeps as sent (validated elsewhere)."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _str(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def _int32(**extra: Any) -> Schema:
    return {"type": "integer", "format": "int32", **extra}


def _count() -> Schema:
    return _int32(minimum=0)


def _bool() -> Schema:
    return {"type": "boolean"}


def _list(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def _map(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


def _quantity() -> Schema:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True}


def _resource_list() -> Schema:
    return _map(_quantity())


def _timestamp() -> Schema:
    return _str(format="date-time")


def _network_topology() -> Schema:
    return _obj({
        "mode": _str(enum=["hard", "soft"], default="hard"),
        "highestTierAllowed": {"type": "integer", "minimum": 0},
        "highestTierName": _str(maxLength=253),
    })


def _root(spec: Schema | None, status: Schema | None, **top: Schema) -> Schema:
    props: dict[str, Schema] = {"apiVersion": _str(), "kind": _str(), "metadata": {"type": "object"}}
    if spec is not None:
        props["spec"] = spec
    if status is not None:
        props["status"] = status
    props.update(top)
    return _obj(props)


# ----------------------------------------------------------------------------- kinds


def _lifecycle_policy() -> Schema:
    return _obj({
        "event": _str(enum=list(JOB_EVENTS)),
        "events": _list(_str(enum=list(JOB_EVENTS))),
        "action": _str(),
        "exitCode": _int32(),
        "timeout": _str(),
    })


def _job_spec(*, min_tasks: int = 0) -> Schema:
    """A JobSpec as every Volcano CRD embeds it (Job, CronJob's template, JobTemplate, a flow's
    patch); ``min_tasks``: the JobTemplate CRD's ``minItems`` on ``tasks``."""
    pod_template = _obj({"metadata": _open_object(), "spec": _open_object()})
    pod_template["x-kubernetes-preserve-unknown-fields"] = True
    task = _obj({
        "name": _str(maxLength=63, pattern=DNS1123_LABEL),
        "replicas": _count(),
        "minAvailable": _count(),
        "template": pod_template,
        "policies": _list(_lifecycle_policy()),
        "topologyPolicy": _str(enum=["none", "best-effort", "restricted", "single-numa-node"]),
        "maxRetry": _count(),
        "dependsOn": _obj({"name": _list(_str()), "iteration": _str()}),
        "partitionPolicy": _obj({
            "totalPartitions": _int32(minimum=1),
            "partitionSize": _int32(minimum=1),
            "minPartitions": _int32(minimum=0, default=0),
            "networkTopology": _network_topology(),
        }, required=("totalPartitions", "partitionSize")),
    })
    volume = _obj({
        "mountPath": _str(pattern=r"^[^:]+$"),  # a path without ':' (it separates volume specs)
        "volumeClaimName": _str(maxLength=253),
        "volumeClaim": _open_object(),
    }, required=("mountPath",))
    tasks = _list(task)
    if min_tasks:
        tasks["minItems"] = min_tasks
    return _obj({
        "schedulerName": _str(maxLength=63),
        "minAvailable": _count(),
        "volumes": _list(volume),
        "tasks": tasks,
        "policies": _list(_lifecycle_policy()),
        "plugins": _map(_list(_str())),
        "runningEstimate": _str(),
        "queue": _str(maxLength=253, pattern=DNS1123_SUBDOMAIN, default="default"),
        "maxRetry": _int32(minimum=0, default=3),
        "ttlSecondsAfterFinished": _count(),
        "priorityClassName": _str(maxLength=253, pattern=DNS1123_SUBDOMAIN),
        "minSuccess": _int32(minimum=1),
        "networkTopology": _network_topology(),
    })


def _job_schema() -> Schema:
    status = _obj({
        "state": _obj({
            "phase": _str(enum=list(JOB_PHASES)),
            "reason": _str(),
            "message": _str(),
            "lastTransitionTime": _timestamp(),
        }),
        "minAvailable": _count(),
        "taskStatusCount": _map(_obj({"phase": _map(_int32())})),
        "pending": _count(),
        "running": _count(),
        "succeeded": _count(),
        "failed": _count(),
        "terminating": _count(),
        "unknown": _count(),
        "version": _count(),
        "retryCount": _count(),
        "runningDuration": _str(),
        "controlledResources": _map(_str()),
        "conditions": _list(_obj({"status": _str(), "lastTransitionTime": _timestamp()}, required=("status",))),
    })
    return _root(_job_spec(), status)


def _embedded_object_meta() -> Schema:
    return _obj({"annotations": _map(_str()), "finalizers": _list(_str()), "labels": _map(_str()),
                 "name": _str(), "namespace": _str()})


def _cronjob_schema() -> Schema:
    spec = _obj({
        "schedule": _str(),
        "timeZone": _str(),
        "startingDeadlineSeconds": {"type": "integer", "format": "int64", "minimum": 0},
        "concurrencyPolicy": _str(enum=list(CONCURRENCY_POLICIES), default="Allow"),
        "suspend": _bool() | {"default": False},
        "jobTemplate": _obj({"metadata": _embedded_object_meta(), "spec": _job_spec()}),
        "successfulJobsHistoryLimit": _int32(minimum=0, default=3),
        "failedJobsHistoryLimit": _int32(minimum=0, default=1),
    }, required=("jobTemplate", "schedule"))
    reference = _obj({key: _str() for key in ("apiVersion", "fieldPath", "kind", "name", "namespace",
                                              "resourceVersion", "uid")})
    reference["x-kubernetes-map-type"] = "atomic"
    active = _list(reference)
    active["x-kubernetes-list-type"] = "atomic"
    status = _obj({"active": active, "lastScheduleTime": _timestamp(), "lastSuccessfulTime": _timestamp()})
    return _root(spec, status)


def _jobtemplate_schema() -> Schema:
    return _root(_job_spec(min_tasks=1), _obj({"jobDependsOnList": _list(_str())}))


def _jobflow_schema() -> Schema:
    port = {"type": "integer", "minimum": 0, "maximum": 65535}
    probe = _obj({
        "httpGetList": _list(_obj({
            "httpHeader": _obj({"name": _str(), "value": _str()}, required=("name", "value")),
            "path": _str(), "port": port, "taskName": _str(maxLength=253),
        })),
        "taskStatusList": _list(_obj({"phase": _str(maxLength=63), "taskName": _str(maxLength=253)})),
        "tcpSocketList": _list(_obj({"port": port, "taskName": _str(maxLength=253)}, required=("port",))),
    })
    flow = _obj({
        "name": _str(minLength=1),
        "dependsOn": _obj({"targets": _list(_str()), "probe": probe}),
        "patch": _obj({"jobSpec": _job_spec()}),
    }, required=("name",))
    spec = _obj({"flows": _list(flow), "jobRetainPolicy": _str(enum=["retain", "delete"])})
    names = _list(_str())
    history = _obj({"startTimestamp": _timestamp(), "endTimestamp": _timestamp(), "state": _str()})
    status = _obj({
        "pendingJobs": names, "runningJobs": names, "failedJobs": names, "completedJobs": names,
        "terminatedJobs": names, "unKnowJobs": names,
        "jobStatusList": _list(_obj({
            "name": _str(), "state": _str(), "startTimestamp": _timestamp(), "endTimestamp": _timestamp(),
            "restartCount": _int32(minimum=0), "runningHistories": _list(history),
        })),
        "conditions": _map(_obj({
            "phase": _str(), "createTime": _timestamp(), "runningDuration": _str(),
            "taskStatusCount": _map(_obj({"phase": _map(_int32())})),
        })),
        "state": _obj({"phase": _str(enum=list(JOBFLOW_PHASES))}),
    })
    return _root(spec, status)


def _podgroup_schema() -> Schema:
    label_selector = _obj({
        "matchLabels": _map(_str()),
        "matchExpressions": _list(_obj({
            "key": _str(), "operator": _str(), "values": _list(_str()),
        }, required=("key", "operator"))),
    })
    spec = _obj({
        "minMember": _count(),
        "minTaskMember": _map(_int32()),
        "queue": _str(maxLength=253, pattern=DNS1123_SUBDOMAIN, default="default"),
        "priorityClassName": _str(maxLength=253),
        "minResources": _resource_list(),
        "networkTopology": _network_topology(),
        "subGroupPolicy": _list(_obj({
            "name": _str(maxLength=253),
            "networkTopology": _network_topology(),
            "subGroupSize": _int32(minimum=1, default=1),
            "minSubGroups": _int32(minimum=0, default=0),
            "labelSelector": label_selector,
            "matchLabelKeys": _list(_str()),
        })),
    })
    status = _obj({
        "phase": _str(enum=list(PODGROUP_PHASES)),
        "conditions": _list(_obj({
            "type": _str(), "status": _str(), "transitionID": _str(), "lastTransitionTime": _timestamp(),
            "reason": _str(), "message": _str(),
        })),
        "running": _count(),
        "succeeded": _count(),
        "failed": _count(),
    })
    return _root(spec, status)


def _queue_schema() -> Schema:
    node_group_terms = _obj({
        "requiredDuringSchedulingIgnoredDuringExecution": _list(_str()),
        "preferredDuringSchedulingIgnoredDuringExecution": _list(_str()),
    })
    spec = _obj({
        "weight": _int32(minimum=1, maximum=65535, default=1),
        "capability": _resource_list(),
        "deserved": _resource_list(),
        "reclaimable": _bool(),
        "extendClusters": _list(_obj({"name": _str(), "weight": _int32(), "capacity": _resource_list()})),
        "guarantee": _obj({"resource": _resource_list()}),
        "affinity": _obj({"nodeGroupAffinity": node_group_terms, "nodeGroupAntiAffinity": node_group_terms}),
        "type": _str(maxLength=253),
        "parent": _str(maxLength=253, pattern=DNS1123_SUBDOMAIN),
        "priority": _int32(minimum=0),
        "dequeueStrategy": _str(enum=["fifo", "traverse"], default="traverse"),
    })
    status = _obj({
        "state": _str(enum=list(QUEUE_STATES)),
        "unknown": _count(),
        "pending": _count(),
        "running": _count(),
        "inqueue": _count(),
        "completed": _count(),
        "reservation": _obj({"nodes": _list(_str()), "resource": _resource_list()}),
        "allocated": _resource_list(),
    })
    return _root(spec, status)


def _hypernode_schema() -> Schema:
    """Upstream's ``hypernodes.topology.volcano.sh`` schema: a member's selector has exactly one of
    its three matchers, as the CRD's two CEL rules (``x-kubernetes-validations``) say."""
    selector = _obj({
        "exactMatch": _obj({"name": _str(minLength=1)}, required=("name",)),
        "regexMatch": _obj({"pattern": _str(minLength=1)}, required=("pattern",)),
        "labelMatch": _obj({
            "matchLabels": _map(_str()),
            "matchExpressions": _list(_obj({
                "key": _str(), "operator": _str(), "values": _list(_str()),
            }, required=("key", "operator"))),
        }),
    })
    selector["x-kubernetes-validations"] = [
        {"rule": "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
         "message": "Either ExactMatch or RegexMatch or LabelMatch must be specified"},
        {"rule": "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + (has(self.labelMatch) ? 1 : 0) "
                 "<= 1",
         "message": "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified"},
    ]
    spec = _obj({
        "tier": {"type": "integer", "minimum": 0},
        "tierName": _str(),
        "members": _list(_obj({
            "type": _str(enum=["Node", "HyperNode"]),
            "selector": selector,
        }, required=("type",))) | {"minItems": 1},
    })
    status = _obj({
        "conditions": _list(_obj({
            "type": _str(), "status": _str(), "observedGeneration": {"type": "integer", "format": "int64"},
            "lastTransitionTime": _timestamp(), "reason": _str(), "message": _str(),
        }, required=("type", "status", "lastTransitionTime", "reason", "message"))),
        "nodeCount": {"type": "integer", "format": "int64", "minimum": 0},
    })
    return _root(spec, status)


def _numatopology_schema() -> Schema:
    """Upstream's ``nodeinfo.volcano.sh_numatopologies`` (no status; the exporter owns the spec)."""
    spec = _obj({
        "policies": _map(_str()),
        "resReserved": _map(_str()),
        "numares": _map(_obj({"allocatable": _str(), "capacity": {"type": "integer"}})),
        "cpuDetail": _map(_obj({f: {"type": "integer", "minimum": 0} for f in ("numa", "socket", "core")})),
        "podAllocations": _list(_obj({
            "uid": _str(), "name": _str(), "namespace": _str(),
            "containerAllocations": _list(_obj({"name": _str(), "allocations": _map(_str())})),
        })),
    })
    return _root(spec, None)


def _command_schema() -> Schema:
    target = _obj({
        "apiVersion": _str(), "kind": _str(), "name": _str(), "uid": _str(),
        "controller": _bool(), "blockOwnerDeletion": _bool(),
    }, required=("apiVersion", "kind", "name", "uid"))
    return _root(None, None, action=_str(), target=target, reason=_str(), message=_str())


# ----------------------------------------------------------------------------- definitions


@dataclass(frozen=True, slots=True)
class CrdSpec:
    """The identity of one Volcano kind as upstream's CRD declares it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    scope: str
    status_subresource: bool
    printer_columns: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def _column(name: str, json_path: str, type_: str, priority: int | None = None) -> dict[str, Any]:
    col: dict[str, Any] = {"name": name, "type": type_, "jsonPath": json_path}
    if priority is not None:
        col["priority"] = priority
    return col


_AGE: Final = _column("AGE", ".metadata.creationTimestamp", "date")

CRD_SPECS: Final = (
    CrdSpec("batch.volcano.sh", "v1alpha1", "Job", "jobs", "job", ("vcjob", "vj"), "Namespaced", True, (
        _column("STATUS", ".status.state.phase", "string"),
        _column("minAvailable", ".status.minAvailable", "integer"),
        _column("RUNNINGS", ".status.running", "integer"),
        _AGE,
        _column("QUEUE", ".spec.queue", "string", priority=1),
    )),
    CrdSpec("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", "podgroup", ("pg", "podgroup-v1beta1"),
            "Namespaced", False, (
                _column("STATUS", ".status.phase", "string"),
                _column("minMember", ".spec.minMember", "integer"),
                _column("RUNNINGS", ".status.running", "integer"),
                _AGE,
                _column("QUEUE", ".spec.queue", "string", priority=1),
            )),
    CrdSpec("scheduling.volcano.sh", "v1beta1", "Queue", "queues", "queue", ("q", "queue-v1beta1"), "Cluster", True, (
        _column("PARENT", ".spec.parent", "string"),
    )),
    CrdSpec("bus.volcano.sh", "v1alpha1", "Command", "commands", "command", (), "Namespaced", False, ()),
    CrdSpec("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", "hypernode", ("hn",), "Cluster", True, (
        _column("Tier", ".spec.tier", "string"),
        _column("TierName", ".spec.tierName", "string"),
        _column("NodeCount", ".status.nodeCount", "integer"),
        _column("Age", ".metadata.creationTimestamp", "date"),
    )),
    CrdSpec("nodeinfo.volcano.sh", "v1alpha1", "Numatopology", "numatopologies", "numatopology", ("numatopo",),
            "Cluster", False, ()),
    CrdSpec("batch.volcano.sh", "v1alpha1", "CronJob", "cronjobs", "cronjob", ("cronvcjob", "cronvj"), "Namespaced",
            True, ()),
    CrdSpec("flow.volcano.sh", "v1alpha1", "JobFlow", "jobflows", "jobflow", ("jf",), "Namespaced", True, (
        _column("Status", ".status.state.phase", "string"),
        _column("Age", ".metadata.creationTimestamp", "date"),
    )),
    CrdSpec("flow.volcano.sh", "v1alpha1", "JobTemplate", "jobtemplates", "jobtemplate", ("jt",), "Namespaced", True,
            ()),
)

_SCHEMAS: Final = {"Job": _job_schema, "PodGroup": _podgroup_schema, "Queue": _queue_schema,
                   "Command": _command_schema, "HyperNode": _hypernode_schema,
                   "Numatopology": _numatopology_schema, "CronJob": _cronjob_schema,
                   "JobFlow": _jobflow_schema, "JobTemplate": _jobtemplate_schema}


def schema_for(api_version: str, kind: str) -> Schema | None:
    """The openAPIV3Schema the API server validates ``kind`` of ``api_version`` with, or None."""
    for spec in CRD_SPECS:
        if spec.api_version == api_version and spec.kind == kind:
            return _SCHEMAS[kind]()
    return None


def _definition(spec: CrdSpec) -> dict[str, Any]:
    names: dict[str, Any] = {"kind": spec.kind, "listKind": f"{spec.kind}List", "plural": spec.plural,
                             "singular": spec.singular}
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    version: dict[str, Any] = {
        "name": spec.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": _SCHEMAS[spec.kind]()},
        "subresources": {"status": {}} if spec.status_subresource else {},
    }
    if spec.printer_columns:
        version["additionalPrinterColumns"] = [dict(c) for c in spec.printer_columns]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": spec.name},
        "spec": {"group": spec.group, "names": names, "scope": spec.scope, "versions": [version]},
    }


def custom_resource_definitions() -> list[dict[str, Any]]:
    """The eight CRDs, in :data:`CRD_SPECS` order."""
    return [_definition(s) for s in CRD_SPECS]
