"""ResourceQuotas in a simulation: kube-controller-manager's resource quota controller and the API
server's ResourceQuota admission plugin, as far as a scheduler simulation needs them.

Design. One :class:`ResourceQuotas` keeps, for every namespace that has a ResourceQuota, the
quota usage of each of its pods (the quota pod evaluator's, :func:`pod_usage`: ``pods``,
``count/pods``, ``cpu`` / ``requests.cpu``, ``memory`` / ``requests.memory``, ``limits.*``,
``requests.<extended>``, ...; a Succeeded or Failed pod counts only as an object), updated from
the store's watch events, so each event costs O(1).

* The **controller** (:meth:`ResourceQuotas.on_event` / :meth:`ResourceQuotas.run`) writes
  each quota's ``status``: ``hard`` = ``spec.hard`` and ``used`` = the sum of its namespace's
  pods' usage over the names of ``hard`` (a name no pod uses counts 0), whenever it changes. The
  resourcequota plugin reads exactly this status.
* The **admission** (:class:`QuotaAdmission`, around the store's other admission) refuses a
  pod whose creation would take a quota of its namespace over ``status.hard``, as the API
  server does (``exceeded quota: <name>, requested: ..., used: ..., limited: ...``), and one
  whose quota has no status yet (``status unknown for quota``). It counts what the controller
  counts plus the pods it admitted whose creation the controller has not seen yet, as the API
  server charges ``status.used`` at admission, so pods created in one burst cannot overrun a
  quota.

Only pods are counted. ``count/<resource>`` names of other kinds and quota scopes are not
modelled (they count 0 and every pod, respectively): docs/differences.md.

Invariants: nothing is written for a namespace without a quota, and a simulation without
ResourceQuotas does no work here beyond one dictionary lookup per event.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from pyvolcano.controllers._resources import ResourceList, format_quantity, parse_list, pod_usage
from pyvolcano.store.base import Admission, Forbidden, NotFound, Store, StoreError, WatchEvent, clone

__all__ = ["QuotaAdmission", "ResourceQuotas"]

logger = logging.getLogger(__name__)

_ZERO = (Fraction(0), "DecimalSI")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}


def _hard(quota: Mapping[str, Any]) -> ResourceList:
    spec = quota.get("spec")
    return parse_list((spec or {}).get("hard") if isinstance(spec, Mapping) else None)


def _add(total: dict[str, Fraction], usage: ResourceList, sign: int) -> None:
    for name, (amount, _fmt) in usage.items():
        total[name] = total.get(name, Fraction(0)) + sign * amount


def _show(names: list[str], values: Mapping[str, Fraction], formats: Mapping[str, tuple[Fraction, str]]) -> str:
    return ",".join(f"{n}={format_quantity((values.get(n, Fraction(0)), formats.get(n, _ZERO)[1]))}" for n in names)


class ResourceQuotas:
    """The quota controller and the state the admission shares with it (module docstring)."""

    name = "resourcequota-controller"
    watches = frozenset({"Pod", "ResourceQuota"})

    def __init__(self, store: Store | None = None):
        # The store is given once it exists: it is built with this object's admission.
        self.store = store
        self._quotas: dict[str, dict[str, ResourceList]] = {}  # namespace -> quota -> spec.hard
        self._pods: dict[str, dict[str, ResourceList]] = {}  # namespace -> pod uid -> usage
        self._totals: dict[str, dict[str, Fraction]] = {}  # namespace -> Σ usage
        # namespace -> pod name -> usage: pods admitted whose creation the totals do not count yet
        self._charged: dict[str, dict[str, ResourceList]] = {}
        self._dirty: set[str] = set()

    # ------------------------------------------------------------------ controller
    def on_event(self, ev: WatchEvent) -> None:
        kind = ev.kind
        if kind == "Pod":
            ns = str(_meta(ev.object).get("namespace") or "default")
            pods = self._pods.get(ns)
            if pods is not None:
                self._count_pod(ns, pods, ev)
        elif kind == "ResourceQuota":
            md = _meta(ev.object)
            ns, name = str(md.get("namespace") or "default"), str(md.get("name") or "")
            if ev.type == "DELETED":
                quotas = self._quotas.get(ns)
                if quotas is not None:
                    quotas.pop(name, None)
                return
            if ns not in self._quotas:
                self._start_counting(ns)
            self._quotas[ns][name] = _hard(ev.object)
            self._dirty.add(ns)

    def _start_counting(self, ns: str) -> None:
        assert self.store is not None
        self._quotas[ns] = {}
        pods = self._pods[ns] = {}
        total = self._totals[ns] = {}
        for pod in self.store.list("Pod", ns):
            usage = pod_usage(pod)
            pods[str(_meta(pod).get("uid") or "")] = usage
            _add(total, usage, +1)

    def _count_pod(self, ns: str, pods: dict[str, ResourceList], ev: WatchEvent) -> None:
        md = _meta(ev.object)
        uid = str(md.get("uid") or "")
        total = self._totals[ns]
        old = pods.pop(uid, None)
        if old is not None:
            _add(total, old, -1)
        if ev.type != "DELETED":
            usage = pod_usage(ev.object)
            pods[uid] = usage
            _add(total, usage, +1)
        if ev.type == "ADDED":
            charged = self._charged.get(ns)
            if charged is not None:
                charged.pop(str(md.get("name") or ""), None)  # counted from now on
        if old != pods.get(uid):
            self._dirty.add(ns)

    def run(self, now: float) -> float | None:
        dirty, self._dirty = self._dirty, set()
        for ns in sorted(dirty):
            for name in sorted(self._quotas.get(ns, {})):
                self._write_status(ns, name)
        return None

    def _write_status(self, ns: str, name: str) -> None:
        assert self.store is not None
        hard = self._quotas[ns][name]
        total = self._totals.get(ns, {})
        status = {"hard": {n: format_quantity(q) for n, q in sorted(hard.items())},
                  "used": {n: format_quantity((total.get(n, Fraction(0)), hard[n][1])) for n in sorted(hard)}}
        try:
            quota = self.store.get("ResourceQuota", ns, name)
            if quota.get("status") == status:
                return
            self.store.update_status({**quota, "status": status})
        except NotFound:
            return
        except StoreError as e:  # written again at the next change
            logger.warning("resource quota %s/%s: status not written: %s", ns, name, e)
            self._dirty.add(ns)

    # ------------------------------------------------------------------ admission
    def check_pod(self, pod: Mapping[str, Any], store: Store) -> None:
        """The ResourceQuota admission of one pod creation; raises :class:`Forbidden`."""
        md = _meta(pod)
        ns = str(md.get("namespace") or "default")
        if ns not in self._quotas:
            return
        usage = pod_usage(pod)
        key = f"{ns}/{md.get('name') or md.get('generateName') or ''}"
        # What the namespace's quotas count now: every pod the totals hold, plus the ones admitted
        # whose creation they do not hold yet (the API server counts them in status.used at once).
        counted = dict(self._totals.get(ns, {}))
        for pending in self._charged.get(ns, {}).values():
            _add(counted, pending, +1)
        for quota in store.list("ResourceQuota", ns):
            name = str(_meta(quota).get("name") or "")
            raw_status = quota.get("status")
            status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
            hard = parse_list(status.get("hard"))
            used = parse_list(status.get("used"))
            asked = {n: usage[n] for n in usage if n in hard}
            if not asked:
                continue
            if any(n not in used for n in asked):
                raise Forbidden("Pod", key, f"status unknown for quota: {name}, resources: {','.join(sorted(asked))}")
            exceeded = sorted(n for n, (q, _f) in asked.items() if counted.get(n, Fraction(0)) + q > hard[n][0])
            if exceeded:
                requested = {n: asked[n][0] for n in exceeded}
                limited = {n: hard[n][0] for n in exceeded}
                raise Forbidden("Pod", key, f"exceeded quota: {name}, requested: {_show(exceeded, requested, asked)}, "
                                            f"used: {_show(exceeded, counted, hard)}, "
                                            f"limited: {_show(exceeded, limited, hard)}")
        self._charged.setdefault(ns, {})[str(md.get("name") or "")] = usage


class QuotaAdmission:
    """The store's admission followed by the ResourceQuota admission of pod creations."""

    def __init__(self, inner: Admission, quotas: ResourceQuotas):
        self.inner = inner
        self.quotas = quotas

    def admit(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store) -> dict[str, Any]:
        out = self.inner.admit(op, obj, old, store)
        if op == "CREATE" and out.get("kind") == "Pod":
            self.quotas.check_pod(clone(out), store)
        return out
