"""``pyvolcano install``: one deterministic YAML bundle for ``kubectl apply -f -``."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from pyvolcano.cli.app import app
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.conf.loader import load_scheduler_conf
from pyvolcano.deploy.bundle import DEFAULT_IMAGE, build_bundle, dump_documents

runner = CliRunner()


def _install(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["install", *args])
    return res.exit_code, res.stdout, res.stderr


def _docs(text: str) -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all(text))
    assert all(isinstance(d, dict) for d in docs)
    return docs


def _by(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _container(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    [c] = _by(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return c


def test_install_prints_one_yaml_stream_of_the_expected_objects() -> None:
    code, out, err = _install()
    assert (code, err) == (0, "")
    docs = _docs(out)
    kinds = Counter(d["kind"] for d in docs)
    assert kinds == Counter({
        "Namespace": 1, "CustomResourceDefinition": 9, "ServiceAccount": 3, "ClusterRole": 3,
        "ClusterRoleBinding": 3, "Role": 2, "RoleBinding": 2, "ConfigMap": 1, "Service": 3, "Deployment": 3,
    })
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"] == [
        "volcano-scheduler", "volcano-controllers", "volcano-admission"]
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"} == {
        "volcano-scheduler", "volcano-controllers", "volcano-admission"}
    # The namespace comes first and the CRDs before any object of their kinds.
    assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "volcano-system"}}
    # Queues only on request: one `kubectl apply` cannot create a CRD and objects of its kind.
    with_queues = _docs(_install("--queues")[1])
    assert Counter(d["kind"] for d in with_queues) == kinds + Counter({"Queue": 2})
    last_crd = max(i for i, d in enumerate(with_queues) if d["kind"] == "CustomResourceDefinition")
    assert min(i for i, d in enumerate(with_queues) if d["kind"] == "Queue") > last_crd


def test_install_output_is_deterministic_and_equals_the_builder() -> None:
    first, second = _install()[1], _install()[1]
    assert first == second
    assert first == dump_documents(build_bundle())
    assert first.startswith("---\n")
    assert "&id" not in first and "*id" not in first  # no YAML anchors: each document stands alone


def test_bundle_installs_root_and_default_queues_as_upstreams_scheduler_creates_them() -> None:
    docs = build_bundle(queues=True)
    assert _by(docs, "Queue", "root")["spec"] == {"reclaimable": False, "weight": 1}
    assert _by(docs, "Queue", "default")["spec"] == {"reclaimable": True, "weight": 1}


def test_scheduler_configmap_holds_upstreams_default_conf_mounted_at_scheduler_conf() -> None:
    docs = _docs(_install()[1])
    cm = _by(docs, "ConfigMap", "volcano-scheduler-configmap")
    text = cm["data"]["volcano-scheduler.conf"]
    assert text.strip() == DEFAULT_SCHEDULER_CONF.strip()
    assert load_scheduler_conf(text, source="configmap").actions == ("enqueue", "allocate", "backfill")
    c = _container(docs, "volcano-scheduler")
    assert c["args"][:2] == ["scheduler", "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf"]
    assert "--leader-elect" in c["args"]
    [mount] = [m for m in c["volumeMounts"] if m["name"] == "scheduler-config"]
    assert mount["mountPath"] == "/volcano.scheduler"
    [vol] = [v for v in _by(docs, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]["volumes"]
             if v["name"] == "scheduler-config"]
    assert vol == {"name": "scheduler-config", "configMap": {"name": "volcano-scheduler-configmap"}}


def test_admission_deployment_has_upstreams_flags_tls_mount_and_service_443_to_8443() -> None:
    docs = _docs(_install("--namespace", "batch")[1])
    c = _container(docs, "volcano-admission")
    assert c["args"] == [
        "admission",
        "--tls-cert-file=/admission.local.config/certificates/tls.crt",
        "--tls-private-key-file=/admission.local.config/certificates/tls.key",
        "--ca-cert-file=/admission.local.config/certificates/ca.crt",
        "--webhook-namespace=batch",
        "--webhook-service-name=volcano-admission-service",
        "--port=8443",
        "--enable-healthz",
        "--enabled-admission=/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,"
        "/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate,/jobflows/validate",
    ]
    assert c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 11251, "scheme": "HTTPS"}
    pod = _by(docs, "Deployment", "volcano-admission")["spec"]["template"]["spec"]
    assert {"name": "admission-certs", "secret": {"secretName": "volcano-admission-secret", "defaultMode": 0o444}} \
        in pod["volumes"]
    svc = _by(docs, "Service", "volcano-admission-service")
    assert svc["metadata"]["namespace"] == "batch"
    assert svc["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 8443}]
    assert svc["spec"]["selector"] == _by(docs, "Deployment", "volcano-admission")["spec"]["template"]["metadata"][
        "labels"]


def test_metrics_services_select_their_component_on_upstreams_ports() -> None:
    docs = build_bundle()
    for svc_name, dep_name, port in (("volcano-scheduler-service", "volcano-scheduler", 8080),
                                     ("volcano-controllers-service", "volcano-controllers", 8081)):
        svc = _by(docs, "Service", svc_name)
        dep = _by(docs, "Deployment", dep_name)
        assert svc["spec"]["selector"] == dep["spec"]["template"]["metadata"]["labels"]
        assert svc["spec"]["ports"] == [{"name": "metrics", "port": port, "protocol": "TCP", "targetPort": port}]
        assert svc["metadata"]["annotations"]["prometheus.io/port"] == str(port)
        assert {"name": "metrics", "containerPort": port, "protocol": "TCP"} in _container(docs, dep_name)["ports"]


def test_each_deployment_runs_as_its_own_service_account_non_root() -> None:
    docs = build_bundle()
    for name, sa in (("volcano-scheduler", "volcano-scheduler"), ("volcano-controllers", "volcano-controllers"),
                     ("volcano-admission", "volcano-admission")):
        dep = _by(docs, "Deployment", name)
        pod = dep["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == sa
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert dep["spec"]["selector"]["matchLabels"] == dep["spec"]["template"]["metadata"]["labels"]
        [c] = pod["containers"]
        assert c["securityContext"]["allowPrivilegeEscalation"] is False


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_namespace_and_image_options_are_applied_everywhere() -> None:
    code, out, _ = _install("--namespace", "batch-system", "--image", "registry.example/pyvolcano:9.9")
    assert code == 0
    docs = _docs(out)
    assert "volcano-system" not in out
    assert DEFAULT_IMAGE not in out
    for d in docs:
        if d["kind"] in ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Queue"):
            assert "namespace" not in d["metadata"], d["kind"]
        else:
            assert d["metadata"]["namespace"] == "batch-system", (d["kind"], d["metadata"]["name"])
        for subject in d.get("subjects", []):
            assert subject["namespace"] == "batch-system"
    images = [c["image"] for d in docs if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"]]
    assert images == ["registry.example/pyvolcano:9.9"] * 3
    args = [a for d in docs if d["kind"] == "Deployment" for a in _container(docs, d["metadata"]["name"])["args"]]
    assert "--leader-elect-resource-namespace=batch-system" in args
    assert "--webhook-namespace=batch-system" in args


def test_default_image_is_the_package_version() -> None:
    from pyvolcano import __version__

    assert f"pyvolcano:{__version__}" == DEFAULT_IMAGE
    assert _container(build_bundle(), "volcano-scheduler")["image"] == DEFAULT_IMAGE


@pytest.mark.parametrize(("args", "message"), [
    (["--namespace", "Volcano_System"], "error: --namespace: got 'Volcano_System'; expected a DNS-1123 label"),
    (["--namespace", "x" * 64], "error: --namespace: got"),
    (["--image", "py volcano"], "error: --image: got 'py volcano'; expected an image reference"),
    (["--crds-only", "--skip-crds"], "error: --crds-only and --skip-crds"),
    (["--admission-certs", ".", "--generate-admission-certs"],
     "error: --admission-certs and --generate-admission-certs: expected at most one of them"),
    (["--generate-admission-certs", "--namespace", "Ünï"], "error: --namespace: got 'Ünï'; expected a DNS-1123"),
])
def test_install_rejects_bad_options_with_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = _install(*args)
    assert code == 2
    assert out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_crds_only_and_skip_crds_split_the_bundle_for_a_two_step_apply() -> None:
    crds = _docs(_install("--crds-only")[1])
    rest = _docs(_install("--skip-crds")[1])
    assert {d["kind"] for d in crds} == {"CustomResourceDefinition"}
    assert "CustomResourceDefinition" not in {d["kind"] for d in rest}
    whole = build_bundle()
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, crds + rest)) == sorted(map(key, whole))


def test_fake_nodes_option_adds_its_service_account_and_node_lease_role() -> None:
    docs = _docs(_install("--fake-nodes")[1])
    assert _by(docs, "ServiceAccount", "volcano-fake-nodes")["metadata"]["namespace"] == "volcano-system"
    role = _by(docs, "Role", "volcano-fake-nodes")
    assert role["metadata"]["namespace"] == "kube-node-lease"
    assert "volcano-fake-nodes" not in _install()[1]


def test_admission_certs_directory_adds_the_tls_secret(tmp_path: Path) -> None:
    for name, text in (("tls.crt", "CERT\n"), ("tls.key", "KEY\n"), ("ca.crt", "CA\n")):
        (tmp_path / name).write_text(text)
    code, out, _ = _install("--admission-certs", str(tmp_path))
    assert code == 0
    secret = _by(_docs(out), "Secret", "volcano-admission-secret")
    assert secret["metadata"]["namespace"] == "volcano-system"
    assert {k: base64.b64decode(v).decode() for k, v in secret["data"].items()} == {
        "tls.crt": "CERT\n", "tls.key": "KEY\n", "ca.crt": "CA\n"}


def test_admission_certs_directory_missing_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("CERT\n")
    code, out, err = _install("--admission-certs", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith(f"error: --admission-certs: {tmp_path / 'tls.key'}: cannot read: ")
    assert err.count("\n") == 1


def test_bundle_documents_have_kubernetes_object_shape_and_unique_identities() -> None:
    docs = build_bundle(fake_nodes=True)
    for d in docs:
        assert set(d) >= {"apiVersion", "kind", "metadata"}
        assert isinstance(d["metadata"]["name"], str) and d["metadata"]["name"]
    ids = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(ids) == len(set(ids))


def test_install_output_does_not_depend_on_the_hash_seed() -> None:
    src = str(Path(__file__).parents[2] / "src")
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": src}
        res = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], env=env,
                             capture_output=True, text=True, timeout=120, check=True)
        outs.append(res.stdout)
    assert outs[0] == outs[1] == dump_documents(build_bundle(fake_nodes=True))


def test_generated_admission_certs_are_a_fresh_ca_and_a_serving_certificate_for_the_service() -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    def secret(*args: str) -> dict[str, bytes]:
        code, out, _ = _install("--generate-admission-certs", *args)
        assert code == 0
        data = _by(_docs(out), "Secret", "volcano-admission-secret")["data"]
        return {k: base64.b64decode(v) for k, v in data.items()}

    first, second = secret("-n", "batch"), secret("-n", "batch")
    assert first["tls.key"] != second["tls.key"] and first["ca.crt"] != second["ca.crt"]
    ca = x509.load_pem_x509_certificate(first["ca.crt"])
    tls = x509.load_pem_x509_certificate(first["tls.crt"])
    key = serialization.load_pem_private_key(first["tls.key"], password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    assert key.public_key().public_numbers() == tls.public_key().public_numbers()
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = tls.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [
        "volcano-admission-service", "volcano-admission-service.batch", "volcano-admission-service.batch.svc"]
    assert tls.issuer == ca.subject
    ca.public_key().verify(tls.signature, tls.tbs_certificate_bytes, padding.PKCS1v15(),
                           tls.signature_hash_algorithm)
