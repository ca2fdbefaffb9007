"""Admission: what the API server and Volcano's webhooks default and validate.

:class:`VolcanoAdmission` implements :class:`~pyvolcano.store.base.Admission`. For every kind it
applies the API server's object-metadata validation; for Job, Queue, PodGroup and Pod it then
applies upstream's mutating webhook (CREATE only) and validating webhook, for HyperNode (which
has no mutating webhook) its CRD's rules and validating webhook (:mod:`.hypernodes`), for
Numatopology the CRD's rules and what the scheduler reads (:mod:`.numatopologies`), for CronJob
and JobFlow their CRDs' defaults and rules and their validating webhooks (:mod:`.cronjobs`,
:mod:`.jobflows`), for JobTemplate (which has no webhook) its CRD's. Order per request:
type checks → mutation → metadata validation → kind validation; all problems of one object are
reported together in a single :class:`~pyvolcano.store.base.Invalid` (field of the first one,
``errors`` with all of them). Refused deletions raise :class:`~pyvolcano.store.base.Forbidden`.

:meth:`VolcanoAdmission.admit` is :meth:`~VolcanoAdmission.mutate` then
:meth:`~VolcanoAdmission.validate`; the two halves are public so that the HTTPS webhook server
(:mod:`pyvolcano.webhooks`) can serve the mutating and the validating webhooks separately, as
the API server calls them.

Pods get the resource groups of ``--admission-conf`` on CREATE (:mod:`.resource_groups`, when
:attr:`VolcanoAdmission.resource_groups` is set) and what the API server does before any webhook: the defaulting of
:mod:`pyvolcano.api.defaults` (requests from limits), the Priority admission plugin
(:mod:`.priority`: a missing PriorityClass is Forbidden; the priority is written into the pod),
the RuntimeClass admission plugin (:mod:`.runtimeclass`: the class's overhead, node selector
and tolerations written into the pod) and, on CREATE, the pod-spec validation of
``ValidatePodCreate`` (:func:`.k8s.validate_pod_spec`). RuntimeClasses get
``ValidateRuntimeClass``. PriorityClasses get ``ValidatePriorityClass`` and the single-global-default rule;
PodDisruptionBudgets and ResourceQuotas the API server's validation (:mod:`.policy`). The storage
kinds and the ``resource.k8s.io/v1`` kinds get the API server's defaults and validation
(:mod:`.storage`, :mod:`.resource`), then must read as the scheduler reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pyvolcano.admission import (
    cronjobs,
    hypernodes,
    jobflows,
    jobs,
    numatopologies,
    podgroups,
    pods,
    policy,
    priority,
    queues,
    runtimeclass,
)
from pyvolcano.admission._common import DEFAULT_JOB_PLUGINS, AdmissionConfig, Problems, ShapeChecker
from pyvolcano.admission.k8s import validate_object_meta, validate_pod_spec
from pyvolcano.admission.resource import validate_resource_object
from pyvolcano.admission.resource_groups import AdmissionConfiguration, apply_resource_groups
from pyvolcano.admission.storage import ephemeral_volume_problems, validate_storage_object
from pyvolcano.api.defaults import default_pod
from pyvolcano.api.manifest import ManifestError, parse_object
from pyvolcano.api.names import STORAGE_KINDS
from pyvolcano.store.base import Store

__all__ = ["DEFAULT_JOB_PLUGINS", "AdmissionConfig", "VolcanoAdmission"]

_Check = Callable[[Any, Problems], None]
RESOURCE_KINDS: Final = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})
_CRD_DEFAULTED: Final[dict[str, tuple[_Check, Callable[[dict[str, Any]], None]]]] = {
    "CronJob": (cronjobs.check_shape, cronjobs.default_cronjob),
    "JobFlow": (jobflows.check_jobflow_shape, jobflows.default_jobflow),
    "JobTemplate": (jobflows.check_jobtemplate_shape, jobflows.default_jobtemplate),
}
"""Kinds whose CRD schema has defaults: its shape check and its defaulting."""


class VolcanoAdmission:
    """Volcano's admission webhooks plus the API server's generic checks.

    Keyword options mirror ``vc-webhook-manager`` flags: ``scheduler_names`` (the first is the
    default for jobs), ``max_queue_depth`` (5), ``enable_queue_allocated_pods_check`` (off),
    ``enable_root_queue_protection`` (on), and ``job_plugins`` (the plugin names the job
    controller implements).
    """

    def __init__(self, *, scheduler_names: tuple[str, ...] = ("volcano",), max_queue_depth: int = 5,
                 enable_queue_allocated_pods_check: bool = False, enable_root_queue_protection: bool = True,
                 job_plugins: frozenset[str] | None = None, api_server_checks: bool = True):
        # api_server_checks: also do what the API server itself does before and around the
        # webhooks (pod defaulting, Priority admission, pod-spec and PriorityClass validation).
        # The in-memory store and `validate` need them; the HTTPS webhook server, called by a
        # real API server that has done them already, does not.
        self.api_server_checks = api_server_checks
        if not scheduler_names:
            raise ValueError("scheduler_names must name at least one scheduler")
        self.config = AdmissionConfig(
            scheduler_names=tuple(scheduler_names), max_queue_depth=max_queue_depth,
            enable_queue_allocated_pods_check=enable_queue_allocated_pods_check,
            enable_root_queue_protection=enable_root_queue_protection,
            job_plugins=DEFAULT_JOB_PLUGINS if job_plugins is None else frozenset(job_plugins),
        )
        # The /pods/mutate resource groups of --admission-conf (replaced whole when the file is
        # read again); None: no configuration, pods are not mutated.
        self.resource_groups: AdmissionConfiguration | None = None

    def admit(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store) -> dict[str, Any]:
        self.mutate(op, obj, store)
        self.validate(op, obj, old, store)
        return obj

    def mutate(self, op: str, obj: dict[str, Any], store: Store) -> dict[str, Any]:
        """The mutating webhooks alone: type checks, then the CREATE defaults applied in place.

        Raises :class:`Invalid` only when the object cannot be decoded (wrong types)."""
        self._check_op_and_metadata(op, obj)
        kind = obj.get("kind")
        if kind in _CRD_DEFAULTED and op != "DELETE":
            # The API server writes a CRD's defaults on every write, not only on CREATE.
            p = Problems(obj)
            shape, default = _CRD_DEFAULTED[kind]
            shape(obj, p)
            p.raise_if_any()
            default(obj)
        if op != "CREATE":
            return obj
        p = Problems(obj)
        if kind == "Job":
            jobs.check_shape(obj, p)
            p.raise_if_any()
            jobs.mutate_job(obj, self.config)
        elif kind == "Queue":
            queues.check_shape(obj, p)
            p.raise_if_any()
            queues.mutate_queue(obj)
        elif kind == "PodGroup":
            podgroups.check_shape(obj, p)
            p.raise_if_any()
            podgroups.mutate_podgroup(obj, store)
        elif kind == "Pod":
            groups = self.resource_groups
            if groups is not None:
                apply_resource_groups(groups, obj)
        return obj

    def validate(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store) -> None:
        """The validating webhooks alone (plus the API server's checks), on an object as the
        mutating ones left it. Raises :class:`Invalid` or, for a refused deletion, :class:`Forbidden`."""
        self._check_op_and_metadata(op, obj)
        kind = obj.get("kind")
        if op == "DELETE":
            if kind == "Queue":
                queues.check_queue_delete(obj, store, self.config)
            return
        p = Problems(obj)
        if kind == "Job":
            self._job(op, obj, old, store, p)
        elif kind == "Queue":
            self._queue(op, obj, old, store, p)
        elif kind == "PodGroup":
            self._podgroup(op, obj, store, p)
        elif kind == "HyperNode":
            self._hypernode(obj, p)
        elif kind == "Numatopology":
            validate_object_meta(obj, p)
            numatopologies.validate_numatopology(obj, p)
        elif kind == "CronJob":
            self._crd_kind(obj, p, cronjobs.check_shape, cronjobs.validate_schema, cronjobs.validate_cronjob)
        elif kind == "JobFlow":
            self._crd_kind(obj, p, jobflows.check_jobflow_shape, jobflows.validate_jobflow_schema,
                           jobflows.validate_jobflow)
        elif kind == "JobTemplate":
            self._crd_kind(obj, p, jobflows.check_jobtemplate_shape, jobflows.validate_jobtemplate_schema, None)
        elif kind == "PriorityClass" and self.api_server_checks:
            if op == "CREATE" and obj.get("preemptionPolicy") is None:
                obj["preemptionPolicy"] = "PreemptLowerPriority"  # SetDefaults_PriorityClass
            validate_object_meta(obj, p)
            if op == "CREATE" or old is not None:
                priority.validate_priority_class(op, obj, store, p)
        elif kind == "Pod":
            self._pod(op, obj, old, store, p)
        elif kind == "PodDisruptionBudget" and self.api_server_checks:
            policy.validate_pod_disruption_budget(obj, p)
        elif kind == "ResourceQuota" and self.api_server_checks:
            policy.validate_resource_quota(obj, p)
        elif kind in STORAGE_KINDS and self.api_server_checks:
            validate_object_meta(obj, p)
            validate_storage_object(obj, p)
            if not p:
                _as_scheduler_reads_it(obj, p)
        elif kind == "RuntimeClass" and self.api_server_checks:
            validate_object_meta(obj, p)
            runtimeclass.validate_runtime_class(obj, p)
        elif kind in RESOURCE_KINDS and self.api_server_checks:
            validate_object_meta(obj, p)
            validate_resource_object(obj, p)
            if not p:
                _as_scheduler_reads_it(obj, p)
        else:
            validate_object_meta(obj, p)
        p.raise_if_any()

    @staticmethod
    def _check_op_and_metadata(op: str, obj: dict[str, Any]) -> None:
        if op not in ("CREATE", "UPDATE", "DELETE"):
            raise ValueError(f"admit: unknown operation {op!r}")
        if not isinstance(obj.get("metadata"), dict):
            p0 = Problems(obj)
            p0.add("metadata", "Required value")
            p0.raise_if_any()
        if op != "DELETE":
            # Mutating webhooks read labels and annotations as strings: check their type first.
            p1 = Problems(obj)
            s1 = ShapeChecker(p1)
            for key in ("labels", "annotations"):
                s1.string_map(obj["metadata"], key, f"metadata.{key}")
            p1.raise_if_any()

    def _pod(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store, p: Problems) -> None:
        # The API server's order: decode (type checks) and defaulting, mutating admission (the
        # Priority plugin), then validation, then Volcano's validating webhook.
        if not self.api_server_checks:
            validate_object_meta(obj, p)
            if op == "CREATE" and not p:
                pods.validate_pod(obj, self.config, p)
            return
        default_pod(obj)
        if op == "CREATE":
            spec = obj.get("spec")
            if isinstance(spec, dict):
                ShapeChecker(p).integer(spec, "priority", "spec.priority")
                p.raise_if_any()
        priority.admit_pod_priority(op, obj, old, store)
        runtimeclass.admit_pod_runtime_class(op, obj, store)
        validate_object_meta(obj, p)
        if op == "CREATE" and not p:
            validate_pod_spec(obj.get("spec"), "spec", p)
            ephemeral_volume_problems(obj.get("spec"), "spec", p)
            if not p:
                pods.validate_pod(obj, self.config, p)

    def _job(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store, p: Problems) -> None:
        jobs.check_shape(obj, p)
        if p:
            return
        validate_object_meta(obj, p)
        if op == "CREATE":
            jobs.validate_job_create(obj, store, self.config, p)
        elif old is not None:
            jobs.validate_job_update(old, obj, p)

    def _queue(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store, p: Problems) -> None:
        queues.check_shape(obj, p)
        if p:
            return
        validate_object_meta(obj, p)
        if p:
            return
        queues.validate_queue(op, obj, old, store, self.config, p)

    def _podgroup(self, op: str, obj: dict[str, Any], store: Store, p: Problems) -> None:
        podgroups.check_shape(obj, p)
        if p:
            return
        validate_object_meta(obj, p)
        podgroups.validate_podgroup(op, obj, store, p)

    @staticmethod
    def _crd_kind(obj: dict[str, Any], p: Problems, shape: _Check, schema: _Check, webhook: _Check | None) -> None:
        """A kind with a CRD schema and at most one validating webhook: types, then the schema's
        bounds with the object metadata, then the webhook (only on an object the schema accepts)."""
        shape(obj, p)
        if p:
            return
        validate_object_meta(obj, p)
        schema(obj, p)
        if not p and webhook is not None:
            webhook(obj, p)

    def _hypernode(self, obj: dict[str, Any], p: Problems) -> None:
        hypernodes.check_shape(obj, p)
        if p:
            return
        validate_object_meta(obj, p)
        hypernodes.validate_hypernode(obj, p)


def _as_scheduler_reads_it(obj: dict[str, Any], p: Problems) -> None:
    """A storage or resource object the API server's rules accept must also read as the
    scheduler reads it (the manifest reader: quantities, selectors, node affinity, modes)."""
    try:
        parse_object(obj, "")
    except ManifestError as e:
        text = str(e)
        head = text.split("): ", 1)[1] if "): " in text else text
        field, _, message = head.partition(": ")
        p.add(field, message)
