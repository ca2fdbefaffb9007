"""The CRDs of ``pyvolcano install``: upstream's identities, structural schemas that accept our
own objects and every upstream example (when ``VOLCANO_EXAMPLES_DIR`` names upstream's
``example/`` directory) unchanged, and reject what upstream's reject."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.deploy.crds import custom_resource_definitions, schema_for
from pyvolcano.deploy.schema import validate
from workflow_examples import ORIGINS, upstream_examples_dir, workflow_files

DATA = Path(__file__).parents[1] / "data" / "deploy"
REPO = Path(__file__).parents[2]

# Facts of upstream's config/crd/volcano/bases and config/crd/jobflow/bases: (name, kind, plural, singular, short names,
# scope, version, subresources, printer columns as (name, type, jsonPath, priority)).
UPSTREAM = {
    "jobs.batch.volcano.sh": ("Job", "jobs", "job", ["vcjob", "vj"], "Namespaced", "v1alpha1", {"status": {}}, [
        ("STATUS", "string", ".status.state.phase", None),
        ("minAvailable", "integer", ".status.minAvailable", None),
        ("RUNNINGS", "integer", ".status.running", None),
        ("AGE", "date", ".metadata.creationTimestamp", None),
        ("QUEUE", "string", ".spec.queue", 1),
    ]),
    "podgroups.scheduling.volcano.sh": ("PodGroup", "podgroups", "podgroup", ["pg", "podgroup-v1beta1"],
                                        "Namespaced", "v1beta1", {}, [
        ("STATUS", "string", ".status.phase", None),
        ("minMember", "integer", ".spec.minMember", None),
        ("RUNNINGS", "integer", ".status.running", None),
        ("AGE", "date", ".metadata.creationTimestamp", None),
        ("QUEUE", "string", ".spec.queue", 1),
    ]),
    "queues.scheduling.volcano.sh": ("Queue", "queues", "queue", ["q", "queue-v1beta1"], "Cluster", "v1beta1",
                                     {"status": {}}, [("PARENT", "string", ".spec.parent", None)]),
    "commands.bus.volcano.sh": ("Command", "commands", "command", None, "Namespaced", "v1alpha1", {}, None),
    "hypernodes.topology.volcano.sh": ("HyperNode", "hypernodes", "hypernode", ["hn"], "Cluster", "v1alpha1",
                                       {"status": {}}, [
        ("Tier", "string", ".spec.tier", None),
        ("TierName", "string", ".spec.tierName", None),
        ("NodeCount", "integer", ".status.nodeCount", None),
        ("Age", "date", ".metadata.creationTimestamp", None),
    ]),
    "numatopologies.nodeinfo.volcano.sh": ("Numatopology", "numatopologies", "numatopology", ["numatopo"], "Cluster",
                                           "v1alpha1", {}, None),
    "cronjobs.batch.volcano.sh": ("CronJob", "cronjobs", "cronjob", ["cronvcjob", "cronvj"], "Namespaced", "v1alpha1",
                                  {"status": {}}, None),
    "jobflows.flow.volcano.sh": ("JobFlow", "jobflows", "jobflow", ["jf"], "Namespaced", "v1alpha1", {"status": {}}, [
        ("Status", "string", ".status.state.phase", None),
        ("Age", "date", ".metadata.creationTimestamp", None),
    ]),
    "jobtemplates.flow.volcano.sh": ("JobTemplate", "jobtemplates", "jobtemplate", ["jt"], "Namespaced", "v1alpha1",
                                     {"status": {}}, None),
}


def _crds() -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in custom_resource_definitions()}


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_crd_has_upstreams_names_scope_version_subresources_and_printer_columns(name: str) -> None:
    kind, plural, singular, short, scope, version, subresources, columns = UPSTREAM[name]
    crd = _crds()[name]
    spec = crd["spec"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert spec["group"] == name.split(".", 1)[1]
    assert spec["names"]["kind"] == kind
    assert spec["names"]["listKind"] == f"{kind}List"
    assert spec["names"]["plural"] == plural
    assert spec["names"]["singular"] == singular
    assert spec["names"].get("shortNames") == short
    assert spec["scope"] == scope
    [v] = spec["versions"]
    assert (v["name"], v["served"], v["storage"]) == (version, True, True)
    assert v["subresources"] == subresources
    got = [(c["name"], c["type"], c["jsonPath"], c.get("priority")) for c in v["additionalPrinterColumns"]] \
        if "additionalPrinterColumns" in v else None
    assert got == columns


def test_crds_are_exactly_the_nine_volcano_kinds() -> None:
    assert sorted(_crds()) == sorted(UPSTREAM)


def _structural_violations(s: dict[str, Any], path: str = "") -> list[str]:
    """The rules of a structural schema the API server enforces that our schemas could break."""
    out: list[str] = []
    if s.get("x-kubernetes-int-or-string"):
        if "type" in s or s.get("anyOf") != [{"type": "integer"}, {"type": "string"}]:
            out.append(f"{path}: int-or-string needs anyOf integer|string and no type")
    elif "type" not in s:
        out.append(f"{path}: no type")
    for key in ("oneOf", "not", "allOf", "$ref", "additionalItems", "definitions", "dependencies"):
        if key in s:
            out.append(f"{path}: {key} is not allowed here")
    if "properties" in s and isinstance(s.get("additionalProperties"), dict):
        out.append(f"{path}: properties and additionalProperties together")
    if s.get("type") == "array" and "items" not in s:
        out.append(f"{path}: array without items")
    for k, sub in (s.get("properties") or {}).items():
        out.extend(_structural_violations(sub, f"{path}.{k}"))
    if isinstance(s.get("additionalProperties"), dict):
        out.extend(_structural_violations(s["additionalProperties"], f"{path}.*"))
    if "items" in s:
        out.extend(_structural_violations(s["items"], f"{path}[]"))
    return out


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_crd_schema_is_structural(name: str) -> None:
    schema = _crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _structural_violations(schema) == []
    assert set(schema["properties"]) >= {"apiVersion", "kind", "metadata"}
    assert schema["properties"]["metadata"] == {"type": "object"}


def _objects(path: Path) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
        if isinstance(doc, dict) and schema_for(str(doc.get("apiVersion")), str(doc.get("kind"))) is not None:
            found.append((f"{path.name} document {i}", doc))
    return found


def _errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    schema = schema_for(doc["apiVersion"], doc["kind"])
    assert schema is not None
    return validate(doc, schema)


def test_hand_written_samples_using_every_field_are_accepted_unchanged() -> None:
    objs = _objects(DATA / "samples.yaml")
    assert sorted({d["kind"] for _, d in objs}) == ["Command", "Job", "PodGroup", "Queue"]
    for where, doc in objs:
        assert _errors(doc) == [], where


def test_repository_examples_are_accepted_unchanged() -> None:
    objs = [o for p in sorted((REPO / "examples").rglob("*.yaml")) for o in _objects(p)]
    assert len(objs) >= 10
    for where, doc in objs:
        assert _errors(doc) == [], where


def test_upstream_examples_are_accepted_unchanged() -> None:
    root = upstream_examples_dir()
    objs = []
    for p in sorted(root.rglob("*.y*ml")):
        try:
            objs.extend(_objects(p))
        except yaml.YAMLError:
            continue  # not a manifest (e.g. a Helm template among the examples)
    assert objs, f"no Volcano Job, PodGroup, Queue or Command under {root}"
    failures = [(where, errs) for where, doc in objs if (errs := _errors(doc))]
    assert failures == []


def _sample(kind: str) -> dict[str, Any]:
    return next(d for _, d in _objects(DATA / "samples.yaml") if d["kind"] == kind)


@pytest.mark.parametrize(("kind", "path", "value", "message"), [
    ("Job", ["spec", "minAvailable"], -1, "expected at least 0"),
    ("Job", ["spec", "minAvailable"], "3", "expected integer"),
    ("Job", ["spec", "queue"], "Bad_Queue", "expected a match"),
    ("Job", ["spec", "tasks", 0, "name"], "Master", "expected a match"),
    ("Job", ["spec", "tasks", 0, "replicas"], 1.5, "expected integer"),
    ("Job", ["spec", "policies", 0, "event"], "PodExploded", "expected one of"),
    ("Job", ["spec", "tasks", 1, "partitionPolicy", "totalPartitions"], 0, "expected at least 1"),
    ("Job", ["spec", "plugins", "ssh"], "yes", "expected array"),
    ("Job", ["status", "state", "phase"], "Sleeping", "expected one of"),
    ("Job", ["status", "state", "lastTransitionTime"], "yesterday", "RFC 3339"),
    ("PodGroup", ["spec", "minMember"], -2, "expected at least 0"),
    ("PodGroup", ["spec", "minResources", "cpu"], "lots", "expected a match"),
    ("PodGroup", ["spec", "minResources", "cpu"], True, "expected an integer or a string"),
    ("PodGroup", ["status", "phase"], "Done", "expected one of"),
    ("Queue", ["spec", "weight"], 0, "expected at least 1"),
    ("Queue", ["spec", "weight"], 70000, "expected at most 65535"),
    ("Queue", ["spec", "reclaimable"], "true", "expected boolean"),
    ("Queue", ["spec", "capability", "memory"], "1x", "expected a match"),
    ("Queue", ["status", "state"], "Opened", "expected one of"),
    ("Command", ["target", "kind"], 7, "expected string"),
])
def test_schema_rejects_a_mistyped_field(kind: str, path: list[Any], value: Any, message: str) -> None:
    doc = _sample(kind)
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    errors = _errors(doc)
    where = ".".join(str(k) for k in path).replace(".0", "[0]").replace(".1", "[1]")
    assert [e for e in errors if e[0] == where and message in e[1]], errors


@pytest.mark.parametrize(("kind", "path"), [
    ("Job", ["spec", "minAvaliable"]),
    ("Job", ["spec", "tasks", 0, "replica"]),
    ("Queue", ["spec", "wieght"]),
    ("PodGroup", ["status", "phaze"]),
    ("Command", ["actoin"]),
])
def test_schema_reports_a_field_the_api_server_would_prune(kind: str, path: list[Any]) -> None:
    doc = _sample(kind)
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = 1
    assert any("unknown field" in m for _, m in _errors(doc))


def test_pod_templates_and_claims_keep_any_field() -> None:
    job = _sample("Job")
    job["spec"]["tasks"][0]["template"]["spec"]["futureField"] = {"x": 1}
    job["spec"]["volumes"][1]["volumeClaim"]["dataSourceRef"] = {"kind": "VolumeSnapshot", "name": "s"}
    assert _errors(job) == []


def test_command_requires_its_target_identity() -> None:
    cmd = _sample("Command")
    del cmd["target"]["uid"]
    assert ("target.uid", "required field is missing") in _errors(cmd)


def test_objects_the_controllers_write_in_a_simulation_fit_the_schemas() -> None:
    from pyvolcano.conf import default_configuration
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import load_workload

    sim = Simulation(config=default_configuration(), registry=default_registry())
    sim.submit(load_workload(REPO / "examples" / "simulate" / "cluster.yaml", cluster=True)[0])
    sim.submit(load_workload(REPO / "examples" / "simulate" / "jobs.yaml")[0])
    seen: dict[str, int] = {}

    def check(now: float, result: Any) -> None:
        for kind in ("Job", "PodGroup", "Queue"):
            for obj in sim.store.list(kind):
                errors = _errors(obj)
                assert errors == [], (kind, obj["metadata"]["name"], errors)
                seen[kind] = seen.get(kind, 0) + 1

    sim.on_session = check
    sim.run()
    assert all(seen.get(k) for k in ("Job", "PodGroup", "Queue")), seen


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_example_workflows_are_accepted_unchanged(origin: str) -> None:
    files = workflow_files(origin)
    objs = [o for p in (files.cronjob, files.templates, files.flow) for o in _objects(p)]
    assert sorted({d["kind"] for _, d in objs}) == ["CronJob", "JobFlow", "JobTemplate"]
    for where, doc in objs:
        assert _errors(doc) == [], where


@pytest.mark.parametrize(("kind", "doc", "where", "message"), [
    ("CronJob", {"spec": {"schedule": "* * * * *"}}, "spec.jobTemplate", "required field is missing"),
    ("CronJob", {"spec": {"schedule": "x", "jobTemplate": {}, "concurrencyPolicy": "Never"}}, "spec.concurrencyPolicy",
     "expected one of"),
    ("JobFlow", {"spec": {"flows": [{"name": ""}]}}, "spec.flows[0].name", "expected at least 1"),
    ("JobFlow", {"spec": {"jobRetainPolicy": "keep"}}, "spec.jobRetainPolicy", "expected one of"),
    ("JobTemplate", {"spec": {"tasks": []}}, "spec.tasks", "expected at least 1"),
])
def test_workflow_schemas_reject_what_upstreams_reject(kind: str, doc: dict[str, Any], where: str,
                                                       message: str) -> None:
    api = "batch.volcano.sh/v1alpha1" if kind == "CronJob" else "flow.volcano.sh/v1alpha1"
    errors = _errors({"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, **doc})
    assert [e for e in errors if e[0] == where and message in e[1]], errors
