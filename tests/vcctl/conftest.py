"""vcctl's fixtures: the cluster of :mod:`vcctl.cluster` behind the fake API server, or in a snapshot file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kube.fakeapi import FakeApiServer
from pyvolcano.kube.store import KubeStore
from pyvolcano.store.memory import InMemoryStore
from pyvolcano.vcctl.app import run
from pyvolcano.vcctl.common import Env
from vcctl.cluster import NOW, objects

Vc = Callable[..., tuple[int, str, str]]


@pytest.fixture
def api() -> FakeApiServer:
    server = FakeApiServer(InMemoryStore())
    for obj in objects():
        server.store.create(obj)
    return server


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(objects(), sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def vc(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> Vc:
    """``vc("job", "list")`` runs vcctl against the fake API server: (exit code, stdout, stderr)."""
    env = Env(connect=lambda kubeconfig, master, context: (KubeStore(api.client(), ()), "default"),
              now=lambda: NOW)

    def call(*argv: str) -> tuple[int, str, str]:
        code = run(list(argv), env=env)
        out = capsys.readouterr()
        return code, out.out, out.err

    return call
