"""Admission of ``batch.volcano.sh/v1alpha1`` Jobs.

Mutation on CREATE follows ``pkg/webhooks/admission/jobs/mutate/mutate_job.go``: queue
``default``, the first scheduler name, ``maxRetry`` 3 when 0 or unset, task names ``default<i>``,
``dnsPolicy: ClusterFirstWithHostNet`` for host-network templates, task ``minAvailable`` =
``minPartitions × partitionSize`` (when ``minPartitions > 0``) else ``replicas``, task ``maxRetry``
3 when 0 or unset, job ``minAvailable`` = Σ task ``minAvailable`` when 0 or unset, and the ``svc``
(for tensorflow/mpi/pytorch/ray) and ``ssh`` (for mpi) plugins a distributed plugin depends on;
and the CRD's default ``mode: hard`` of the job's and the partitions' network topologies.

Validation on CREATE follows ``validate/admit_job.go`` and ``validate/util.go`` plus the rules
upstream moved into the CRD schema and the ``job-validation-policy`` ValidatingAdmissionPolicy
(non-negative counts, DNS-1123 task names, policy events/actions, volumes, ``minSuccess ≥ 1``).
UPDATE follows ``validateJobUpdate``: only ``minAvailable``, task ``replicas``/``minAvailable``
and ``priorityClassName`` may change, and the task list may not grow or shrink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission._common import AdmissionConfig, Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    go_list,
    parse_quantity_or_none,
    qualified_name_errors,
    validate_pod_template,
)
from pyvolcano.admission.network_topology import default_mode, validate_bounds
from pyvolcano.admission.storage import ephemeral_volume_problems
from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.store.base import NotFound, Store

__all__ = [
    "DEFAULT_MAX_RETRY",
    "DEFAULT_QUEUE",
    "POLICY_ACTIONS",
    "POLICY_EVENTS",
    "default_job_spec_schema",
    "mutate_job",
    "validate_job_create",
    "validate_job_spec_schema",
    "validate_job_update",
]

DEFAULT_QUEUE: Final = "default"
DEFAULT_MAX_RETRY: Final = 3
DEFAULT_TASK_PREFIX: Final = "default"

POLICY_EVENTS: Final = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed",
                        "JobUpdated")
"""Events a policy may name (``policyEventMap`` entries marked external)."""
POLICY_ACTIONS: Final = ("AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob",
                         "CompleteJob", "ResumeJob")
"""Actions a policy may name (``policyActionMap`` entries marked external)."""

_SCHEMA_EVENTS: Final = ("*", "PodPending", "PodRunning", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted",
                         "OutOfSync", "CommandIssued", "JobUpdated", "TaskFailed")
"""The JobSpec schema's enum of policy events (the CRD's; the webhook allows fewer)."""
_TOPOLOGY_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
_TOPOLOGY_MODES: Final = ("hard", "soft")
_SVC_DEPENDENT_PLUGINS: Final = ("tensorflow", "mpi", "pytorch", "ray")
_MPI_DEFAULT_MASTER: Final = "master"
_UPDATE_MSG: Final = ("job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` "
                      "and `PriorityClassName`")


# ----------------------------------------------------------------------------- shape


def check_shape(job: Mapping[str, Any], p: Problems, *, path: str = "spec", required: bool = True) -> None:
    """Type checks the decoder would make; a job failing them is rejected before anything else.

    ``job`` holds the JobSpec under the last key of ``path``, the JobSpec's path in the object
    (a CronJob's ``spec.jobTemplate.spec``, a JobFlow's ``spec.flows[0].patch.jobSpec``);
    ``required``: a missing JobSpec is a problem."""
    s = ShapeChecker(p)
    spec = job.get(path.rpartition(".")[2])
    if spec is None and not required:
        return
    if not isinstance(spec, dict):
        p.add(path, "Required value" if spec is None else f"Invalid value: {quote(spec)}: expected a mapping")
        return
    for key in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished", "minSuccess"):
        s.integer(spec, key, f"{path}.{key}")
    for key in ("queue", "schedulerName", "priorityClassName"):
        s.string(spec, key, f"{path}.{key}")
    _shape_network_topology(s, spec, f"{path}.networkTopology")
    plugins = s.mapping(spec, "plugins", f"{path}.plugins")
    for name, args in (plugins or {}).items():
        if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
            p.add(f"{path}.plugins.{name}", f"Invalid value: {quote(args)}: expected a list of argument strings")
    _shape_policies(s, spec, f"{path}.policies")
    for k, vol in enumerate(s.mappings(spec, "volumes", f"{path}.volumes")):
        s.string(vol, "mountPath", f"{path}.volumes[{k}].mountPath")
        s.string(vol, "volumeClaimName", f"{path}.volumes[{k}].volumeClaimName")
        s.mapping(vol, "volumeClaim", f"{path}.volumes[{k}].volumeClaim")
    for i, task in enumerate(s.mappings(spec, "tasks", f"{path}.tasks")):
        tp = f"{path}.tasks[{i}]"
        s.string(task, "name", f"{tp}.name")
        for key in ("replicas", "minAvailable", "maxRetry"):
            s.integer(task, key, f"{tp}.{key}")
        s.string(task, "topologyPolicy", f"{tp}.topologyPolicy")
        s.mapping(task, "template", f"{tp}.template")
        _shape_policies(s, task, f"{tp}.policies")
        deps = s.mapping(task, "dependsOn", f"{tp}.dependsOn")
        if deps is not None:
            s.strings(deps, "name", f"{tp}.dependsOn.name")
            s.string(deps, "iteration", f"{tp}.dependsOn.iteration")
        pp = s.mapping(task, "partitionPolicy", f"{tp}.partitionPolicy")
        if pp is not None:
            for key in ("totalPartitions", "partitionSize", "minPartitions"):
                s.integer(pp, key, f"{tp}.partitionPolicy.{key}")
            _shape_network_topology(s, pp, f"{tp}.partitionPolicy.networkTopology")


def _shape_network_topology(s: ShapeChecker, parent: Mapping[str, Any], path: str) -> None:
    nt = s.mapping(parent, "networkTopology", path)
    if nt is not None:
        s.integer(nt, "highestTierAllowed", f"{path}.highestTierAllowed")
        s.string(nt, "highestTierName", f"{path}.highestTierName")
        s.string(nt, "mode", f"{path}.mode")


def _shape_policies(s: ShapeChecker, parent: Mapping[str, Any], path: str) -> None:
    for j, pol in enumerate(s.mappings(parent, "policies", path)):
        pp = f"{path}[{j}]"
        s.string(pol, "event", f"{pp}.event")
        s.strings(pol, "events", f"{pp}.events")
        s.string(pol, "action", f"{pp}.action")
        s.integer(pol, "exitCode", f"{pp}.exitCode")
        s.string(pol, "timeout", f"{pp}.timeout")


# ----------------------------------------------------------------------------- mutation


def mutate_job(job: dict[str, Any], cfg: AdmissionConfig) -> None:
    """Apply the CREATE defaults in place (the job has passed :func:`check_shape`)."""
    spec = job["spec"]
    if not spec.get("queue"):
        spec["queue"] = DEFAULT_QUEUE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = cfg.scheduler_names[0]
    if not spec.get("maxRetry"):
        spec["maxRetry"] = DEFAULT_MAX_RETRY
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
    for index, task in enumerate(tasks):
        if not task.get("name"):
            task["name"] = f"{DEFAULT_TASK_PREFIX}{index}"
        template = task.get("template")
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") is True and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if task.get("minAvailable") is None:
            pp = task.get("partitionPolicy") if isinstance(task.get("partitionPolicy"), dict) else None
            if pp is not None and (pp.get("minPartitions") or 0) > 0:
                task["minAvailable"] = pp["minPartitions"] * (pp.get("partitionSize") or 0)
            else:
                task["minAvailable"] = task.get("replicas") or 0
        if not task.get("maxRetry"):
            task["maxRetry"] = DEFAULT_MAX_RETRY
    if not spec.get("minAvailable"):
        spec["minAvailable"] = sum(t["minAvailable"] for t in tasks)
    default_mode(spec.get("networkTopology"))
    for task in tasks:
        if isinstance(task.get("partitionPolicy"), dict):
            default_mode(task["partitionPolicy"].get("networkTopology"))
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        if any(name in plugins for name in _SVC_DEPENDENT_PLUGINS) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []


def default_job_spec_schema(spec: dict[str, Any]) -> None:
    """The JobSpec schema's defaults, which the API server writes into every CRD that embeds a
    JobSpec (a CronJob's ``jobTemplate.spec``, a JobTemplate's ``spec``, a flow's
    ``patch.jobSpec``): ``maxRetry`` 3 and ``queue`` ``default`` when absent, ``mode: hard`` of
    the network topologies, ``minPartitions`` 0. The spec has passed :func:`check_shape`."""
    spec.setdefault("maxRetry", DEFAULT_MAX_RETRY)
    spec.setdefault("queue", DEFAULT_QUEUE)
    default_mode(spec.get("networkTopology"))
    for task in spec.get("tasks") or []:
        pp = task.get("partitionPolicy") if isinstance(task, dict) else None
        if isinstance(pp, dict):
            pp.setdefault("minPartitions", 0)
            default_mode(pp.get("networkTopology"))


def validate_job_spec_schema(spec: Mapping[str, Any], path: str, p: Problems, *, min_tasks: int = 0) -> None:
    """The JobSpec schema's bounds (what the API server checks in a CRD embedding a JobSpec,
    before any webhook): non-negative counts, ``minSuccess`` ≥ 1, DNS-1123 task names and
    queue, known policy events, network topology modes; ``min_tasks``: the JobTemplate CRD's
    ``minItems`` on ``tasks``. The spec has passed :func:`check_shape`."""

    def at_least(obj: Mapping[str, Any], key: str, where: str, low: int) -> None:
        value = obj.get(key)
        if value is not None and value < low:
            p.add(f"{where}.{key}", f"Invalid value: {value}: must be greater than or equal to {low}")

    for key in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished"):
        at_least(spec, key, path, 0)
    at_least(spec, "minSuccess", path, 1)
    for key in ("queue", "priorityClassName"):
        value = spec.get(key)
        if value:
            for e in dns1123_subdomain_errors(value):
                p.add(f"{path}.{key}", f"Invalid value: {quote(value)}: {e}")
    validate_bounds(spec.get("networkTopology"), f"{path}.networkTopology", p)
    tasks = spec.get("tasks")
    if tasks is not None and len(tasks) < min_tasks:
        p.add(f"{path}.tasks", f"Invalid value: {len(tasks)}: must have at least {min_tasks} items")
    for i, task in enumerate(t for t in tasks or [] if isinstance(t, dict)):
        tp = f"{path}.tasks[{i}]"
        for key in ("replicas", "minAvailable", "maxRetry"):
            at_least(task, key, tp, 0)
        name = task.get("name")
        if name:
            for e in dns1123_label_errors(name):
                p.add(f"{tp}.name", f"Invalid value: {quote(name)}: {e}")
        for j, policy in enumerate(t for t in task.get("policies") or [] if isinstance(t, dict)):
            _validate_policy_events(policy, f"{tp}.policies[{j}]", p)
        pp = task.get("partitionPolicy")
        if isinstance(pp, Mapping):
            at_least(pp, "totalPartitions", f"{tp}.partitionPolicy", 1)
            at_least(pp, "partitionSize", f"{tp}.partitionPolicy", 1)
            at_least(pp, "minPartitions", f"{tp}.partitionPolicy", 0)
            validate_bounds(pp.get("networkTopology"), f"{tp}.partitionPolicy.networkTopology", p)
    for j, policy in enumerate(t for t in spec.get("policies") or [] if isinstance(t, dict)):
        _validate_policy_events(policy, f"{path}.policies[{j}]", p)


def _validate_policy_events(policy: Mapping[str, Any], where: str, p: Problems) -> None:
    for event, key in _event_list(policy):
        if event not in _SCHEMA_EVENTS:
            p.add(f"{where}.{key}", f"Unsupported value: {quote(event)}: supported values: "
                                    + ", ".join(quote(e) for e in _SCHEMA_EVENTS))


# ----------------------------------------------------------------------------- CREATE


def validate_job_create(job: Mapping[str, Any], store: Store, cfg: AdmissionConfig, p: Problems) -> None:
    spec = job["spec"]
    job_name = job["metadata"].get("name", "")
    tasks: list[dict[str, Any]] = [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
    if not tasks:
        p.add("spec.tasks", "No task specified in job spec")
        return

    plugins = spec.get("plugins") if isinstance(spec.get("plugins"), dict) else {}
    if "mpi" in plugins:
        master = _flag_value(plugins.get("mpi") or [], "master", _MPI_DEFAULT_MASTER)
        if all(t.get("name") != master for t in tasks):
            p.add("spec.plugins.mpi", f"The specified mpi master task was not found (no task named {master!r})")
            return

    _validate_network_topology(spec.get("networkTopology"), "spec.networkTopology", p)
    _validate_job_counts(spec, p)

    names: set[str] = set()
    total_replicas = 0
    for index, task in enumerate(tasks):
        tp = f"spec.tasks[{index}]"
        name = task.get("name") or ""
        for e in dns1123_label_errors(name):
            p.add(f"{tp}.name", f"Invalid value: {quote(name)}: {e}")
        replicas = task.get("replicas") or 0
        min_available = task.get("minAvailable")
        if replicas < 0:
            p.add(f"{tp}.replicas", f"'replicas' must be >= 0 in task: {name}")
        if min_available is not None:
            if min_available < 0:
                p.add(f"{tp}.minAvailable", f"'minAvailable' must be >= 0 in task: {name}")
            elif min_available > replicas:
                p.add(f"{tp}.minAvailable",
                      f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job_name}")
        if (task.get("maxRetry") or 0) < 0:
            p.add(f"{tp}.maxRetry", f"'maxRetry' cannot be less than zero in task: {name}")
        total_replicas += replicas

        if name in names:
            p.add(f"{tp}.name", f"duplicated task name {name!r}")
            break  # upstream stops looking at further tasks here
        names.add(name)

        _validate_policies(task.get("policies") or [], f"{tp}.policies", p)
        pod_name = f"{job_name}-{name}-{index}"
        errs = qualified_name_errors(pod_name)
        if errs:
            p.add(f"{tp}.name", f"create pod with name {pod_name} validate failed {go_list(errs)}")
        validate_pod_template(task.get("template"), f"{tp}.template", p)
        template = task.get("template")
        ephemeral_volume_problems(sub(template, "spec") if isinstance(template, Mapping) else {},
                                  f"{tp}.template.spec", p)
        _validate_topology_policy(task, index, tp, p)
        _validate_partition_policy(task, job_name, tp, p)

    errs = qualified_name_errors(job_name)
    if errs:
        p.add("metadata.name", f"create job with name {job_name} validate failed {go_list(errs)}")

    min_available = spec.get("minAvailable") or 0
    if total_replicas < min_available:
        p.add("spec.minAvailable", "job 'minAvailable' should not be greater than total replicas in tasks")
    _validate_policies(spec.get("policies") or [], "spec.policies", p)

    for plugin in sorted(plugins):
        if plugin not in cfg.job_plugins:
            p.add(f"spec.plugins.{plugin}", f"unable to find job plugin: {plugin}")

    _validate_volumes(spec.get("volumes") or [], p)
    _validate_queue(spec.get("queue") or DEFAULT_QUEUE, store, p)
    _validate_dependencies(tasks, p)


def _validate_job_counts(spec: Mapping[str, Any], p: Problems) -> None:
    """Rules upstream enforces through the CRD schema and the job ValidatingAdmissionPolicy."""
    if (spec.get("minAvailable") or 0) < 0:
        p.add("spec.minAvailable", "job 'minAvailable' must be >= 0")
    if (spec.get("maxRetry") or 0) < 0:
        p.add("spec.maxRetry", "'maxRetry' cannot be less than zero")
    ttl = spec.get("ttlSecondsAfterFinished")
    if ttl is not None and ttl < 0:
        p.add("spec.ttlSecondsAfterFinished", "'ttlSecondsAfterFinished' cannot be less than zero")
    min_success = spec.get("minSuccess")
    if min_success is not None and min_success < 1:
        p.add("spec.minSuccess", f"Invalid value: {min_success}: must be greater than or equal to 1")
    for key in ("queue", "priorityClassName"):
        value = spec.get(key)
        if value:
            for e in dns1123_subdomain_errors(value):
                p.add(f"spec.{key}", f"Invalid value: {quote(value)}: {e}")
    scheduler = spec.get("schedulerName") or ""
    if len(scheduler) > 63:
        p.add("spec.schedulerName", f"Invalid value: {quote(scheduler)}: must be no more than 63 characters")


def _validate_network_topology(nt: Any, path: str, p: Problems) -> None:
    if not isinstance(nt, Mapping):
        return
    if nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        p.add(path, "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously")
    tier = nt.get("highestTierAllowed")
    if tier is not None and tier < 0:
        p.add(f"{path}.highestTierAllowed", f"Invalid value: {tier}: must be greater than or equal to 0")
    tier_name = nt.get("highestTierName") or ""
    if len(tier_name) > 253:
        p.add(f"{path}.highestTierName", f"Invalid value: {quote(tier_name)}: must be no more than 253 characters")
    mode = nt.get("mode")
    if mode not in (None, "") and mode not in _TOPOLOGY_MODES:
        p.add(f"{path}.mode", f"Unsupported value: {quote(mode)}: supported values: \"hard\", \"soft\"")


def _event_list(policy: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``getEventList``: ``events`` then ``event``, duplicates removed; with each one's field."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for k, ev in enumerate(policy.get("events") or []):
        if ev not in seen:
            seen.add(ev)
            out.append((ev, f"events[{k}]"))
    ev = policy.get("event")
    if ev and ev not in seen:
        out.append((ev, "event"))
    return out


def _validate_policies(policies: list[Any], base: str, p: Problems) -> None:
    """``validatePolicies``: stops at the first bad policy, as upstream does."""
    events_seen: set[str] = set()
    codes_seen: set[int] = set()
    valid = f"valid events are {go_list(list(POLICY_EVENTS))}, valid actions are {go_list(list(POLICY_ACTIONS))}"
    for j, policy in enumerate(policies):
        if not isinstance(policy, Mapping):
            continue
        pp = f"{base}[{j}]"
        has_event = bool(policy.get("event")) or bool(policy.get("events"))
        code = policy.get("exitCode")
        if has_event and code is not None:
            p.add(pp, "must not specify event and exitCode simultaneously")
            break
        if not has_event and code is None:
            p.add(pp, "either event and exitCode should be specified")
            break
        action = policy.get("action")
        if action not in POLICY_ACTIONS:
            p.add(f"{pp}.action", f"Invalid value: {quote(action or '')}: invalid policy action; {valid}")
            break
        if has_event:
            bad = False
            for event, where in _event_list(policy):
                if event not in POLICY_EVENTS:
                    p.add(f"{pp}.{where}", f"Invalid value: {quote(event)}: invalid policy event; {valid}")
                    bad = True
                    break
                if event in events_seen:
                    p.add(f"{pp}.{where}", f"duplicate event {event} across different policy")
                    bad = True
                    break
                events_seen.add(event)
            if bad:
                break
        else:
            if code == 0:
                p.add(f"{pp}.exitCode", "0 is not a valid error code")
                break
            if not isinstance(code, int):
                continue
            if code in codes_seen:
                p.add(f"{pp}.exitCode", f"duplicate exitCode {code}")
                break
            codes_seen.add(code)
        timeout = policy.get("timeout")
        if timeout is not None:
            try:
                parse_duration_strict(timeout)
            except DurationError as e:
                p.add(f"{pp}.timeout", f"Invalid value: {quote(timeout)}: {e}")
                break
    if "*" in events_seen and len(events_seen) > 1:
        p.add(base, "if there's * here, no other policy should be here")


def _validate_topology_policy(task: Mapping[str, Any], index: int, tp: str, p: Problems) -> None:
    """``validateTaskTopoPolicy``: with a NUMA policy every container needs a whole-CPU request."""
    policy = task.get("topologyPolicy")
    if policy in (None, ""):
        return
    if policy not in _TOPOLOGY_POLICIES:
        p.add(f"{tp}.topologyPolicy", f"Unsupported value: {quote(policy)}: supported values: "
                                      + ", ".join(quote(x) for x in _TOPOLOGY_POLICIES))
        return
    if policy == "none":
        return
    template = sub(task, "template")
    pod_spec = sub(template, "spec")
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, Mapping)]
    containers += [c for c in pod_spec.get("initContainers") or [] if isinstance(c, Mapping)]
    for cid, c in enumerate(containers):
        res = sub(c, "resources")
        requests = sub(res, "requests")
        if not requests:
            requests = sub(res, "limits")
        cpu = parse_quantity_or_none(requests.get("cpu", 0))
        if cpu is None or cpu == 0 or cpu.denominator != 1:
            p.add(f"{tp}.template.spec.containers[{cid}].resources.requests.cpu",
                  f"the cpu request isn't an integer in spec.task[{index}] container[{cid}].")
            return


def _validate_partition_policy(task: Mapping[str, Any], job_name: str, tp: str, p: Problems) -> None:
    pp = task.get("partitionPolicy")
    if not isinstance(pp, Mapping):
        return
    name = task.get("name") or ""
    where = f"in task: {name}, job: {job_name}"
    total = pp.get("totalPartitions") or 0
    size = pp.get("partitionSize") or 0
    min_partitions = pp.get("minPartitions") or 0
    min_available = task.get("minAvailable")
    if total <= 0:
        p.add(f"{tp}.partitionPolicy.totalPartitions", f"'TotalPartitions' must be greater than 0 {where}")
    elif size <= 0:
        p.add(f"{tp}.partitionPolicy.partitionSize", f"'PartitionSize' must be greater than 0 {where}")
    elif (task.get("replicas") or 0) != total * size:
        p.add(f"{tp}.replicas", f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}")
    elif min_available is not None and min_partitions > 0 and min_partitions * size != min_available:
        p.add(f"{tp}.minAvailable", f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}")
    if min_partitions < 0:
        p.add(f"{tp}.partitionPolicy.minPartitions", f"Invalid value: {min_partitions}: must be greater than or "
                                                     "equal to 0")
    _validate_network_topology(pp.get("networkTopology"), f"{tp}.partitionPolicy.networkTopology", p)


def _validate_volumes(volumes: list[Any], p: Problems) -> None:
    """``validateIO``: reports the first bad volume only, as upstream does."""
    mount_paths: set[str] = set()
    for k, vol in enumerate(volumes):
        if not isinstance(vol, Mapping):
            continue
        vp = f"spec.volumes[{k}]"
        mount_path = vol.get("mountPath") or ""
        if not mount_path:
            p.add(f"{vp}.mountPath", "mountPath is required")
            return
        if ":" in mount_path:
            p.add(f"{vp}.mountPath", f"Invalid value: {quote(mount_path)}: must not contain ':'")
            return
        if mount_path in mount_paths:
            p.add(f"{vp}.mountPath", f"duplicated mountPath: {mount_path}")
            return
        claim = vol.get("volumeClaim")
        claim_name = vol.get("volumeClaimName") or ""
        if claim is None and not claim_name:
            p.add(vp, "either VolumeClaim or VolumeClaimName must be specified")
            return
        if claim_name:
            if claim is not None:
                p.add(vp, "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                          "If you want to create a new PVC, you do not need to specify VolumeClaimName")
                return
            errs = dns1123_subdomain_errors(claim_name)
            if errs:
                p.add(f"{vp}.volumeClaimName", f"invalid VolumeClaimName {claim_name} : {go_list(errs)}")
                return
        mount_paths.add(mount_path)


def _validate_queue(queue_name: str, store: Store, p: Problems) -> None:
    try:
        queue = store.get("Queue", None, queue_name)
    except NotFound:
        p.add("spec.queue", f'unable to find job queue: queues.scheduling.volcano.sh "{queue_name}" not found')
        return
    status = sub(queue, "status")
    state = status.get("state") or ""
    # An empty state has not been written by the queue controller yet and means Open.
    if state and state != "Open":
        p.add("spec.queue", f"can only submit job to queue with state `Open`, queue `{queue_name}` status is `{state}`")
    if queue_name == "root":
        p.add("spec.queue", "can not submit job to root queue")
        return
    children = [q for q in store.list("Queue") if _parent_of(q) == queue_name]
    if children:
        p.add("spec.queue", f"can only submit job to leaf queue, queue `{queue_name}` has {len(children)} child queues")


def _parent_of(queue: Mapping[str, Any]) -> str:
    spec = sub(queue, "spec")
    parent = spec.get("parent")
    return parent if isinstance(parent, str) else ""


def _validate_dependencies(tasks: list[dict[str, Any]], p: Problems) -> None:
    """``topoSort``: ``dependsOn`` must name existing tasks and form a DAG."""
    if not any(isinstance(t.get("dependsOn"), Mapping) for t in tasks):
        return
    msg = "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"
    names = [t.get("name") or "" for t in tasks]
    known = set(names)
    edges: dict[str, set[str]] = {n: set() for n in names}
    indegree = dict.fromkeys(names, 0)
    broken = False
    for i, task in enumerate(tasks):
        deps = task.get("dependsOn")
        if not isinstance(deps, Mapping):
            continue
        for k, dep in enumerate(deps.get("name") or []):
            if dep not in known:
                p.add(f"spec.tasks[{i}].dependsOn.name[{k}]", f"{msg}: task {dep!r} does not exist")
                broken = True
                continue
            if task.get("name") not in edges[dep]:
                edges[dep].add(task.get("name") or "")
                indegree[task.get("name") or ""] += 1
    if broken:
        return
    ready = sorted(n for n, d in indegree.items() if d == 0)
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        for m in sorted(edges[n]):
            indegree[m] -= 1
            if indegree[m] == 0:
                ready.append(m)
    if done < len(indegree):
        cyclic = sorted(n for n, d in indegree.items() if d > 0)
        p.add("spec.tasks", f"{msg}: tasks {', '.join(cyclic)} depend on each other in a cycle")


def _flag_value(args: list[Any], flag: str, default: str) -> str:
    """The value of ``--flag=v`` / ``-flag=v`` / ``--flag v`` in Go ``flag`` style arguments."""
    value = default
    i = 0
    while i < len(args):
        arg = str(args[i])
        stripped = arg.lstrip("-")
        if arg.startswith("-") and len(arg) - len(stripped) <= 2:
            key, eq, val = stripped.partition("=")
            if key == flag:
                if eq:
                    value = val
                elif i + 1 < len(args):
                    value = str(args[i + 1])
                    i += 1
        i += 1
    return value


# ----------------------------------------------------------------------------- UPDATE


def validate_job_update(old: Mapping[str, Any], new: Mapping[str, Any], p: Problems) -> None:
    """``validateJobUpdate``: fails on the first problem, as upstream does."""
    spec = new["spec"]
    old_spec = sub(old, "spec")
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    job_name = new["metadata"].get("name", "")
    total = 0
    for i, task in enumerate(tasks):
        tp = f"spec.tasks[{i}]"
        name = task.get("name") or ""
        replicas = task.get("replicas") or 0
        if replicas < 0:
            p.add(f"{tp}.replicas", f"'replicas' must be >= 0 in task: {name}")
            return
        min_available = task.get("minAvailable")
        if min_available is not None:
            if min_available < 0:
                p.add(f"{tp}.minAvailable", f"'minAvailable' must be >= 0 in task: {name}")
                return
            if min_available > replicas:
                p.add(f"{tp}.minAvailable", f"'minAvailable' must be <= 'replicas' in task: {name}")
                return
        before = len(p)
        _validate_partition_policy(task, job_name, tp, p)
        if len(p) > before:
            return
        total += replicas
    min_available = spec.get("minAvailable") or 0
    if min_available > total:
        p.add("spec.minAvailable", "job 'minAvailable' must not be greater than total replicas")
        return
    if min_available < 0:
        p.add("spec.minAvailable", "job 'minAvailable' must be >= 0")
        return
    nt = spec.get("networkTopology")
    if isinstance(nt, Mapping) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        p.add("spec.networkTopology",
              "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously")
        return
    old_tasks = old_spec.get("tasks") or []
    if len(old_tasks) != len(spec.get("tasks") or []):
        p.add("spec.tasks", "job updates may not add or remove tasks")
        return
    diff = _first_difference(_comparable_spec(old_spec), _comparable_spec(spec), "spec")
    if diff is not None:
        p.add(diff, _UPDATE_MSG)


def _comparable_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec without the fields an update may change."""
    out = {k: v for k, v in spec.items() if k not in ("minAvailable", "priorityClassName")}
    tasks = []
    for t in spec.get("tasks") or []:
        if isinstance(t, Mapping):
            tasks.append({k: v for k, v in t.items() if k not in ("replicas", "minAvailable")})
        else:
            tasks.append(t)
    out["tasks"] = tasks
    volumes = []
    for v in spec.get("volumes") or []:
        if isinstance(v, Mapping) and v.get("volumeClaim") is not None:
            volumes.append({k: x for k, x in v.items() if k != "volumeClaimName"})  # filled in by the controller
        else:
            volumes.append(v)
    out["volumes"] = volumes
    return out


def _is_empty(v: Any) -> bool:
    return v is None or v is False or v == "" or v == [] or v == {}


def _first_difference(a: Any, b: Any, path: str) -> str | None:
    """Path of the first semantic difference (``apiequality.Semantic.DeepEqual``: absent, null and
    empty values are equal; quantities compare by value), or None."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            d = _first_difference(a.get(k), b.get(k), f"{path}.{k}")
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{path}[{i}]")
            if d is not None:
                return d
        return None
    if _is_empty(a) and _is_empty(b):
        return None
    if isinstance(a, Mapping) and _is_empty(b) and all(_is_empty(v) for v in a.values()):
        return None
    if isinstance(b, Mapping) and _is_empty(a) and all(_is_empty(v) for v in b.values()):
        return None
    if a == b and type(a) is type(b):
        return None
    if isinstance(a, str | int) and isinstance(b, str | int) and not isinstance(a, bool) and not isinstance(b, bool):
        qa, qb = parse_quantity_or_none(a), parse_quantity_or_none(b)
        if qa is not None and qa == qb:
            return None
    return path
