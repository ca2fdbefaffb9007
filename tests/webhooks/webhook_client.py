"""Builders and a client for webhook tests: certificates, AdmissionReview requests as the API
server sends them, and an HTTPS client that checks the response envelope."""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import ipaddress
import json
import ssl
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

GROUPS = {"Job": ("batch.volcano.sh", "v1alpha1", "jobs"), "Queue": ("scheduling.volcano.sh", "v1beta1", "queues"),
          "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups"), "Pod": ("", "v1", "pods"),
          "HyperNode": ("topology.volcano.sh", "v1alpha1", "hypernodes"),
          "CronJob": ("batch.volcano.sh", "v1alpha1", "cronjobs"),
          "JobFlow": ("flow.volcano.sh", "v1alpha1", "jobflows")}


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_certs(d: Path) -> Certs:
    """A CA and a server certificate for 127.0.0.1 and localhost signed by it (PEM files)."""
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    later = now + dt.timedelta(days=36500)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("test-ca")).issuer_name(_name("test-ca"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now).not_valid_after(later)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("volcano-admission-service")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(2).not_valid_before(now).not_valid_after(later)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    out = Certs(d / "ca.crt", d / "tls.crt", d / "tls.key")
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return out


def queue_obj(name: str, state: str = "Open", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"reclaimable": True, "weight": 1, **spec}, "status": {"state": state}}


def review(kind: str, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None, *,
           namespace: str = "", name: str = "") -> dict[str, Any]:
    """An AdmissionReview request as the API server sends it."""
    group, version, resource = GROUPS[kind]
    subject = obj if obj is not None else old or {}
    md = subject.get("metadata", {})
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": name or md.get("name", ""), "namespace": namespace or md.get("namespace", ""),
            "operation": operation, "userInfo": {"username": "kubernetes-admin"},
            "object": obj, "oldObject": old, "dryRun": False,
        },
    }


def decoded_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["patchType"] == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return patch


class Client:
    """POSTs AdmissionReviews to a webhook server over verified TLS."""

    def __init__(self, port: int, ca: Path):
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca))

    def raw(self, path: str, body: bytes, content_type: str = "application/json",
            method: str = "POST") -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
        try:
            conn.request(method, path, body=body, headers={"Content-Type": content_type})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def post(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        status, body = self.raw(path, json.dumps(request).encode())
        assert status == 200, body
        out: dict[str, Any] = json.loads(body)
        assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
        assert out["response"]["uid"] == request["request"]["uid"]
        response: dict[str, Any] = out["response"]
        return response
