"""The admission services: upstream's webhook paths, what each one admits, and how its answer reads.

Upstream (``pkg/webhooks/router``) registers one ``AdmissionService`` per path and serves the
ones named by ``--enabled-admission``. :data:`SERVICES` is that registry for the kinds
pyvolcano admits; each entry carries the rule its webhook configuration registers (group,
version, resource, operations), upstream's webhook name, and how upstream words a rejection:

* ``/jobs/validate`` on CREATE concatenates ``" <problem>;"`` fragments (``validateJobCreate``);
  on UPDATE it returns the first problem;
* ``/queues/validate`` returns a ``field.ErrorList`` aggregate (paths under ``requestBody.``;
  ``[a, b]`` when there are several) or the first of its plain errors;
* ``/podgroups/validate`` joins its problems with ``"; "``;
* ``/hypernodes/validate`` returns a ``field.ErrorList`` aggregate, as queues do but with the
  paths as they are;
* ``/cronjobs/validate`` joins its problems with ``"; "`` (``validateCronJob``);
* every other path returns its first problem.

A problem whose message is a Kubernetes ``field.Error`` body (``Invalid value: …``, ``Required
value``, …) is printed after its field path, as ``field.Error.Error()`` does; a Volcano message is
printed alone, as upstream's ``fmt.Errorf`` texts are.

The object is evaluated by :class:`~pyvolcano.admission.VolcanoAdmission` (its ``mutate`` half
for mutating paths, its ``validate`` half for validating ones) with lookups (queues, namespaces,
podgroups) in the :class:`~pyvolcano.store.base.Store` the router is given. A mutation's answer is
the JSON Patch from the request's object to the defaulted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store.base import Forbidden, Invalid, Store, clone
from pyvolcano.webhooks import jsonpatch
from pyvolcano.webhooks.review import AdmissionRequest, AdmissionResponse

__all__ = [
    "SERVICES",
    "AdmissionService",
    "Router",
    "enabled_services",
]

_FIELD_ERROR_BODIES: Final = ("Required value", "Invalid value:", "Unsupported value:", "Duplicate value:",
                              "Not found:", "Forbidden:", "Too long:", "Too many:", "Internal error:")

Problem = tuple[str, str]
Render = Callable[[str, Sequence[Problem]], str]


def _item(problem: Problem, prefix: str = "") -> str:
    path, message = problem
    if path and message.startswith(_FIELD_ERROR_BODIES):
        return f"{prefix}{path}: {message}"
    return message


def _render_first(op: str, problems: Sequence[Problem]) -> str:
    return _item(problems[0])


def _render_job(op: str, problems: Sequence[Problem]) -> str:
    if op == "CREATE":
        return " ".join(f"{_item(p)};" for p in problems)
    return _item(problems[0])


def _render_queue(op: str, problems: Sequence[Problem]) -> str:
    items = [_item(p, "requestBody.") for p in problems]
    return items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"


def _render_aggregate(op: str, problems: Sequence[Problem]) -> str:
    items = [_item(p) for p in problems]
    return items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"


def _render_podgroup(op: str, problems: Sequence[Problem]) -> str:
    return "; ".join(_item(p) for p in problems)


@dataclass(frozen=True)
class AdmissionService:
    """One webhook path and the rule its webhook configuration registers."""

    path: str
    webhook_name: str
    mutating: bool
    kind: str
    group: str
    version: str
    resource: str
    operations: tuple[str, ...]
    unsupported: str  # upstream's message for any other operation; ``{op}`` is replaced
    render: Render = _render_first

    @property
    def configuration_name(self) -> str:
        """Upstream's name for this path's webhook configuration (``volcano-admission-service-jobs-mutate``)."""
        return "volcano-admission-service" + self.path.replace("/", "-")


_JOB: Final = ("Job", "batch.volcano.sh", "v1alpha1", "jobs")
_QUEUE: Final = ("Queue", "scheduling.volcano.sh", "v1beta1", "queues")
_PODGROUP: Final = ("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups")
_POD: Final = ("Pod", "", "v1", "pods")
_HYPERNODE: Final = ("HyperNode", "topology.volcano.sh", "v1alpha1", "hypernodes")
_CRONJOB: Final = ("CronJob", "batch.volcano.sh", "v1alpha1", "cronjobs")
_JOBFLOW: Final = ("JobFlow", "flow.volcano.sh", "v1alpha1", "jobflows")


def _service(path: str, name: str, mutating: bool, target: tuple[str, str, str, str], ops: tuple[str, ...],
             unsupported: str, render: Render = _render_first) -> AdmissionService:
    kind, group, version, resource = target
    return AdmissionService(path, name, mutating, kind, group, version, resource, ops, unsupported, render)


SERVICES: Final[dict[str, AdmissionService]] = {s.path: s for s in (
    _service("/jobs/mutate", "mutatejob.volcano.sh", True, _JOB, ("CREATE",), "expect operation to be 'CREATE' "),
    _service("/jobs/validate", "validatejob.volcano.sh", False, _JOB, ("CREATE", "UPDATE"),
             "expect operation to be 'CREATE' or 'UPDATE'", _render_job),
    _service("/queues/mutate", "mutatequeue.volcano.sh", True, _QUEUE, ("CREATE",),
             "invalid operation `{op}`, expect operation to be `CREATE`"),
    _service("/queues/validate", "validatequeue.volcano.sh", False, _QUEUE, ("CREATE", "UPDATE", "DELETE"),
             "invalid operation `{op}`, expect operation to be `CREATE`, `UPDATE` or `DELETE`", _render_queue),
    _service("/podgroups/mutate", "mutatepodgroup.volcano.sh", True, _PODGROUP, ("CREATE",),
             "invalid operation `{op}`, expect operation to be `CREATE`"),
    _service("/podgroups/validate", "validatepodgroup.volcano.sh", False, _PODGROUP, ("CREATE",),
             "unsupported operation {op}", _render_podgroup),
    _service("/pods/mutate", "mutatepod.volcano.sh", True, _POD, ("CREATE",), "expect operation to be 'CREATE' "),
    _service("/pods/validate", "validatepod.volcano.sh", False, _POD, ("CREATE",),
             "expect operation to be 'CREATE'"),
    _service("/hypernodes/validate", "validatehypernode.volcano.sh", False, _HYPERNODE, ("CREATE", "UPDATE"),
             "expect operation to be 'CREATE' or 'UPDATE'", _render_aggregate),
    _service("/cronjobs/validate", "validatecronjob.volcano.sh", False, _CRONJOB, ("CREATE", "UPDATE"),
             "expect operation to be 'CREATE' or 'UPDATE'", _render_podgroup),
    _service("/jobflows/validate", "validatejobflow.volcano.sh", False, _JOBFLOW, ("CREATE", "UPDATE"),
             "expect operation to be 'CREATE' or 'UPDATE'"),
)}
"""Every path pyvolcano serves: all of upstream's."""


def enabled_services(enabled: str) -> list[AdmissionService]:
    """The services ``--enabled-admission`` names (comma-separated paths), in its order.

    Raises ValueError with upstream's wording for a path that is not registered."""
    out: list[AdmissionService] = []
    for raw in enabled.split(","):
        path = raw.strip()
        if not path:
            continue
        service = SERVICES.get(path)
        if service is None:
            raise ValueError(f"enabled admission {path} not found on the admission registered map "
                             f"(known: {', '.join(SERVICES)})")
        if service in out:
            raise ValueError(f"duplicated admission service for {path}")
        out.append(service)
    return out


class Router:
    """Answers AdmissionReview requests for a set of services, with lookups in ``store``."""

    def __init__(self, services: Sequence[AdmissionService], admission: VolcanoAdmission, store: Store):
        self.services: dict[str, AdmissionService] = {s.path: s for s in services}
        self.admission = admission
        self.store = store

    def admit(self, service: AdmissionService, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in service.operations:
            return AdmissionResponse.deny(service.unsupported.format(op=request.operation))
        expected = (service.group, service.version, service.resource)
        if request.resource != expected:
            return AdmissionResponse.deny("expect resource to be {" + " ".join(expected) + "}")
        if service.mutating:
            return self._mutate(service, request)
        return self._validate(service, request)

    def _subject(self, service: AdmissionService, obj: dict[str, Any] | None,
                 request: AdmissionRequest) -> dict[str, Any]:
        """A copy of ``obj`` with ``kind`` and ``metadata.namespace`` filled from the request
        when absent (upstream does the same for pods), so that lookups see the right namespace."""
        out = clone(obj) if obj is not None else {"metadata": {"name": request.name}}
        out.setdefault("kind", service.kind)
        md = out.get("metadata")
        if isinstance(md, dict) and request.namespace and not md.get("namespace"):
            md["namespace"] = request.namespace
        return out

    def _mutate(self, service: AdmissionService, request: AdmissionRequest) -> AdmissionResponse:
        if request.object is None:
            return AdmissionResponse.deny("the request has no object to mutate")
        original = self._subject(service, request.object, request)
        mutated = clone(original)
        try:
            self.admission.mutate(request.operation, mutated, self.store)
        except Invalid as e:
            return AdmissionResponse.deny(service.render(request.operation, e.errors))
        return AdmissionResponse(allowed=True, patch=jsonpatch.diff(original, mutated))

    def _validate(self, service: AdmissionService, request: AdmissionRequest) -> AdmissionResponse:
        op = request.operation
        if op == "DELETE":
            obj = self._subject(service, request.old_object, request)
        elif request.object is None:
            return AdmissionResponse.deny("the request has no object to validate")
        else:
            obj = self._subject(service, request.object, request)
        old = self._subject(service, request.old_object, request) if op == "UPDATE" else None
        try:
            self.admission.validate(op, obj, old, self.store)
        except Invalid as e:
            return AdmissionResponse.deny(service.render(op, e.errors))
        except Forbidden as e:
            return AdmissionResponse.deny(e.message)
        return AdmissionResponse(allowed=True)
