"""Admission of ``flow.volcano.sh/v1alpha1`` JobFlows and JobTemplates.

A **JobFlow** passes its CRD's schema (``config/crd/jobflow/bases/flow.volcano.sh_jobflows.yaml``:
every flow has a non-empty ``name``; ``jobRetainPolicy`` is ``retain`` or ``delete``; probe ports
0-65535, a TCP probe's port required, an HTTP probe's header with name and value; a flow's
``patch.jobSpec`` typed and bounded as every embedded JobSpec, with its defaults), then the
webhook ``validatejobflow.volcano.sh`` (``pkg/webhooks/admission/jobflows/validate``) on CREATE
and UPDATE: every ``dependsOn.targets`` entry names a flow of the same JobFlow and the flows form
a DAG (:func:`pyvolcano.api.jobflow.dag_problem`, with upstream's messages). Neither checks that
the JobTemplates exist: a flow whose template is missing waits, and its controller retries.

A **JobTemplate** has no webhook: its ``spec`` is a JobSpec under the CRD's schema only (types,
defaults, bounds, at least one task when ``tasks`` is given). Its jobs pass the job webhooks when
the JobFlow controller creates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission import jobs
from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.api.jobflow import dag_problem, flow_steps

__all__ = [
    "RETAIN_POLICIES",
    "check_jobflow_shape",
    "check_jobtemplate_shape",
    "default_jobflow",
    "default_jobtemplate",
    "validate_jobflow",
    "validate_jobflow_schema",
    "validate_jobtemplate_schema",
]

RETAIN_POLICIES: Final = ("retain", "delete")
_PORT_MAX: Final = 65535


# ----------------------------------------------------------------------------- JobFlow


def check_jobflow_shape(jf: Mapping[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = jf.get("spec")
    if spec is not None and not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    spec = spec or {}
    s.string(spec, "jobRetainPolicy", "spec.jobRetainPolicy")
    for i, flow in enumerate(s.mappings(spec, "flows", "spec.flows")):
        fp = f"spec.flows[{i}]"
        s.string(flow, "name", f"{fp}.name")
        deps = s.mapping(flow, "dependsOn", f"{fp}.dependsOn")
        if deps is not None:
            s.strings(deps, "targets", f"{fp}.dependsOn.targets")
            probe = s.mapping(deps, "probe", f"{fp}.dependsOn.probe")
            if probe is not None:
                _probe_shape(s, probe, f"{fp}.dependsOn.probe")
        patch = s.mapping(flow, "patch", f"{fp}.patch")
        if patch is not None:
            jobs.check_shape(patch, p, path=f"{fp}.patch.jobSpec", required=False)
    status = s.mapping(jf, "status", "status")
    if status is not None:
        state = s.mapping(status, "state", "status.state")
        if state is not None:
            s.string(state, "phase", "status.state.phase")


def _probe_shape(s: ShapeChecker, probe: Mapping[str, Any], path: str) -> None:
    for j, get in enumerate(s.mappings(probe, "httpGetList", f"{path}.httpGetList")):
        gp = f"{path}.httpGetList[{j}]"
        for key in ("taskName", "path"):
            s.string(get, key, f"{gp}.{key}")
        s.integer(get, "port", f"{gp}.port")
        header = s.mapping(get, "httpHeader", f"{gp}.httpHeader")
        if header is not None:
            s.string(header, "name", f"{gp}.httpHeader.name")
            s.string(header, "value", f"{gp}.httpHeader.value")
    for j, tcp in enumerate(s.mappings(probe, "tcpSocketList", f"{path}.tcpSocketList")):
        s.string(tcp, "taskName", f"{path}.tcpSocketList[{j}].taskName")
        s.integer(tcp, "port", f"{path}.tcpSocketList[{j}].port")
    for j, ts in enumerate(s.mappings(probe, "taskStatusList", f"{path}.taskStatusList")):
        s.string(ts, "taskName", f"{path}.taskStatusList[{j}].taskName")
        s.string(ts, "phase", f"{path}.taskStatusList[{j}].phase")


def default_jobflow(jf: dict[str, Any]) -> None:
    """The CRD's defaults: those of each flow's ``patch.jobSpec``."""
    for flow in sub(jf, "spec").get("flows") or []:
        patch = flow.get("patch") if isinstance(flow, dict) else None
        if isinstance(patch, dict) and isinstance(patch.get("jobSpec"), dict):
            jobs.default_job_spec_schema(patch["jobSpec"])


def validate_jobflow_schema(jf: Mapping[str, Any], p: Problems) -> None:
    spec = sub(jf, "spec")
    policy = spec.get("jobRetainPolicy")
    if policy is not None and policy not in RETAIN_POLICIES:
        p.add("spec.jobRetainPolicy", f"Unsupported value: {quote(policy)}: supported values: "
                                      + ", ".join(quote(r) for r in RETAIN_POLICIES))
    for i, flow in enumerate(f for f in spec.get("flows") or [] if isinstance(f, Mapping)):
        fp = f"spec.flows[{i}]"
        if "name" not in flow:
            p.add(f"{fp}.name", "Required value")
        elif not flow["name"]:
            p.add(f"{fp}.name", 'Invalid value: "": should be at least 1 chars long')
        probe = sub(sub(flow, "dependsOn"), "probe")
        for key in ("httpGetList", "tcpSocketList", "taskStatusList"):
            for j, item in enumerate(x for x in probe.get(key) or [] if isinstance(x, Mapping)):
                _probe_item_bounds(key, item, f"{fp}.dependsOn.probe.{key}[{j}]", p)
        job_spec = sub(sub(flow, "patch"), "jobSpec")
        if job_spec:
            jobs.validate_job_spec_schema(job_spec, f"{fp}.patch.jobSpec", p)


def _probe_item_bounds(key: str, item: Mapping[str, Any], path: str, p: Problems) -> None:
    port = item.get("port")
    if key == "tcpSocketList" and port is None:
        p.add(f"{path}.port", "Required value")
    if port is not None and not 0 <= port <= _PORT_MAX:
        p.add(f"{path}.port", f"Invalid value: {port}: must be between 0 and {_PORT_MAX}")
    if key == "httpGetList" and isinstance(item.get("httpHeader"), Mapping):
        for field in ("name", "value"):
            if field not in item["httpHeader"]:
                p.add(f"{path}.httpHeader.{field}", "Required value")
    limits = {"taskName": 253, "phase": 63}
    for field, most in limits.items():
        value = item.get(field)
        if isinstance(value, str) and len(value) > most:
            p.add(f"{path}.{field}", f"Too long: may not be more than {most} bytes")


def validate_jobflow(jf: Mapping[str, Any], p: Problems) -> None:
    """``validateJobFlowDAG``: the webhook's rule (the same on CREATE and UPDATE)."""
    steps = flow_steps(jf)
    problem = dag_problem(steps)
    if problem is None:
        return
    name, message = problem
    flows = sub(jf, "spec").get("flows") or []
    index = max((i for i, f in enumerate(flows) if isinstance(f, Mapping) and f.get("name") == name), default=0)
    p.add(f"spec.flows[{index}].dependsOn.targets", message)


# ----------------------------------------------------------------------------- JobTemplate


def check_jobtemplate_shape(jt: Mapping[str, Any], p: Problems) -> None:
    jobs.check_shape(jt, p, path="spec", required=False)
    s = ShapeChecker(p)
    status = s.mapping(jt, "status", "status")
    if status is not None:
        s.strings(status, "jobDependsOnList", "status.jobDependsOnList")


def default_jobtemplate(jt: dict[str, Any]) -> None:
    if isinstance(jt.get("spec"), dict):
        jobs.default_job_spec_schema(jt["spec"])


def validate_jobtemplate_schema(jt: Mapping[str, Any], p: Problems) -> None:
    spec = sub(jt, "spec")
    if spec:
        jobs.validate_job_spec_schema(spec, "spec", p, min_tasks=1)
