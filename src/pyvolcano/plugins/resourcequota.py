"""resourcequota plugin: keep PodGroups Pending while their namespace's quota cannot hold them
(upstream pkg/scheduler/plugins/resourcequota/resourcequota.go).

Design. Two callbacks, both gated by ``enableJobEnqueued``:

* JobEnqueueable: a PodGroup without ``minResources``, or in a namespace without any
  ResourceQuota, is permitted. Otherwise, for every quota of the namespace (in name order),
  the request is ``minResources`` masked to the resource names of the quota's
  ``status.hard``, and ``status.used`` + what earlier PodGroups of the namespace were admitted
  with this session + the request must not exceed ``status.hard`` on any of those names
  (quotav1 ``Mask`` / ``Add`` / ``LessThanOrEqual``, exact quantities). One quota short is a
  Reject: the PodGroup stays Pending, and an ``Unschedulable`` PodGroup event says which
  resources, with the request, the quota's used and its hard limit.
* JobEnqueued: a PodGroup every vote admitted adds its ``minResources`` to its namespace's
  pending usage, which the next votes of the session count. It starts empty each session.

Names are matched as written: ``cpu`` in ``minResources`` meets ``cpu`` in ``hard``, not
``requests.cpu``. PodGroups made by the controllers list both (``cpu`` and ``requests.cpu``),
as upstream's do. Quota scopes are not read (upstream: "resourceQuota scope not supported").

The last rejection of each job this session is kept (:meth:`ResourceQuotaPlugin.rejection`)
for the pending diagnosis (``Enqueue.ResourceQuotaExceeded``,
:meth:`ResourceQuotaPlugin.explain_enqueue`). Nothing else is registered, so the plugin costs
nothing outside enqueue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.api.job import JobInfo
from pyvolcano.api.quantity import parse_quantity
from pyvolcano.diagnosis.model import LimitFigure, PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "QuotaRejection", "ResourceQuotaPlugin", "format_amount", "new"]

NAME: Final = "resourcequota"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}")

Amounts = dict[str, Fraction]


@dataclass(frozen=True, slots=True)
class QuotaRejection:
    """Why one PodGroup was refused: the quota and, per exceeded resource name, the request,
    what the quota already counts (``status.used`` plus this session's earlier admissions) and
    its hard limit."""

    quota: str  # namespace/name
    exceeded: tuple[str, ...]
    requested: tuple[Fraction, ...]
    used: tuple[Fraction, ...]
    pending: tuple[Fraction, ...]
    hard: tuple[Fraction, ...]


def _amounts(rl: Mapping[str, Any] | None) -> Amounts:
    return {name: parse_quantity(q) for name, q in (rl or {}).items()}


def _add(a: Amounts, b: Amounts) -> Amounts:
    out = dict(a)
    for name, q in b.items():
        out[name] = out.get(name, Fraction(0)) + q
    return out


def format_amount(v: Fraction) -> str:
    """An exact quantity as written in a manifest: whole units, else milli-units, else decimal."""
    if v.denominator == 1:
        return str(v.numerator)
    milli = v * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return f"{float(v):g}"


def _show(names: tuple[str, ...], values: tuple[Fraction, ...]) -> str:
    """A ResourceList the way upstream's message prints it (a Go map, keys sorted)."""
    return "map[" + " ".join(f"{n}:{format_amount(v)}" for n, v in zip(names, values, strict=True)) + "]"


class ResourceQuotaPlugin:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        Arguments(arguments, keys=ARGUMENTS)
        self._rejections: dict[str, QuotaRejection] = {}

    def rejection(self, job_uid: str) -> QuotaRejection | None:
        """The quota that refused the job's PodGroup in this session's enqueue, if one did."""
        return self._rejections.get(job_uid)

    def explain_enqueue(self, ssn: Session, job: JobInfo) -> PluginBlock | None:
        """The pending diagnosis of a PodGroup this plugin kept Pending this session."""
        r = self._rejections.get(job.uid)
        if r is None:
            return None
        figures = tuple(LimitFigure(NAME, f"ResourceQuota {r.quota}", name, float(hard), float(used + pending),
                                    float(asked))
                        for name, asked, used, pending, hard in zip(r.exceeded, r.requested, r.used, r.pending,
                                                                     r.hard, strict=True))
        name, asked, used, pending, hard = r.exceeded[0], r.requested[0], r.used[0], r.pending[0], r.hard[0]
        left = max(hard - used - pending, Fraction(0))
        counted = f"{format_amount(used)} used" + (
            f" and {format_amount(pending)} taken by PodGroups admitted earlier this session" if pending else "")
        hint = (f"minResources ask {format_amount(asked)} {name} but ResourceQuota {r.quota} has {format_amount(left)} "
                f"left of its {format_amount(hard)} ({counted}); raise the quota's spec.hard on {name}, lower "
                f"minResources, or wait for pods of namespace {r.quota.split('/')[0]} to finish")
        message = (f"resource quota insufficient, requested: {_show(r.exceeded, r.requested)}, used: "
                   f"{_show(r.exceeded, r.used)}, limited: {_show(r.exceeded, r.hard)}")
        return PluginBlock(Reason.ENQUEUE_RESOURCE_QUOTA_EXCEEDED, message, hint, limits=figures)

    def on_session_open(self, ssn: Session) -> None:
        pending: dict[str, Amounts] = {}
        parsed: dict[str, list[tuple[str, Amounts, Amounts]]] = {}
        rejections = self._rejections = {}

        def quotas_of(namespace: str) -> list[tuple[str, Amounts, Amounts]] | None:
            quotas = ssn.resource_quotas.get(namespace)
            if quotas is None:
                return None
            got = parsed.get(namespace)
            if got is None:
                got = parsed[namespace] = [(q.key, _amounts(q.hard), _amounts(q.used))
                                           for _name, q in sorted(quotas.items())]
            return got

        def enqueueable(job: JobInfo) -> int:
            pg = job.podgroup
            if pg is None or pg.min_resources is None:
                return Vote.PERMIT
            quotas = quotas_of(pg.namespace)
            if quotas is None:
                return Vote.PERMIT
            request = _amounts(pg.min_resources)
            in_session = pending.get(pg.namespace, {})
            for key, hard, used in quotas:
                asked = {name: q for name, q in request.items() if name in hard}
                exceeded = tuple(sorted(name for name, q in asked.items()
                                        if used.get(name, 0) + in_session.get(name, 0) + q > hard[name]))
                if not exceeded:
                    continue
                rejection = QuotaRejection(
                    key, exceeded, tuple(asked[n] for n in exceeded), tuple(used.get(n, Fraction(0)) for n in exceeded),
                    tuple(in_session.get(n, Fraction(0)) for n in exceeded), tuple(hard[n] for n in exceeded))
                rejections[job.uid] = rejection
                msg = (f"resource quota insufficient, requested: {_show(exceeded, rejection.requested)}, "
                       f"used: {_show(exceeded, rejection.used)}, limited: {_show(exceeded, rejection.hard)}")
                ssn.podgroup_events.setdefault(job.uid, []).append(f"Normal Unschedulable {msg}")
                return Vote.REJECT
            return Vote.PERMIT

        def enqueued(job: JobInfo) -> None:
            pg = job.podgroup
            if pg is None or pg.min_resources is None or pg.namespace not in ssn.resource_quotas:
                return
            pending[pg.namespace] = _add(pending.get(pg.namespace, {}), _amounts(pg.min_resources))
            rejections.pop(job.uid, None)

        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_job_enqueued_fn(NAME, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(arguments: Mapping[str, Any]) -> ResourceQuotaPlugin:
    return ResourceQuotaPlugin(arguments)
