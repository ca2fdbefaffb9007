"""The bundle on a real kube-apiserver: the CRDs are accepted, Volcano objects are stored
unchanged (nothing pruned), mistyped fields are refused, and each ServiceAccount is allowed
exactly the verb table.

Runs when a control plane can be started (``KUBEBUILDER_ASSETS`` naming a directory with
``kube-apiserver`` and ``etcd``) and ``kubectl`` is on the PATH; skipped otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.deploy.bundle import dump_documents
from pyvolcano.deploy.crds import CRD_SPECS, schema_for
from pyvolcano.deploy.rbac import COMPONENTS, INSTALL_NAMESPACE, VERB_ORDER
from workflow_examples import OWN_WORKFLOWS, upstream_examples_dir

envtest = pytest.importorskip("pyvolcano.kube.envtest", reason="pyvolcano.kube.envtest is not available")
if envtest.assets_dir() is None:
    pytest.skip(f"{envtest.ASSETS_ENV} does not name a directory with kube-apiserver and etcd",
                allow_module_level=True)
KUBECTL = shutil.which("kubectl")
if KUBECTL is None:
    pytest.skip("kubectl is not on the PATH", allow_module_level=True)

DATA = Path(__file__).parents[1] / "data" / "deploy"
NAMESPACE = "volcano-system"


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)


def _install(*args: str) -> str:
    from typer.testing import CliRunner

    from pyvolcano.cli.app import app

    res = CliRunner().invoke(app, ["install", *args])
    assert res.exit_code == 0, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    certs = tmp_path_factory.mktemp("certs")
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (certs / name).write_text(f"-----BEGIN PLACEHOLDER-----\n{name}\n-----END PLACEHOLDER-----\n")
    with envtest.ControlPlane() as cp:
        # README's one step: the whole bundle in one apply on a fresh cluster
        whole = _kubectl(cp.kubeconfig, "apply", "-f", "-",
                         stdin=_install("--fake-nodes", "--admission-certs", str(certs)))
        assert whole.returncode == 0, whole.stderr
        names = [f"crd/{s.name}" for s in CRD_SPECS]
        wait = _kubectl(cp.kubeconfig, "wait", "--for", "condition=established", "--timeout=60s", *names)
        assert wait.returncode == 0, wait.stderr
        assert _kubectl(cp.kubeconfig, "create", "namespace", "team-a").returncode == 0
        cp.certs = certs
        yield cp


def test_the_bundle_with_its_queues_applies_once_the_crds_are_served(cluster: Any) -> None:
    res = _kubectl(cluster.kubeconfig, "apply", "-f", "-",
                   stdin=_install("--queues", "--admission-certs", str(cluster.certs)))
    assert res.returncode == 0, res.stderr
    for name in ("root", "default"):
        got = json.loads(_kubectl(cluster.kubeconfig, "get", "queue", name, "-o", "json").stdout)
        assert got["spec"]["reclaimable"] is (name == "default")


def test_short_names_and_printer_columns_are_served(cluster: Any) -> None:
    queues = _kubectl(cluster.kubeconfig, "apply", "-f", "-", stdin=_queues_only())
    assert queues.returncode == 0, queues.stderr
    res = _kubectl(cluster.kubeconfig, "get", "q")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[0].split() == ["NAME", "PARENT"]
    for short in ("vcjob", "vj", "pg", "podgroup-v1beta1", "queue-v1beta1", "commands"):
        assert _kubectl(cluster.kubeconfig, "get", short, "-A").returncode == 0, short


def _queues_only() -> str:
    from pyvolcano.deploy.bundle import default_queues, dump_documents

    return dump_documents(default_queues())


def _contains(stored: Any, sent: Any, path: str = "") -> list[str]:
    """Where ``sent`` is not found unchanged in ``stored`` (defaults may add fields)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [path]
        return [p for k, v in sent.items() for p in _contains(stored.get(k, _MISSING), v, f"{path}.{k}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [path]
        return [p for i, (a, b) in enumerate(zip(stored, sent)) for p in _contains(a, b, f"{path}[{i}]")]
    return [] if stored == sent else [path]


_MISSING = object()


def _dry_run(kubeconfig: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return _kubectl(kubeconfig, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=dump_documents([doc]))


def test_samples_using_every_field_are_stored_unchanged(cluster: Any) -> None:
    docs = [d for d in yaml.safe_load_all((DATA / "samples.yaml").read_text()) if d]
    for doc in docs:
        res = _dry_run(cluster.kubeconfig, doc)
        assert res.returncode == 0, (doc["kind"], res.stderr)
        stored = json.loads(res.stdout)
        # On create, a status subresource's status is dropped by the API server: compare the rest.
        sent = {k: v for k, v in doc.items() if k != "status" or doc["kind"] == "PodGroup"}
        assert _contains(stored, sent) == [], doc["kind"]


@pytest.mark.parametrize(("kind", "path", "value"), [
    ("Job", ["spec", "minAvailable"], -1),
    ("Job", ["spec", "tasks", 0, "name"], "Master"),
    ("Queue", ["spec", "weight"], 0),
    ("PodGroup", ["spec", "minResources", "cpu"], "lots"),
])
def test_api_server_refuses_what_the_schemas_refuse(cluster: Any, kind: str, path: list[Any], value: Any) -> None:
    doc = next(d for d in yaml.safe_load_all((DATA / "samples.yaml").read_text()) if d and d["kind"] == kind)
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    res = _dry_run(cluster.kubeconfig, doc)
    assert res.returncode != 0
    assert str(path[-1]) in res.stderr


def _stored_unchanged(kubeconfig: Path, paths: list[Path]) -> int:
    """Dry-run every Volcano object of ``paths`` (in ``default`` unless it names a namespace) and
    check the API server would store it unchanged; the number of objects checked."""
    checked = 0
    for p in paths:
        try:
            docs = [d for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue  # not a manifest (e.g. a Helm template among upstream's examples)
        for doc in docs:
            if schema_for(str(doc.get("apiVersion")), str(doc.get("kind"))) is None:
                continue
            doc = {**doc, "metadata": {**doc["metadata"], "namespace": doc["metadata"].get("namespace", "default")}}
            if doc["kind"] == "Queue":
                doc["metadata"].pop("namespace")
            res = _dry_run(kubeconfig, doc)
            assert res.returncode == 0, (p.name, res.stderr)
            assert _contains(json.loads(res.stdout), {k: v for k, v in doc.items() if k != "status"}) == [], p.name
            checked += 1
    return checked


def test_our_workflows_are_stored_unchanged(cluster: Any) -> None:
    files = OWN_WORKFLOWS
    assert _stored_unchanged(cluster.kubeconfig, [files.cronjob, files.templates, files.flow]) == 7


def test_upstream_examples_are_stored_unchanged(cluster: Any) -> None:
    assert _stored_unchanged(cluster.kubeconfig, sorted(upstream_examples_dir().rglob("*.y*ml")))


def _json_stream(text: str) -> list[dict[str, Any]]:
    """The objects of kubectl's ``-o json`` output for several documents (one after another)."""
    decoder, pos, out = json.JSONDecoder(), 0, []
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        obj, pos = decoder.raw_decode(text, pos)
        out.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    return out


def _reviews(sa: str, asks: list[tuple[str, str, str, str | None]]) -> list[dict[str, Any]]:
    user = f"system:serviceaccount:{NAMESPACE}:{sa}"
    docs = []
    for group, resource, verb, namespace in asks:
        name, _, sub = resource.partition("/")
        attrs: dict[str, Any] = {"group": group, "resource": name, "verb": verb,
                                 "namespace": namespace or "some-namespace"}
        if sub:
            attrs["subresource"] = sub
        docs.append({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                     "spec": {"user": user, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
                              "resourceAttributes": attrs}})
    return docs


@pytest.mark.parametrize("name", [c.name for c in COMPONENTS])
def test_each_service_account_may_do_exactly_its_verb_table(cluster: Any, name: str) -> None:
    comp = next(c for c in COMPONENTS if c.name == name)
    asks: list[tuple[str, str, str, str | None]] = []
    expected: list[bool] = []
    for p in comp.permissions:
        ns = NAMESPACE if p.namespace == INSTALL_NAMESPACE else p.namespace
        for verb in VERB_ORDER:
            asks.append((p.group, p.resource, verb, ns))
            expected.append(verb in p.verbs)
            if ns is not None and verb in p.verbs:
                asks.append((p.group, p.resource, verb, "elsewhere"))  # a Role grants its namespace only
                expected.append(False)
    res = _kubectl(cluster.kubeconfig, "create", "-o", "json", "-f", "-", stdin=dump_documents(_reviews(
        comp.service_account, asks)))
    assert res.returncode == 0, res.stderr
    items = _json_stream(res.stdout)
    assert len(items) == len(asks)
    allowed = [bool(i["status"].get("allowed")) for i in items]
    wrong = [a for a, want, got in zip(asks, expected, allowed) if want != got]
    assert wrong == []


def test_a_component_token_from_the_bundle_reaches_the_api_with_its_own_rights(cluster: Any) -> None:
    kubeconfig = cluster.service_account_kubeconfig(NAMESPACE, "volcano-scheduler")
    deadline = time.monotonic() + 10
    while True:
        res = _kubectl(kubeconfig, "get", "queues")
        if res.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert res.returncode == 0, res.stderr
    denied = _kubectl(kubeconfig, "get", "secrets", "-n", NAMESPACE)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
