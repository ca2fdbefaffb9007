"""The ``ssh`` job plugin (``pkg/controllers/job/plugins/ssh``).

On job initiation it creates the Secret ``<job>-ssh`` (owned by the job) with the keys
``id_rsa`` (private key), ``id_rsa.pub`` and ``authorized_keys`` (public key) and ``config``
(``StrictHostKeyChecking no`` plus one ``Host`` entry per pod with its domain name and
port). Every container and init container mounts it at ``--ssh-key-file-path``
(default ``/root/.ssh``, sub-path ``.ssh``, mode 0600; 0644 for a non-default path).
Flags: ``--ssh-key-file-path``, ``--ssh-private-key``/``--ssh-public-key`` (use these keys
instead of generating), ``--ssh-port`` (default 22; an out-of-range port falls back to 22).

The generated key comes from the runtime's entropy (:mod:`pyvolcano.controllers.entropy`):
on a real cluster upstream's 2048-bit RSA key from the operating system's randomness; in the
simulator a reproducible Ed25519 key (docs/differences.md). Secret ``data`` values are
base64, as in a Secret manifest.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

from pyvolcano.controllers._common import name_of, namespace_of
from pyvolcano.controllers.job.plugins.base import (
    FlagSet,
    PluginContext,
    containers,
    controlled_resources,
    create_or_update_secret,
    delete_quietly,
    make_pod_name,
    replicas_of,
    tasks_of,
    template_spec,
)
from pyvolcano.store.base import NotFound

__all__ = ["SSHPlugin", "generate_ssh_config"]

logger = logging.getLogger(__name__)

SSH_PRIVATE_KEY = "id_rsa"
SSH_PUBLIC_KEY = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_CONFIG = "config"
SSH_ABSOLUTE_PATH = "/root/.ssh"
SSH_RELATIVE_PATH = ".ssh"


def generate_ssh_config(job: dict[str, Any], port: int) -> str:
    config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for ts in tasks_of(job):
        tmpl = template_spec(ts)
        for i in range(replicas_of(ts)):
            host = str(tmpl.get("hostname") or "") or make_pod_name(name_of(job), str(ts.get("name", "")), i)
            sub = str(tmpl.get("subdomain") or "") or name_of(job)
            config += f"Host {host}\n  HostName {host}.{sub}\n  Port {port}\n"
            if tmpl.get("hostname"):
                break
    return config


def _b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


class SSHPlugin:
    name = "ssh"

    def __init__(self, ctx: PluginContext, arguments: Sequence[str]):
        self.ctx = ctx
        flags = FlagSet(self.name)
        flags.string("ssh-key-file-path", SSH_ABSOLUTE_PATH)
        flags.string("ssh-private-key", "")
        flags.string("ssh-public-key", "")
        flags.integer("ssh-port", 22)
        flags.parse(arguments)
        self.key_file_path = str(flags.values["ssh-key-file-path"])
        self.private_key = str(flags.values["ssh-private-key"])
        self.public_key = str(flags.values["ssh-public-key"])
        self.port = int(flags.values["ssh-port"])

    def secret_name(self, job: dict[str, Any]) -> str:
        return f"{name_of(job)}-{self.name}"

    def on_pod_create(self, pod: dict[str, Any], job: dict[str, Any]) -> None:
        secret = self.secret_name(job)
        items = [
            {"key": k, "path": f"{SSH_RELATIVE_PATH}/{k}"}
            for k in (SSH_PRIVATE_KEY, SSH_PUBLIC_KEY, SSH_AUTHORIZED_KEYS, SSH_CONFIG)
        ]
        mode = 0o600 if self.key_file_path == SSH_ABSOLUTE_PATH else 0o644
        sp = pod.setdefault("spec", {})
        volume = {"name": secret, "secret": {"secretName": secret, "items": items, "defaultMode": mode}}
        sp["volumes"] = [*(sp.get("volumes") or []), volume]
        for init in (False, True):
            for c in containers(pod, init=init):
                mount = {"mountPath": self.key_file_path, "subPath": SSH_RELATIVE_PATH, "name": secret}
                c["volumeMounts"] = [*(c.get("volumeMounts") or []), mount]

    def on_job_add(self, job: dict[str, Any]) -> None:
        if not 0 < self.port <= 65535:
            logger.warning("invalid ssh port %d, falling back to default port 22 ...", self.port)
            self.port = 22
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") == self.name:
            return
        config = _b64(generate_ssh_config(job, self.port))
        if self._secret_config(job) == config:
            # Upstream would generate a key and then leave the Secret alone (same config);
            # skipping the generation saves the work and the draws.
            cr[f"plugin-{self.name}"] = self.name
            return
        if self.private_key:
            private, public = self.private_key.encode(), self.public_key.encode()
        else:
            pair = self.ctx.entropy.ssh_key_pair()
            private, public = pair.private_key, pair.public_key
        data = {
            SSH_PRIVATE_KEY: _b64(private),
            SSH_PUBLIC_KEY: _b64(public),
            SSH_AUTHORIZED_KEYS: _b64(public),
            SSH_CONFIG: config,
        }
        create_or_update_secret(self.ctx.store, job, data, self.secret_name(job))
        cr[f"plugin-{self.name}"] = self.name

    def _secret_config(self, job: dict[str, Any]) -> str | None:
        try:
            secret = self.ctx.store.get("Secret", namespace_of(job), self.secret_name(job))
        except NotFound:
            return None
        value = (secret.get("data") or {}).get(SSH_CONFIG)
        return value if isinstance(value, str) else None

    def on_job_delete(self, job: dict[str, Any]) -> None:
        cr = controlled_resources(job)
        if cr.get(f"plugin-{self.name}") != self.name:
            return
        delete_quietly(self.ctx.store, "Secret", namespace_of(job), self.secret_name(job))
        del cr[f"plugin-{self.name}"]

    def on_job_update(self, job: dict[str, Any]) -> None:
        return None
