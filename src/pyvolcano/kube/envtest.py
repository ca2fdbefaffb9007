"""A throw-away control plane (etcd + kube-apiserver) on 127.0.0.1, for tests and benchmarks.

Follows controller-runtime's envtest convention: the binaries ``etcd`` and ``kube-apiserver``
are found in the directory named by ``KUBEBUILDER_ASSETS``; nothing is downloaded. The
control plane gets a fresh certificate authority, a serving certificate for 127.0.0.1, an
admin client certificate (group ``system:masters``) and a service-account signing key, all
in a temporary directory that :meth:`ControlPlane.stop` removes. Without kubelets and
kube-controller-manager the ``ServiceAccount`` and ``TaintNodesByCondition`` admission
plugins are disabled; authorization is RBAC, so components can run with their own
ServiceAccount tokens (:meth:`ControlPlane.service_account_kubeconfig`, through the
TokenRequest API).

For fault tests, :meth:`ControlPlane.kill` ends etcd or kube-apiserver with ``SIGKILL`` and
:meth:`ControlPlane.restart` starts it again with the same flags, ports and data directory, as
a supervisor restarting a crashed static pod would.

Requires the ``cryptography`` package (a development dependency).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ASSETS_ENV", "ControlPlane", "assets_dir"]

ASSETS_ENV = "KUBEBUILDER_ASSETS"


def assets_dir() -> Path | None:
    """The directory with ``etcd`` and ``kube-apiserver``, or None when there is none."""
    d = os.environ.get(ASSETS_ENV)
    if not d:
        return None
    p = Path(d)
    if (p / "etcd").is_file() and (p / "kube-apiserver").is_file():
        return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pem_cert(cert: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(cert.public_bytes(serialization.Encoding.PEM))


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                   serialization.NoEncryption()))


@dataclass
class _Certs:
    ca_cert: bytes
    ca_key: Any
    ca_obj: Any


def _make_ca() -> _Certs:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyvolcano-envtest-ca")])
    now = _dt.datetime.now(_dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5))
            .not_valid_after(now + _dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(key, hashes.SHA256()))
    return _Certs(_pem_cert(cert), key, cert)


def issue_cert(ca: _Certs, common_name: str, *, organizations: tuple[str, ...] = (), hosts: tuple[str, ...] = (),
               server: bool = False) -> tuple[bytes, bytes]:
    """A certificate signed by the envtest CA: (cert PEM, key PEM)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    now = _dt.datetime.now(_dt.UTC)
    b = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca.ca_obj.subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=2))
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                               else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if hosts:
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = b.sign(ca.ca_key, hashes.SHA256())
    return _pem_cert(cert), _pem_key(key)


@dataclass
class ControlPlane:
    """``with ControlPlane() as cp:`` starts etcd and kube-apiserver; ``cp.kubeconfig`` is admin's."""

    assets: Path | None = None
    extra_args: tuple[str, ...] = ()
    startup_timeout: float = 90.0
    workdir: Path = field(init=False)
    url: str = field(init=False, default="")
    kubeconfig: Path = field(init=False)
    ca: _Certs = field(init=False)
    _procs: list[subprocess.Popen[bytes]] = field(init=False, default_factory=list)
    _commands: dict[str, list[str]] = field(init=False, default_factory=dict)
    _admin: tuple[bytes, bytes] = field(init=False, default=(b"", b""))

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        assets = self.assets or assets_dir()
        if assets is None:
            raise RuntimeError(f"{ASSETS_ENV} does not name a directory with etcd and kube-apiserver")
        self.workdir = Path(tempfile.mkdtemp(prefix="pyvolcano-envtest-"))
        w = self.workdir
        self.ca = _make_ca()
        (w / "ca.crt").write_bytes(self.ca.ca_cert)
        cert, key = issue_cert(self.ca, "kube-apiserver", hosts=("127.0.0.1", "localhost"), server=True)
        (w / "apiserver.crt").write_bytes(cert)
        (w / "apiserver.key").write_bytes(key)
        admin_cert, admin_key = issue_cert(self.ca, "admin", organizations=("system:masters",))
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (w / "sa.key").write_bytes(_pem_key(sa))
        (w / "sa.pub").write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                                serialization.PublicFormat.SubjectPublicKeyInfo))
        etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
        self._commands["etcd"] = [
            str(assets / "etcd"), "--data-dir", str(w / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}"]
        self._commands["kube-apiserver"] = [
            str(assets / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
             "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
             f"--tls-cert-file={w / 'apiserver.crt'}", f"--tls-private-key-file={w / 'apiserver.key'}",
             f"--client-ca-file={w / 'ca.crt'}",
             "--service-account-issuer=https://kubernetes.default.svc",
             f"--service-account-key-file={w / 'sa.pub'}", f"--service-account-signing-key-file={w / 'sa.key'}",
             "--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC", "--allow-privileged=true",
             "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition", *self.extra_args]
        self._launch("etcd")
        self._launch("kube-apiserver")
        self.url = f"https://127.0.0.1:{api_port}"
        self.kubeconfig = w / "admin.kubeconfig"
        self.write_kubeconfig(self.kubeconfig, client_cert=admin_cert, client_key=admin_key)
        self._admin = (admin_cert, admin_key)
        self._wait_ready(admin_cert, admin_key)

    def _launch(self, name: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(self._commands[name], stdout=log, stderr=log)
        log.close()
        self._procs = [p for p in self._procs if p.args != proc.args] + [proc]
        self._procs.sort(key=lambda p: 0 if p.args == self._commands["etcd"] else 1)
        return proc

    def _proc(self, name: str) -> subprocess.Popen[bytes] | None:
        return next((p for p in self._procs if p.args == self._commands[name]), None)

    def kill(self, name: str) -> None:
        """``kill -9`` ``etcd`` or ``kube-apiserver`` and wait until it is gone."""
        proc = self._proc(name)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(30)

    def restart(self, name: str, *, wait: bool = True) -> None:
        """Start ``etcd`` or ``kube-apiserver`` again (killing it first if it runs); with
        ``wait``, return once the API server answers ``/readyz``."""
        self.kill(name)
        self._launch(name)
        if wait:
            self._wait_ready(*self._admin)

    def running(self, name: str) -> bool:
        proc = self._proc(name)
        return proc is not None and proc.poll() is None

    def _ssl_context(self, cert: bytes | None = None, key: bytes | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self.ca.ca_cert.decode())
        if cert is not None and key is not None:
            cf, kf = self.workdir / "tmp-client.crt", self.workdir / "tmp-client.key"
            cf.write_bytes(cert)
            kf.write_bytes(key)
            ctx.load_cert_chain(str(cf), str(kf))
        return ctx

    def _wait_ready(self, cert: bytes, key: bytes) -> None:
        ctx = self._ssl_context(cert, key)
        deadline = time.monotonic() + self.startup_timeout
        last = ""
        while time.monotonic() < deadline:
            for p in self._procs:
                if p.poll() is not None:
                    self.stop(keep=True)
                    raise RuntimeError(f"control plane exited ({p.args!r}); logs in {self.workdir}")
            for name in ("etcd", "kube-apiserver"):
                if self._proc(name) is None:
                    raise RuntimeError(f"{name} is not running (killed, not restarted)")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", context=ctx, timeout=5) as r:
                    if r.status == 200:
                        return
            except Exception as e:
                last = str(e)
            time.sleep(0.3)
        self.stop(keep=True)
        raise RuntimeError(f"kube-apiserver not ready after {self.startup_timeout}s: {last}")

    def write_kubeconfig(self, path: Path, *, client_cert: bytes | None = None, client_key: bytes | None = None,
                         token: str | None = None, namespace: str = "default") -> Path:
        user: dict[str, Any] = {}
        if token is not None:
            user["token"] = token
        else:
            assert client_cert is not None and client_key is not None
            user["client-certificate-data"] = base64.b64encode(client_cert).decode()
            user["client-key-data"] = base64.b64encode(client_key).decode()
        cfg = {
            "apiVersion": "v1", "kind": "Config", "current-context": "envtest",
            "clusters": [{"name": "envtest", "cluster": {
                "server": self.url, "certificate-authority-data": base64.b64encode(self.ca.ca_cert).decode()}}],
            "users": [{"name": "envtest-user", "user": user}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest-user",
                                                        "namespace": namespace}}],
        }
        path.write_text(json.dumps(cfg, indent=1))
        return path

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path | None = None,
                                   expiration_seconds: int = 86400) -> Path:
        """A kubeconfig with a TokenRequest token of ServiceAccount ``namespace/name`` (which must exist)."""
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": expiration_seconds}}).encode()
        admin = json.loads(self.kubeconfig.read_text())["users"][0]["user"]
        ctx = self._ssl_context(base64.b64decode(admin["client-certificate-data"]),
                                base64.b64decode(admin["client-key-data"]))
        req = urllib.request.Request(
            f"{self.url}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", data=body, method="POST",
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            token = json.loads(r.read())["status"]["token"]
        return self.write_kubeconfig(path or self.workdir / f"{namespace}-{name}.kubeconfig", token=token,
                                     namespace=namespace)

    def stop(self, keep: bool = False) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self._procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._procs.clear()
        if not keep and getattr(self, "workdir", None) is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.workdir)
