"""The live dashboard on a fake API server (hermetic): the informer store feeds the views, a
change reaches the event stream and the open page without a reload, and ``--allow-actions``
runs vcctl's operations with the API server answering (a 403 included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from dashboard_serving import page_headers, serving

from builders import node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer, _status
from pyvolcano.dashboard.sources import LIVE_KINDS, LiveSource
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.registry import default_registry
from waiting import wait_for

JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
       "metadata": {"name": "train", "namespace": "ns", "uid": "job-uid-1"},
       "spec": {"minAvailable": 1, "queue": "q", "tasks": [{"name": "w", "replicas": 1, "template": {
           "spec": {"containers": [{"name": "c", "image": "x"}]}}}]}}


def _cluster(api: FakeApiServer) -> None:
    pg = podgroup("train-1", ns="ns", queue="q", phase="Running")
    pg["metadata"]["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train",
                                          "uid": "job-uid-1", "controller": True}]
    for doc in (queue("q", 2), node("n1"), pg, pod("train-1-w-0", "train-1", ns="ns", node_name="n1",
                                                     phase="Running"), JOB):
        api.store.create(doc)


@pytest.fixture
def api() -> FakeApiServer:
    server = FakeApiServer()
    _cluster(server)
    return server


@pytest.fixture
def source(api: FakeApiServer) -> Iterator[LiveSource]:
    store = KubeStore(api.client(), LIVE_KINDS).start()
    src = LiveSource(store, default_registry(), name="the fake cluster", clock=lambda: 1.7e9, sync_timeout=10)
    yield src
    src.close()


def test_the_live_views_read_the_informer_store(source: LiveSource) -> None:
    views = source.views()
    assert [q["name"] for q in views.queues()["queues"]] == ["q"]
    row = views.jobs()["jobs"][0]
    assert (row["key"], row["job"], row["phase"]) == ("ns/train-1", "train", "Running")
    assert views is source.views()  # nothing changed: the same analysis


def test_a_change_in_the_cluster_reaches_the_event_stream(api: FakeApiServer, source: LiveSource) -> None:
    with serving(source) as url, httpx2.Client(base_url=url, timeout=10) as http:
        with http.stream("GET", "/api/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            assert next(lines) == "event: hello"
            hello = json.loads(next(lines).removeprefix("data: "))
            with api.lock:
                api.store.create(queue("added", 1))
            seen = [next(lines) for _ in range(3)]
        assert "event: change" in seen
        change = json.loads(next(x for x in seen if x.startswith("data: ")).removeprefix("data: "))
        assert change["revision"] > hello["revision"]
        assert "added" in [q["name"] for q in http.get("/api/queues").json()["queues"]]


def test_the_open_page_follows_the_cluster_without_reloading(page: Any, api: FakeApiServer,
                                                             source: LiveSource) -> None:
    with serving(source) as url:
        page.goto(f"{url}/#/queues")
        page.wait_for_selector('tr[data-queue="q"]')
        assert page.locator("#live").is_visible()
        page.evaluate("() => { window.keptAcrossUpdates = true; }")
        with api.lock:
            api.store.create(queue("arrived", 1))
            api.store.patch("Queue", None, "q", {"spec": {"weight": 7}})
        page.wait_for_selector('tr[data-queue="arrived"]', timeout=10_000)
        wait_for(lambda: page.locator('tr[data-queue="q"] td:nth-child(3)').text_content() == "7", 10, "the weight")
        assert page.evaluate("() => window.keptAcrossUpdates") is True


def _post(http: httpx2.Client, **body: str) -> tuple[int, dict[str, Any]]:
    r = http.post("/api/action", json=body, headers=page_headers(str(http.base_url).rstrip("/")))
    return r.status_code, r.json()


def test_actions_run_vcctls_operations_and_report_the_api_servers_answer(api: FakeApiServer,
                                                                         source: LiveSource) -> None:
    with serving(source, allow_actions=True) as url, httpx2.Client(base_url=url, timeout=10) as http:
        status, answer = _post(http, target="job", verb="suspend", namespace="ns", name="train")
        assert status == 200 and "AbortJob" in answer["message"]
        commands = api.store.list("Command")
        assert [(c["action"], c["target"]["name"]) for c in commands] == [("AbortJob", "train")]
        status, answer = _post(http, target="queue", verb="close", name="q")
        assert status == 200 and "CloseQueue" in answer["message"]
        status, answer = _post(http, target="job", verb="resume", namespace="ns", name="nope")
        assert status == 404
        api.faults.append(lambda r: _status(403, "Forbidden", 'jobs.batch.volcano.sh "train" is forbidden: User '
                                                             '"viewer" cannot delete resource')
                          if r.method == "DELETE" else None)
        status, answer = _post(http, target="job", verb="delete", namespace="ns", name="train")
        assert status == 403 and "forbidden" in answer["message"]
        api.faults.clear()
        status, answer = _post(http, target="job", verb="delete", namespace="ns", name="train")
        assert status == 200 and api.store.list("Job") == []


def test_actions_are_off_by_default(source: LiveSource) -> None:
    with serving(source) as url, httpx2.Client(base_url=url, timeout=10) as http:
        status, answer = _post(http, target="queue", verb="close", name="q")
        assert status == 403 and "--allow-actions" in answer["message"]


def test_the_job_page_asks_before_an_action_and_shows_a_refusal(page: Any, api: FakeApiServer,
                                                                source: LiveSource) -> None:
    api.faults.append(lambda r: _status(403, "Forbidden", "commands.bus.volcano.sh is forbidden: User \"viewer\" "
                                        "cannot create resource") if r.method == "POST" else None)
    with serving(source, allow_actions=True) as url:
        page.goto(f"{url}/#/job/ns/train-1")
        page.click('button[data-verb="suspend"]')  # the page fixture accepts the confirmation
        answer = page.locator(".answer.refused")
        answer.wait_for()
        assert page.confirmations == ["suspend job ns/train?"]
        assert answer.text_content().startswith("403: ") and "forbidden" in answer.text_content()
        assert api.store.list("Command") == []
