"""Least-privilege RBAC: the bundle grants exactly the verb table, and the table covers every
API call each component's code makes (recorded while the real controllers, scheduler write-back,
admission and kubelets run a simulation)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.deploy.bundle import build_bundle
from pyvolcano.deploy.rbac import COMPONENTS, INSTALL_NAMESPACE, VERB_ORDER, component, verb_table_markdown

REPO = Path(__file__).parents[2]


def _grants(docs: list[dict[str, Any]], sa: str, namespace: str) -> set[tuple[str, str, str, str | None]]:
    """(group, resource, verb, namespace or None) granted to ServiceAccount ``sa`` by ``docs``."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs
             if d["kind"] in ("ClusterRole", "Role")}
    out: set[tuple[str, str, str, str | None]] = set()
    for b in docs:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if {"kind": "ServiceAccount", "name": sa, "namespace": namespace} not in b["subjects"]:
            continue
        ns = b["metadata"].get("namespace")
        role = roles[(b["roleRef"]["kind"], ns if b["roleRef"]["kind"] == "Role" else None, b["roleRef"]["name"])]
        for rule in role["rules"]:
            out.update((g, r, v, ns) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"])
    return out


def _table(name: str, namespace: str) -> set[tuple[str, str, str, str | None]]:
    out: set[tuple[str, str, str, str | None]] = set()
    for p in component(name).permissions:
        ns = namespace if p.namespace == INSTALL_NAMESPACE else p.namespace
        out.update((p.group, p.resource, v, ns) for v in p.verbs)
    return out


@pytest.mark.parametrize("name", [c.name for c in COMPONENTS])
def test_bundle_rbac_grants_each_service_account_exactly_its_verb_table(name: str) -> None:
    docs = build_bundle("batch", fake_nodes=True)
    sa = component(name).service_account
    assert _grants(docs, sa, "batch") == _table(name, "batch")


def test_no_rule_uses_wildcards_and_roles_bind_only_their_own_service_account() -> None:
    docs = build_bundle(fake_nodes=True)
    for d in docs:
        for rule in d.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
        if d["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            assert [s["name"] for s in d["subjects"]] == [d["roleRef"]["name"]]


def test_verb_table_lists_known_verbs_once_in_canonical_order_and_each_resource_once() -> None:
    for c in COMPONENTS:
        seen = set()
        for p in c.permissions:
            assert list(p.verbs) == sorted(set(p.verbs), key=VERB_ORDER.index), (c.name, p.resource)
            key = (p.group, p.resource, p.namespace)
            assert key not in seen, (c.name, key)
            seen.add(key)
            assert p.why


def test_leader_election_leases_are_granted_only_in_the_install_namespace() -> None:
    for name in ("scheduler", "controller-manager"):
        leases = [p for p in component(name).permissions if p.resource == "leases"]
        assert [(p.namespace, p.verbs) for p in leases] == [(INSTALL_NAMESPACE, ("get", "create", "update"))]


def test_docs_show_the_verb_table_of_the_code() -> None:
    text = (REPO / "docs" / "kubernetes.md").read_text(encoding="utf-8")
    assert verb_table_markdown() in text


# ----------------------------------------------------------------------------- recorded calls

RESOURCES = {
    "Pod": ("", "pods"), "Node": ("", "nodes"), "Namespace": ("", "namespaces"), "ConfigMap": ("", "configmaps"),
    "Secret": ("", "secrets"), "Service": ("", "services"), "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
    "Job": ("batch.volcano.sh", "jobs"), "Command": ("bus.volcano.sh", "commands"),
    "PodGroup": ("scheduling.volcano.sh", "podgroups"), "Queue": ("scheduling.volcano.sh", "queues"),
    "PriorityClass": ("scheduling.k8s.io", "priorityclasses"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "CronJob": ("batch.volcano.sh", "cronjobs"), "JobFlow": ("flow.volcano.sh", "jobflows"),
    "JobTemplate": ("flow.volcano.sh", "jobtemplates"),
}
NO_STATUS_SUBRESOURCE = {"PodGroup"}  # upstream's CRD: status is written with the object


def _component_of_caller() -> str | None:
    frame = sys._getframe(3)  # _component_of_caller <- _note_call <- the store method <- its caller
    if frame.f_globals.get("__name__", "").startswith("pyvolcano.store"):
        return None  # the store's own bookkeeping (e.g. cascading deletes: the API server's job)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "pyvolcano.admission.priority":
            return None  # the API server's own Priority admission plugin, not the webhook
        if module.startswith("pyvolcano.admission"):
            return "admission"
        if module.startswith("pyvolcano.controllers"):
            return "controller-manager"
        if module == "pyvolcano.runtime.kubelet":
            return "fake-nodes"
        if module == "pyvolcano.runtime.writer" or (
                module == "pyvolcano.simulator.runtime" and frame.f_code.co_name == "_resync_pod"):
            return "scheduler"
        frame = frame.f_back  # type: ignore[assignment]
    return None  # the workload being submitted: a user's call


def _recording_store(calls: set[tuple[str, str, str, str]]) -> type:
    from pyvolcano.store.memory import InMemoryStore

    class RecordingStore(InMemoryStore):
        def _note_call(self, verb: str, kind: str, subresource: str | None = None) -> None:
            who = _component_of_caller()
            if who is None:
                return
            group, resource = RESOURCES[kind]
            if subresource and not (subresource == "status" and kind in NO_STATUS_SUBRESOURCE):
                resource = f"{resource}/{subresource}"
            calls.add((who, group, resource, verb))

        def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
            self._note_call("get", kind)
            return super().get(kind, namespace, name)

        def peek(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
            self._note_call("get", kind)
            return super().peek(kind, namespace, name)

        def list(self, kind: str, namespace: str | None = None, **kw: Any) -> list[dict[str, Any]]:
            self._note_call("list", kind)
            return super().list(kind, namespace, **kw)

        def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            self._note_call("create", obj["kind"])
            return super().create(obj)

        def update(self, obj: dict[str, Any]) -> dict[str, Any]:
            self._note_call("update", obj["kind"])
            return super().update(obj)

        def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
            self._note_call("update", obj["kind"], "status")  # a PUT, or a patch of the changed status
            return super().update_status(obj)

        def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
                  subresource: str | None = None) -> dict[str, Any]:
            self._note_call("patch", kind, subresource)
            return super().patch(kind, namespace, name, patch, subresource=subresource)

        def delete(self, kind: str, namespace: str | None, name: str, **kw: Any) -> dict[str, Any] | None:
            self._note_call("delete", kind)
            return super().delete(kind, namespace, name, **kw)

        def bind(self, namespace: str, pod_name: str, node_name: str, **kw: Any) -> dict[str, Any]:
            self._note_call("create", "Pod", "binding")
            return super().bind(namespace, pod_name, node_name, **kw)

    return RecordingStore


def test_every_api_call_the_components_make_in_a_simulation_is_granted(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyvolcano.conf import default_configuration, load_scheduler_conf
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import load_workload

    calls: set[tuple[str, str, str, str]] = set()
    monkeypatch.setattr("pyvolcano.store.memory.InMemoryStore", _recording_store(calls))
    examples = REPO / "examples" / "simulate"
    preempting = load_scheduler_conf(
        'actions: "enqueue, allocate, preempt, backfill"\n'
        "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
        "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n",
        source="preempt.conf")
    # The simulate example's jobs (ssh/svc/env plugins, MPI, PyTorch, TensorFlow, a restart policy)
    # under the default configuration; then preemption, a TTL clean-up and a plain pod; then a
    # JobFlow and CronJobs (replacing and deleting their jobs) for ten minutes.
    runs = ((default_configuration(), examples / "jobs.yaml", math.inf),
            (preempting, REPO / "tests" / "data" / "deploy" / "rbac-workload.yaml", math.inf),
            (default_configuration(), REPO / "tests" / "data" / "deploy" / "rbac-workflows.yaml", 600.0))
    for config, workload, until in runs:
        sim = Simulation(config=config, registry=default_registry())
        sim.submit(load_workload(examples / "cluster.yaml", cluster=True)[0])
        sim.submit(load_workload(workload)[0])
        sim.run(until=until)
    by_component: dict[str, set[tuple[str, str, str]]] = {}
    for who, group, resource, verb in calls:
        by_component.setdefault(who, set()).add((group, resource, verb))
    # The run exercised every component that writes, so the check below is not vacuous.
    assert {"controller-manager", "scheduler", "admission", "fake-nodes"} <= set(by_component)
    assert ("", "pods/binding", "create") in by_component["scheduler"]
    assert ("", "pods", "delete") in by_component["scheduler"]  # the preemption's evictions
    assert ("batch.volcano.sh", "jobs/status", "update") in by_component["controller-manager"]
    assert ("batch.volcano.sh", "jobs", "delete") in by_component["controller-manager"]  # the TTL
    assert ("", "secrets", "create") in by_component["controller-manager"]  # the ssh plugin
    assert ("batch.volcano.sh", "jobs", "create") in by_component["controller-manager"]  # CronJob and JobFlow
    assert {("batch.volcano.sh", "cronjobs/status", "update"), ("flow.volcano.sh", "jobflows/status", "update"),
            ("flow.volcano.sh", "jobtemplates/status", "update"),
            ("batch.volcano.sh", "jobs", "delete")} <= by_component["controller-manager"]
    for who, used in sorted(by_component.items()):
        granted = {(g, r, v) for g, r, v, _ns in _table(who, "volcano-system")}
        informed = {(g, r) for g, r, v in granted if v == "watch" and (g, r, "list") in granted}
        # A read of a kind the component watches is answered by its informer cache.
        requests = {(g, r, v) for g, r, v in used if not (v in ("get", "list") and (g, r) in informed)}
        assert requests - granted == set(), who


def test_hypernodes_are_read_by_the_scheduler_and_written_by_the_controller_manager() -> None:
    def verbs(name: str, resource: str) -> tuple[str, ...]:
        return next(p.verbs for p in component(name).permissions
                    if (p.group, p.resource) == ("topology.volcano.sh", resource))

    assert verbs("scheduler", "hypernodes") == ("list", "watch")
    assert verbs("controller-manager", "hypernodes") == ("list", "watch", "create", "update", "delete")
    assert verbs("controller-manager", "hypernodes/status") == ("update", "patch")
    assert all(p.group != "topology.volcano.sh" for p in component("admission").permissions)
