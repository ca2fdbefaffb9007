"""The pre-bind stage: a plugin's step runs before the pod's bind and is rolled back when the bind fails.

A test plugin, ``ledger``, registers a pre-binder and gives every task it allocates an
extension naming a ConfigMap to create; its pre-bind creates it, its rollback deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from builders import node, pod, podgroup, queue
from pyvolcano.api.task import TaskInfo
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import apply_event
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.framework.prebind import BindTarget, ObjectKey, PreBindError
from pyvolcano.framework.session import Session
from pyvolcano.kube.events import EventRecorder
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.writer import DecisionWriter
from pyvolcano.store.base import NotFound, Store
from pyvolcano.store.memory import InMemoryStore

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: ledger
- plugins:
  - name: predicates
"""


class LedgerBinder:
    name = "ledger"

    def __init__(self, fail_for: set[str]):
        self.fail_for = fail_for
        self.assumed: list[str] = []

    def assume(self, cache: SchedulerCache, target: BindTarget, extension: Any) -> None:
        self.assumed.append(extension)

    def pre_bind(self, store: Store, target: BindTarget, extension: Any) -> None:
        if target.name in self.fail_for:
            raise PreBindError(f"no ledger for {target.name}")
        store.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"namespace": target.namespace, "name": extension},
                      "data": {"node": target.node}})

    def rollback(self, store: Store, target: BindTarget, extension: Any) -> None:
        store.delete("ConfigMap", target.namespace, extension)

    def stale(self, extension: Any) -> list[ObjectKey]:
        return [("ConfigMap", "ns", extension)]


class Ledger:
    name = "ledger"

    def __init__(self, binder: LedgerBinder):
        self.binder = binder

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_pre_binder(self.binder)

        def allocate(ev: Event) -> None:
            ssn.bind_contexts.set(ev.task, self.name, f"ledger-{ev.task.name}")

        def allocate_many(tasks: list[TaskInfo]) -> None:
            for t in tasks:
                ssn.bind_contexts.set(t, self.name, f"ledger-{t.name}")

        def deallocate(ev: Event) -> None:
            ssn.bind_contexts.drop(ev.task, self.name)

        ssn.add_event_handler(EventHandler(allocate=allocate, deallocate=deallocate, allocate_many=allocate_many))

    def on_session_close(self, ssn: Session) -> None:
        pass


def _run(binder: LedgerBinder, *docs: dict[str, Any], failing_bind: str = "") -> tuple[InMemoryStore, DecisionWriter]:
    store = InMemoryStore(clock=lambda: 0.0)
    for doc in docs:
        store.create(doc)
    cache = SchedulerCache()
    for doc in docs:
        apply_event(cache, "ADDED", doc["kind"], doc)
    if failing_bind:
        store.delete("Pod", "ns", failing_bind)  # the cache still has it: the bind is refused
    config = load_scheduler_conf(CONF)
    plugins: dict[str, Any] = dict(default_registry().plugin_factories(["gang", "predicates"]))
    plugins["ledger"] = lambda _args: Ledger(binder)
    actions = default_registry().action_factories(config.actions)
    events = EventRecorder(store, controller="volcano", instance="t", clock=lambda: 0.0, workers=0)
    writer = DecisionWriter(store, cache, clock=lambda: 0.0, events=events)
    result = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    writer.write(result)
    return store, writer


def _events(store: Store) -> list[tuple[str, str, str]]:
    return sorted((e["regarding"]["name"], e["reason"], e["note"]) for e in store.list("Event")
                  if e["regarding"]["kind"] == "Pod")


def test_pre_bind_step_runs_before_the_bind_and_is_assumed_in_the_cache() -> None:
    binder = LedgerBinder(set())
    store, writer = _run(binder, queue("q"), node("n1"), podgroup("g", min_member=2),
                         pod("g-0", "g"), pod("g-1", "g"))
    assert sorted(binder.assumed) == ["ledger-g-0", "ledger-g-1"]
    assert store.get("ConfigMap", "ns", "ledger-g-0")["data"] == {"node": "n1"}
    assert store.get("Pod", "ns", "g-1")["spec"]["nodeName"] == "n1"
    assert writer.take_failures() == [] and writer.take_stale() == []


def test_failing_pre_bind_leaves_the_pod_unbound_with_an_event_naming_the_plugin() -> None:
    binder = LedgerBinder({"g-1"})
    store, writer = _run(binder, queue("q"), node("n1"), podgroup("g", min_member=2),
                         pod("g-0", "g"), pod("g-1", "g"))
    assert "nodeName" not in store.get("Pod", "ns", "g-1")["spec"]
    assert store.get("Pod", "ns", "g-0")["spec"]["nodeName"] == "n1"
    failures = writer.take_failures()
    assert failures == [("ns", "g-1", 'running PreBind plugin "ledger": no ledger for g-1')]
    assert writer.take_stale() == [("ConfigMap", "ns", "ledger-g-1")]
    assert ("g-1", "FailedScheduling", 'running PreBind plugin "ledger": no ledger for g-1') in _events(store)


def test_refused_bind_rolls_back_the_steps_already_done() -> None:
    binder = LedgerBinder(set())
    store, writer = _run(binder, queue("q"), node("n1"), podgroup("g", min_member=1), pod("g-0", "g"),
                         failing_bind="g-0")
    try:
        store.get("ConfigMap", "ns", "ledger-g-0")
        raise AssertionError("the ConfigMap of a refused bind was not rolled back")
    except NotFound:
        pass
    [(ns, name, why)] = writer.take_failures()
    assert (ns, name) == ("ns", "g-0") and why.startswith("binding to n1: "), why
    assert writer.take_stale() == [("ConfigMap", "ns", "ledger-g-0")]


def test_task_without_extension_gets_no_pre_bind_steps() -> None:
    binder = LedgerBinder(set())
    store = InMemoryStore(clock=lambda: 0.0)
    docs: list[Mapping[str, Any]] = [queue("q"), node("n1"), podgroup("g", min_member=1), pod("g-0", "g")]
    for doc in docs:
        store.create(dict(doc))
    cache = SchedulerCache()
    for doc in docs:
        apply_event(cache, "ADDED", doc["kind"], dict(doc))
    config = load_scheduler_conf(CONF.replace("  - name: ledger\n", ""))
    registry = default_registry()
    result = run_once(cache, config, registry.plugin_factories(config.plugin_names()),
                      registry.action_factories(config.actions), now=0.0, rng=np.random.default_rng(0))
    assert [b.pre_binds for b in result.bind_requests] == [()]
    assert binder.assumed == []
