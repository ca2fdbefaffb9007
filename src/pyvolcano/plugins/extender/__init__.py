"""extender plugin: scheduling decisions delegated to an HTTP service (upstream ``pkg/scheduler/plugins/extender``).

Arguments (upstream's keys): ``extender.urlPrefix`` (the service's base URL),
``extender.httpTimeout`` (a Go duration, default ``1s``), one verb per extension point
(``extender.onSessionOpenVerb``, ``onSessionCloseVerb``, ``predicateVerb``, ``prioritizeVerb``,
``preemptableVerb``, ``reclaimableVerb``, ``queueOverusedVerb``, ``jobEnqueueableVerb``,
``jobEnqueuedVerb``, ``jobReadyVerb``, ``allocateFuncVerb``, ``deallocateFuncVerb``; a callback
is registered only when its verb is set), ``extender.ignorable`` (default false: what a failed
call means, below) and ``extender.managedResources`` (a list of resource names: then only pods
requesting or limiting one of them, in a container or an init container, are sent to the
predicate, prioritize, preemptable, reclaimable and allocate/deallocate verbs).

Every call is ``POST <urlPrefix>/<verb>`` with upstream's JSON body (:mod:`.wire`); the answers
are upstream's response types:

* ``predicate`` ``{"task", "node"}`` → ``{"status": <message>, "code": <n>}``: an empty message
  passes; a message fails the node with that code (0 is read as ``Error``, 3
  ``UnschedulableAndUnresolvable``...). Nodes are asked in parallel, 16 at a time.
* ``prioritize`` ``{"task", "nodes"}`` → ``{"nodeScore": {node: score}, "errorMessage"}``.
* ``preemptable`` / ``reclaimable`` ``{"evictor", "evictees"}`` → ``{"status": <vote>,
  "victims": [tasks]}`` (victims matched by ``UID``).
* ``jobEnqueueable`` ``{"job"}`` → ``{"status": <vote>}``; ``jobEnqueued`` ``{"job"}`` → ``{}``;
  ``jobReady`` ``{"job"}`` → ``{"status": <bool>}``; ``queueOverused`` ``{"queue"}`` →
  ``{"overused": <bool>}``; ``allocateFunc`` / ``deallocateFunc`` ``{"task"}`` →
  ``{"errorMessage"}`` (a message makes the allocation fail); ``onSessionOpen`` gets the
  session's jobs, nodes and queues, ``onSessionClose`` ``{}``.

A failed call (no answer, a status other than 200, a body that does not decode): the predicate
passes when ``ignorable`` and fails the node (code ``Error``) otherwise; preemptable and
reclaimable permit with no victims / reject; jobEnqueueable permits / rejects; queueOverused
and jobReady answer ``not ignorable``; allocate and deallocate fail the event unless
ignorable; a failed ``onSessionOpen`` that is not ignorable leaves the plugin out of the
session (no callback is registered), as upstream. A failed prioritize that is not ignorable
scores every node 0 (upstream then places nothing for that pod in that attempt;
docs/differences.md). Calls have the timeout, and an extender that gives no answer at all is
not asked again until the next session (:mod:`.client`), so it delays a session by at most
about one timeout.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.job import JobInfo
from pyvolcano.api.objects import Container
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.diagnosis.model import PluginBlock, Reason
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.interfaces import Event, EventHandler, Vote
from pyvolcano.framework.session_plugins import NodeFailures
from pyvolcano.plugins.extender import wire
from pyvolcano.plugins.extender.client import ExtenderClient, ExtenderError

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "VERBS", "Extender", "new"]

NAME: Final = "extender"
URL_PREFIX: Final = "extender.urlPrefix"
HTTP_TIMEOUT: Final = "extender.httpTimeout"
IGNORABLE: Final = "extender.ignorable"
MANAGED_RESOURCES: Final = "extender.managedResources"
VERBS: Final = ("onSessionOpen", "onSessionClose", "predicate", "prioritize", "preemptable", "reclaimable",
                "queueOverused", "jobEnqueueable", "jobEnqueued", "jobReady", "allocateFunc", "deallocateFunc")
PARALLELISM: Final = 16
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(URL_PREFIX), honoured(HTTP_TIMEOUT), *(honoured(f"extender.{verb}Verb") for verb in VERBS),
    honoured(IGNORABLE), honoured(MANAGED_RESOURCES)))


def _owner() -> str:
    return f"plugin {NAME}"


class Extender:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        raw = dict(arguments or {})
        args = Arguments(raw, keys=ARGUMENTS)
        self.url_prefix = args.get_str(URL_PREFIX, "")
        self.verbs = {verb: args.get_str(f"extender.{verb}Verb", "") for verb in VERBS}
        self.ignorable = args.get_bool(IGNORABLE, False)
        timeout = args.get_duration_seconds(HTTP_TIMEOUT, 1.0)
        self.timeout = 1.0 if timeout is None or timeout <= 0 else timeout
        managed = raw.get(MANAGED_RESOURCES)
        if managed is not None and (not isinstance(managed, list) or not all(isinstance(m, str) for m in managed)):
            raise ArgumentError.bad(_owner(), MANAGED_RESOURCES, f"got {managed!r}", "a list of resource names")
        self.managed = frozenset(managed or ())
        if any(self.verbs.values()) and not self.url_prefix.startswith(("http://", "https://")):
            raise ArgumentError.bad(_owner(), URL_PREFIX, f"got {self.url_prefix!r}",
                                    "the extender's base URL, e.g. http://127.0.0.1:8888")
        self.client = ExtenderClient(self.url_prefix, self.timeout)
        # The last refusal per (task, node) this session, for the pending diagnosis.
        self.refusals: dict[tuple[str, str], str] = {}
        self.enqueue_rejections: dict[str, str] = {}

    # ------------------------------------------------------------------ helpers
    def interested(self, task: TaskInfo) -> bool:
        """``IsInterested``: no managed resources, or the pod names one in requests or limits."""
        if not self.managed:
            return True
        return _names(task.pod.containers, self.managed) or _names(task.pod.init_containers, self.managed)

    def _call(self, verb: str, body: Any) -> Any:
        return self.client.send(self.verbs[verb], body)

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.client.reset()
        self.refusals = {}
        self.enqueue_rejections = {}
        verbs = self.verbs
        if verbs["onSessionOpen"]:
            try:
                self.client.send(verbs["onSessionOpen"], wire.session_open(ssn), want_result=False)
            except ExtenderError:
                if not self.ignorable:
                    return
        node_list = ssn.node_list
        if verbs["predicate"]:
            def predicate(task: TaskInfo, idx: np.ndarray) -> NodeFailures:
                if not self.interested(task):
                    return []
                rows = idx.tolist()
                body_task = wire.task(task)
                verdicts = self._in_parallel(lambda i: self._predicate(body_task, node_list[i]), rows)
                groups: dict[Status, list[int]] = {}
                for pos, st in enumerate(verdicts):
                    if st is not None:
                        groups.setdefault(st, []).append(pos)
                        self.refusals[(task.uid, node_list[rows[pos]].name)] = st.reason
                out: NodeFailures = []
                for st, positions in groups.items():
                    mask = np.zeros(len(idx), dtype=bool)
                    mask[positions] = True
                    out.append((st, mask))
                return out

            ssn.add_predicate_fn(NAME, predicate, cache_key=_no_key)
        if verbs["prioritize"]:
            def prioritize(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
                scores = np.zeros(len(idx), dtype=np.float64)
                if not self.interested(task):
                    return scores
                nodes = [node_list[i] for i in idx.tolist()]
                try:
                    resp = self._call("prioritize", {"task": wire.task(task), "nodes": [wire.node(n) for n in nodes]})
                except ExtenderError:
                    return scores
                node_score = resp.get("nodeScore") if isinstance(resp, dict) else None
                if not isinstance(node_score, dict) or (isinstance(resp, dict) and resp.get("errorMessage")):
                    return scores
                for pos, n in enumerate(nodes):
                    value = node_score.get(n.name)
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        scores[pos] = float(value)
                return scores

            ssn.add_node_order_fn(NAME, prioritize)
        for verb, add in (("preemptable", ssn.add_preemptable_fn), ("reclaimable", ssn.add_reclaimable_fn)):
            if verbs[verb]:
                add(NAME, self._victims_fn(verb))
        if verbs["jobEnqueueable"]:
            def enqueueable(job: JobInfo) -> int:
                try:
                    resp = self._call("jobEnqueueable", {"job": wire.job(job)})
                except ExtenderError as e:
                    self.enqueue_rejections[job.uid] = str(e)
                    return Vote.PERMIT if self.ignorable else Vote.REJECT
                vote = _int(resp.get("status") if isinstance(resp, dict) else None)
                if vote < 0:
                    self.enqueue_rejections[job.uid] = "the extender's jobEnqueueable rejected it"
                return vote

            ssn.add_job_enqueueable_fn(NAME, enqueueable)
        if verbs["jobEnqueued"]:
            def enqueued(job: JobInfo) -> None:
                with contextlib.suppress(ExtenderError):  # upstream only logs it
                    self._call("jobEnqueued", {"job": wire.job(job)})

            ssn.add_job_enqueued_fn(NAME, enqueued)
        if verbs["queueOverused"]:
            def overused(queue: QueueInfo) -> bool:
                try:
                    resp = self._call("queueOverused", {"queue": wire.queue(queue)})
                except ExtenderError:
                    return not self.ignorable
                return bool(resp.get("overused")) if isinstance(resp, dict) else False

            ssn.add_overused_fn(NAME, overused)
        if verbs["jobReady"]:
            def ready(job: JobInfo) -> bool:
                try:
                    resp = self._call("jobReady", {"job": wire.job(job)})
                except ExtenderError:
                    return not self.ignorable
                return bool(resp.get("status")) if isinstance(resp, dict) else False

            ssn.add_job_ready_fn(NAME, ready)
        handler = EventHandler()
        if verbs["allocateFunc"]:
            handler.allocate = self._event_fn("allocateFunc")
        if verbs["deallocateFunc"]:
            handler.deallocate = self._event_fn("deallocateFunc")
        ssn.add_event_handler(handler)

    def _predicate(self, body_task: dict[str, Any], node: Any) -> Status | None:
        try:
            resp = self._call("predicate", {"task": body_task, "node": wire.node(node)})
        except ExtenderError as e:
            return None if self.ignorable else Status(Code.Error, str(e))
        message = resp.get("status") if isinstance(resp, dict) else None
        if not message:
            return None
        code = _int(resp.get("code"))
        try:
            status_code = Code(code) if code != Code.Success else Code.Error
        except ValueError:
            status_code = Code.Error
        return Status(status_code, str(message))

    def _victims_fn(self, verb: str) -> Any:
        def fn(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if not self.interested(evictor):
                return [], Vote.ABSTAIN
            try:
                resp = self._call(verb, {"evictor": wire.task(evictor), "evictees": [wire.task(t) for t in evictees]})
            except ExtenderError:
                return [], Vote.PERMIT if self.ignorable else Vote.REJECT
            if not isinstance(resp, dict):
                return [], Vote.ABSTAIN
            by_uid = {t.uid: t for t in evictees}
            chosen = [by_uid[v["UID"]] for v in resp.get("victims") or []
                      if isinstance(v, dict) and v.get("UID") in by_uid]
            return chosen, _int(resp.get("status"))

        return fn

    def _event_fn(self, verb: str) -> Any:
        def fn(ev: Event) -> None:
            if not self.interested(ev.task):
                return
            try:
                resp = self._call(verb, {"task": wire.task(ev.task)})
            except ExtenderError as e:
                if not self.ignorable:
                    ev.err = str(e)
                return
            if isinstance(resp, dict) and resp.get("errorMessage"):
                ev.err = str(resp["errorMessage"])

        return fn

    def explain_predicates(self, ssn: Session, job: JobInfo, task: TaskInfo,
                           hist: Mapping[str, int]) -> PluginBlock | None:
        """``Extender.Rejected``: the extender's messages and how many nodes each refused."""
        mine = set(self.refusals.values())
        counts = {reason: n for reason, n in hist.items() if reason in mine}
        if not counts:
            return None
        total = sum(counts.values())
        top = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        hint = (f"the extender at {self.url_prefix} refused {total} node(s) (most: {top!r}); see the extender, "
                f"or set extender.ignorable if its failures should not block pods")
        return PluginBlock(Reason.EXTENDER_REJECTED, f"the extender refused {total} node(s)", hint, plugin=NAME,
                           figures=(("url", self.url_prefix), ("verb", self.verbs["predicate"]),
                                    ("messages", counts)))

    def explain_enqueue(self, ssn: Session, job: JobInfo) -> PluginBlock | None:
        """``Extender.EnqueueRejected``: the extender's jobEnqueueable vote kept the PodGroup Pending."""
        why = self.enqueue_rejections.get(job.uid)
        if why is None:
            return None
        hint = f"the extender at {self.url_prefix} did not admit the PodGroup ({why})"
        return PluginBlock(Reason.EXTENDER_ENQUEUE_REJECTED, why, hint, plugin=NAME,
                           figures=(("url", self.url_prefix), ("verb", self.verbs["jobEnqueueable"])))

    def _in_parallel(self, fn: Any, rows: list[int]) -> list[Status | None]:
        if len(rows) <= 1:
            return [fn(i) for i in rows]
        with ThreadPoolExecutor(max_workers=min(PARALLELISM, len(rows)), thread_name_prefix="extender") as pool:
            return list(pool.map(fn, rows))

    def on_session_close(self, ssn: Session) -> None:
        verb = self.verbs["onSessionClose"]
        if verb:
            with contextlib.suppress(ExtenderError):  # upstream only logs it
                self.client.send(verb, {}, want_result=False)


def _no_key(_task: TaskInfo) -> Hashable | None:
    return None  # the extender's verdict depends on the service, not on the node's row


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _names(containers: Iterable[Container], managed: frozenset[str]) -> bool:
    return any(name in managed for c in containers for name in (*c.requests, *c.limits))


def new(arguments: Mapping[str, Any]) -> Extender:
    return Extender(arguments)
