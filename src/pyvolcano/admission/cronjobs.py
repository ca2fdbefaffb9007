"""Admission of ``batch.volcano.sh/v1alpha1`` CronJobs (CREATE and UPDATE; no mutating webhook).

Three layers, in the API server's order:

* **the CRD's schema** (``config/crd/volcano/bases/batch.volcano.sh_cronjobs.yaml``): types
  (:func:`check_shape`), then the defaults (:func:`default_cronjob`: ``concurrencyPolicy``
  ``Allow``, ``suspend`` false, ``successfulJobsHistoryLimit`` 3, ``failedJobsHistoryLimit`` 1,
  and the embedded JobSpec's own), then the bounds (``schedule`` and ``jobTemplate`` required,
  the ``concurrencyPolicy`` enum, non-negative ``startingDeadlineSeconds`` and history limits,
  the embedded JobSpec's bounds);
* **the webhook** ``validatecronjob.volcano.sh`` (``pkg/webhooks/admission/cronjobs/validate``),
  the same rules on CREATE and UPDATE (:func:`validate_cronjob`): a schedule is required, may not
  contain ``TZ`` (the zone belongs in ``timeZone``) and must parse as ``cron.ParseStandard``
  parses it (:mod:`pyvolcano.api.cron`); ``timeZone``, when set, is non-empty, each ``/``-part
  matches ``[A-Za-z.\\-_0-9+]{1,14}`` and is not ``.``/``..``/``-…``, is not ``Local`` and loads;
  the name leaves room for the job-name suffix (at most 52 characters) and is a qualified name.

The webhook does not look inside ``jobTemplate``: a template whose jobs the job webhook would
refuse is admitted, and each job the controller creates from it is refused then. ``pyvolcano
validate`` warns about such a template (:func:`pyvolcano.admission.jobs.validate_job_create`
run on the job the controller would make).

Messages are upstream's texts; the schedule and time-zone ones are concatenated as upstream
concatenates them (``" unknown timeZone invalid timeZone"``, trimmed) and reported on
``spec.schedule`` / ``spec.timeZone``, the name's on ``metadata.name``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pyvolcano.admission import jobs
from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import qualified_name_errors
from pyvolcano.api.cron import ScheduleError, load_location, parse_standard

__all__ = ["CONCURRENCY_POLICIES", "MAX_NAME_LENGTH", "check_shape", "default_cronjob", "validate_cronjob",
           "validate_schema"]

CONCURRENCY_POLICIES: Final = ("Allow", "Forbid", "Replace")
MAX_NAME_LENGTH: Final = 52
"""63 less the job names' suffix (``-`` and the scheduled time in minutes since the epoch)."""
_TIME_ZONE_PART: Final = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def check_shape(cj: Mapping[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = cj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    spec = spec or {}
    for key in ("schedule", "timeZone", "concurrencyPolicy"):
        s.string(spec, key, f"spec.{key}")
    s.integer(spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds", int32=False)
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        s.integer(spec, key, f"spec.{key}")
    s.boolean(spec, "suspend", "spec.suspend")
    template = s.mapping(spec, "jobTemplate", "spec.jobTemplate")
    if template is not None:
        md = s.mapping(template, "metadata", "spec.jobTemplate.metadata")
        if md is not None:
            for key in ("labels", "annotations"):
                s.string_map(md, key, f"spec.jobTemplate.metadata.{key}")
        jobs.check_shape(template, p, path="spec.jobTemplate.spec", required=False)
    status = s.mapping(cj, "status", "status")
    if status is not None:
        s.mappings(status, "active", "status.active")
        for key in ("lastScheduleTime", "lastSuccessfulTime"):
            s.string(status, key, f"status.{key}")


def default_cronjob(cj: dict[str, Any]) -> None:
    """The CRD's defaults, written in place (the object has passed :func:`check_shape`)."""
    spec = cj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    template = spec.get("jobTemplate")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        jobs.default_job_spec_schema(template["spec"])


def validate_schema(cj: Mapping[str, Any], p: Problems) -> None:
    """The CRD's required fields, enum and bounds."""
    spec = sub(cj, "spec")
    for key in ("schedule", "jobTemplate"):
        if key not in spec:
            p.add(f"spec.{key}", "Required value")
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in CONCURRENCY_POLICIES:
        p.add("spec.concurrencyPolicy", f"Unsupported value: {quote(policy)}: supported values: "
                                        + ", ".join(quote(c) for c in CONCURRENCY_POLICIES))
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(key)
        if value is not None and value < 0:
            p.add(f"spec.{key}", f"Invalid value: {value}: must be greater than or equal to 0")
    template_spec = sub(sub(spec, "jobTemplate"), "spec")
    if template_spec:
        jobs.validate_job_spec_schema(template_spec, "spec.jobTemplate.spec", p)


def validate_cronjob(cj: Mapping[str, Any], p: Problems) -> None:
    """``validateCronJob``: the webhook's rules (the same on CREATE and UPDATE)."""
    spec = sub(cj, "spec")
    schedule = spec.get("schedule") or ""
    if not schedule:
        p.add("spec.schedule", "schedule is required, but got empty")
    elif "TZ" in schedule:
        p.add("spec.schedule", "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field")
    else:
        try:
            parse_standard(schedule)
        except ScheduleError:
            p.add("spec.schedule", "schedule is not a valid cron expression")
    zone = spec.get("timeZone")
    if zone is not None:
        msg = _time_zone_message(zone)
        if msg:
            p.add("spec.timeZone", msg)
    name = str(sub(cj, "metadata").get("name") or "")
    if len(name) > MAX_NAME_LENGTH:
        p.add("metadata.name", f"cronJob name must be no more than {MAX_NAME_LENGTH} characters to accommodate job "
                               "name suffix (max 63 total)")
    elif errs := qualified_name_errors(name):
        p.add("metadata.name", f"invalid cronJob name {quote(name)}: {'; '.join(errs)}")


def _time_zone_message(zone: str) -> str:
    if not zone:
        return "timeZone must be nil or non-empty string, got empty string"
    msg = ""
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            msg += " unknown timeZone"
    if zone.lower() == "local":
        msg += " timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"
    else:
        try:
            load_location(zone)
        except ScheduleError:
            msg += " invalid timeZone"
    return msg.strip()
