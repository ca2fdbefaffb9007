"""sla plugin: service-level waiting time for jobs (upstream pkg/scheduler/plugins/sla/sla.go).

Design. A job's waiting time is its PodGroup annotation (``volcano.sh/sla-waiting-time``,
else ``sla-waiting-time``; parsed into :attr:`JobInfo.waiting_time`), else the plugin
argument ``sla-waiting-time`` (a Go duration such as ``"1h2m3s"``), else none. Its SLA
deadline is ``creation time + waiting time``.

* JobOrder: jobs with a waiting time come before jobs without one; among those, the earlier
  deadline first; otherwise no opinion.
* JobEnqueueable and JobPipelined: abstain until the deadline has passed
  (``ssn.now − creation ≥ waiting time``), then permit. A permit ends the vote for its
  tier, so an overdue job is admitted / counted as pipelined without the quota checks of
  plugins in later tiers; a reject from the same or an earlier tier still wins.

Invariants: the clock is ``ssn.now`` (never the wall clock); the global waiting time is
parsed once in the constructor, so a malformed duration fails before any session runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.job import JobInfo
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.interfaces import Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "JOB_WAITING_TIME", "NAME", "Sla", "new"]

logger = logging.getLogger(__name__)

NAME = "sla"
JOB_WAITING_TIME = "sla-waiting-time"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (honoured(JOB_WAITING_TIME),))


class Sla:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.job_waiting_time = _global_waiting_time(Arguments(arguments, keys=ARGUMENTS).raw)

    def waiting_time(self, job: JobInfo) -> float | None:
        """The job's own waiting time, else the global one (seconds), else ``None``."""
        return job.waiting_time if job.waiting_time is not None else self.job_waiting_time

    def on_session_open(self, ssn: Session) -> None:
        def job_order(left: JobInfo, right: JobInfo) -> int:
            lwait, rwait = self.waiting_time(left), self.waiting_time(right)
            if lwait is None:
                return 0 if rwait is None else 1
            if rwait is None:
                return -1
            ldeadline = left.creation_timestamp + lwait
            rdeadline = right.creation_timestamp + rwait
            if ldeadline < rdeadline:
                return -1
            if ldeadline > rdeadline:
                return 1
            return 0

        def overdue(job: JobInfo) -> int:
            wait = self.waiting_time(job)
            if wait is None or ssn.now - job.creation_timestamp < wait:
                return Vote.ABSTAIN
            return Vote.PERMIT

        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_enqueueable_fn(NAME, overdue)
        ssn.add_job_pipelined_fn(NAME, overdue)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _global_waiting_time(arguments: Mapping[str, Any]) -> float | None:
    """The ``sla-waiting-time`` argument in seconds; ``None`` when absent or not positive.

    Upstream logs and ignores a value that is not a duration string; here that is an
    :class:`ArgumentError` (a configuration mistake should not silently disable the SLA).
    """
    raw = arguments.get(JOB_WAITING_TIME)
    if raw is None:
        return None

    def fail() -> ArgumentError:
        return ArgumentError.bad(f"plugin {NAME}", JOB_WAITING_TIME, f"got {raw!r} ({type(raw).__name__})",
                                 "a Go duration string such as '3m' or '1h30m'")

    if not isinstance(raw, str):
        raise fail()
    try:
        seconds = parse_duration_strict(raw)
    except DurationError:
        raise fail() from None
    if seconds <= 0:
        logger.warning("plugin %s: %s %r is not positive; ignoring it", NAME, JOB_WAITING_TIME, raw)
        return None
    return seconds


def new(arguments: Mapping[str, Any]) -> Sla:
    return Sla(arguments)
