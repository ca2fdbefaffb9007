"""The dashboard's HTTP endpoints on a snapshot: JSON view models, the security headers, the
static front-end, the read-only default, and cluster strings that come back as JSON data."""

from __future__ import annotations

from pathlib import Path

import pytest
from dashboard_cluster import HTML_NAME, write
from starlette.testclient import TestClient

from pyvolcano.dashboard.security import TOKEN_HEADER
from pyvolcano.dashboard.server import create_app
from pyvolcano.dashboard.sources import SnapshotSource
from pyvolcano.runtime.registry import default_registry


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    path = write(tmp_path_factory.mktemp("server") / "cluster.yaml")
    return TestClient(create_app(SnapshotSource(path, default_registry())), base_url="http://localhost")


def test_the_page_and_its_modules_are_served_with_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/static/app.js">' in page.text
    for name in ("app.js", "dom.js", "queues.js", "jobs.js", "job.js", "nodes.js", "timeline.js", "actions.js",
                 "style.css"):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200, name
        assert "innerHTML" not in r.text and "insertAdjacentHTML" not in r.text and "http://" not in r.text.replace(
            "http://www.w3.org/2000/svg", "")


def test_meta_names_the_source_and_says_actions_are_off(client: TestClient) -> None:
    meta = client.get("/api/meta").json()
    assert meta["kind"] == "snapshot" and meta["actions"] is False and meta["name"].endswith("cluster.yaml")


def test_views_are_json(client: TestClient) -> None:
    queues = client.get("/api/queues").json()
    assert [q["name"] for q in queues["queues"]] == ["infer", "train"]
    jobs = client.get("/api/jobs").json()
    assert {j["key"] for j in jobs["jobs"]} >= {"train/big", "train/llm"}
    nodes = client.get("/api/nodes").json()
    assert [g["name"] for g in nodes["groups"]] == ["rack-a", "rack-b"]
    page = client.get("/api/job", params={"key": "train/big"}).json()
    assert page["diagnosis"]["reason"] == "Queue.OverDeserved"


def test_an_html_name_comes_back_as_json_data(client: TestClient) -> None:
    r = client.get("/api/jobs")
    assert r.headers["content-type"] == "application/json"
    assert any(j["name"] == HTML_NAME for j in r.json()["jobs"])
    page = client.get("/api/job", params={"key": f"infer/{HTML_NAME}"})
    assert page.status_code == 200 and page.json()["row"]["name"] == HTML_NAME


def test_unknown_jobs_and_bad_parameters_are_json_errors(client: TestClient) -> None:
    assert client.get("/api/job", params={"key": "train/none"}).status_code == 404
    assert client.get("/api/job", params={"key": "nokey"}).status_code == 400
    assert client.get("/api/queues", params={"t": "nan"}).status_code == 400
    assert client.get("/api/timeline").status_code == 404


def test_actions_are_refused_unless_allowed(client: TestClient) -> None:
    r = client.post("/api/action", json={"target": "job", "verb": "suspend", "namespace": "train", "name": "big"})
    assert r.status_code == 403 and "--allow-actions" in r.json()["message"]
    form = client.post("/api/action", data={"target": "job"})
    assert form.status_code == 415


def test_a_snapshot_cannot_be_written_even_with_actions_allowed(tmp_path: Path) -> None:
    app = create_app(SnapshotSource(write(tmp_path / "c.yaml"), default_registry()), allow_actions=True,
                     token="tok")
    r = TestClient(app, base_url="http://localhost").post(
        "/api/action", json={"target": "queue", "verb": "close", "name": "train"},
        headers={"Origin": "http://localhost", TOKEN_HEADER: "tok"})
    assert r.status_code == 403 and "read-only" in r.json()["message"]
