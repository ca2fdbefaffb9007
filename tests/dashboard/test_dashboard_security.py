"""The dashboard answers only the Host names it is served as, and acts only for its own page.

On the live source over a fake API server (hermetic): a foreign ``Host`` (DNS rebinding) is
refused on every route, page, static files, JSON, the event stream and actions included; an
action from another origin, or without the page's token, is refused with 403 before any
request reaches the cluster; the page's own actions still work, in a real browser too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from dashboard_serving import TOKEN, chromium_path, page_headers, serving
from starlette.testclient import TestClient

from builders import node, queue
from kube.fakeapi import FakeApiServer
from pyvolcano.cli.dashboard import serve
from pyvolcano.dashboard.security import (
    LOOPBACK_HOSTS,
    TOKEN_HEADER,
    exposure_warning,
    parse_accept_hosts,
    served_hosts,
)
from pyvolcano.dashboard.server import create_app
from pyvolcano.dashboard.sources import LIVE_KINDS, LiveSource
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.registry import default_registry

ROUTES = ("/", "/static/app.js", "/static/style.css", "/api/meta", "/api/queues", "/api/jobs", "/api/nodes",
          "/api/job?key=ns/x", "/api/timeline", "/api/events")
SUSPEND = {"target": "queue", "verb": "close", "name": "q"}
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
def api() -> FakeApiServer:
    server = FakeApiServer()
    for doc in (queue("q", 2), node("n1")):
        server.store.create(doc)
    return server


@pytest.fixture
def source(api: FakeApiServer) -> Iterator[LiveSource]:
    store = KubeStore(api.client(), LIVE_KINDS).start()
    src = LiveSource(store, default_registry(), name="the fake cluster", clock=lambda: 1.7e9, sync_timeout=10)
    yield src
    src.close()


@pytest.fixture
def served(source: LiveSource) -> Iterator[tuple[str, httpx2.Client]]:
    with serving(source, allow_actions=True) as url, httpx2.Client(base_url=url, timeout=10) as http:
        yield url, http


def _writes(api: FakeApiServer) -> list[tuple[str, str]]:
    return [r for r in api.requests if r[0] in WRITES]


def test_a_foreign_host_is_refused_on_every_route(served: tuple[str, httpx2.Client], api: FakeApiServer) -> None:
    url, http = served
    port = url.rsplit(":", 1)[1]
    foreign = {"Host": f"rebind.attacker.example:{port}"}
    for route in ROUTES:
        r = http.get(route, headers=foreign)
        assert r.status_code == 403, route
        assert "rebind.attacker.example" in r.text and "--accept-hosts" in r.text and r.text.count("\n") == 1
        assert r.headers["content-security-policy"].startswith("default-src 'self'")
    r = http.post("/api/action", json=SUSPEND, headers={**foreign, **page_headers(url)})
    assert r.status_code == 403
    assert _writes(api) == [] and api.store.list("Command") == []


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"])
def test_the_loopback_names_are_answered(served: tuple[str, httpx2.Client], name: str) -> None:
    url, http = served
    port = url.rsplit(":", 1)[1]
    assert http.get("/api/queues", headers={"Host": f"{name}:{port}"}).status_code == 200
    assert http.get("/", headers={"Host": name}).status_code == 200


def test_a_host_header_that_does_not_parse_is_refused(served: tuple[str, httpx2.Client]) -> None:
    _, http = served
    assert http.get("/api/meta", headers={"Host": "[::1"}).status_code == 403


def test_accept_hosts_adds_names_and_wildcards(source: LiveSource) -> None:
    hosts = served_hosts("127.0.0.1", parse_accept_hosts(["dash.example.com,*.corp.example"]))
    client = TestClient(create_app(source, hosts=hosts), base_url="http://dash.example.com")
    assert client.get("/api/meta").status_code == 200
    assert client.get("/api/meta", headers={"Host": "gpu.corp.example"}).status_code == 200
    assert client.get("/api/meta", headers={"Host": "dash.example.com.evil.net"}).status_code == 403
    assert client.get("/api/meta", headers={"Host": "corp.example.evil"}).status_code == 403


def test_accept_hosts_reads_kubectl_proxys_anchored_forms() -> None:
    assert parse_accept_hosts([r"^localhost$,^127\.0\.0\.1$,^\[::1\]$", r"^.*\.example\.com$"]) == [
        "localhost", "127.0.0.1", "[::1]", "*.example.com"]
    assert parse_accept_hosts(["::1", "Dash.Example.COM."]) == ["[::1]", "dash.example.com"]


@pytest.mark.parametrize("bad", ["a b", "^dash.*$", "*example.com", "http://dash", "dash:8080"])
def test_accept_hosts_refuses_what_is_not_a_name(bad: str) -> None:
    with pytest.raises(ValueError, match="--accept-hosts: got"):
        parse_accept_hosts([bad])


def test_served_hosts_start_with_the_listen_address() -> None:
    assert served_hosts("10.0.0.5") == ("10.0.0.5", *LOOPBACK_HOSTS)
    assert served_hosts("::1") == ("[::1]", "localhost", "127.0.0.1")
    assert served_hosts("127.0.0.1", ["dash"]) == ("127.0.0.1", "localhost", "[::1]", "dash")


@pytest.mark.parametrize(("origin", "token"), [
    ("http://evil.example", TOKEN),  # another site posting with a stolen-looking token
    ("null", TOKEN),  # a sandboxed frame or a file:// page
    ("SAME", None),  # the right origin without the page's token
    ("SAME", "a-guess"),
])
def test_an_action_from_another_origin_or_without_the_token_never_reaches_the_cluster(
        served: tuple[str, httpx2.Client], api: FakeApiServer, origin: str, token: str | None) -> None:
    url, http = served
    headers = {"Origin": url if origin == "SAME" else origin}
    if token is not None:
        headers[TOKEN_HEADER] = token
    r = http.post("/api/action", json=SUSPEND, headers=headers)
    assert r.status_code == 403 and r.json()["message"].startswith("refused: ")
    assert _writes(api) == [] and api.store.list("Command") == []


def test_an_action_without_origin_or_referer_is_refused(served: tuple[str, httpx2.Client],
                                                        api: FakeApiServer) -> None:
    _, http = served
    r = http.post("/api/action", json=SUSPEND, headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 403 and "Origin" in r.json()["message"]
    assert _writes(api) == []


def test_a_same_origin_referer_stands_in_for_a_missing_origin(served: tuple[str, httpx2.Client],
                                                              api: FakeApiServer) -> None:
    url, http = served
    r = http.post("/api/action", json=SUSPEND, headers={"Referer": f"{url}/#/queues", TOKEN_HEADER: TOKEN})
    assert r.status_code == 200, r.text
    assert [c["action"] for c in api.store.list("Command")] == ["CloseQueue"]


def test_the_page_carries_the_token_only_when_actions_are_on(source: LiveSource) -> None:
    on = TestClient(create_app(source, allow_actions=True, token="tok-1"), base_url="http://localhost")
    off = TestClient(create_app(source, token="tok-2"), base_url="http://localhost")
    assert '<meta name="pyvolcano-action-token" content="tok-1">' in on.get("/").text
    assert "pyvolcano-action-token" not in off.get("/").text


def test_each_process_gets_its_own_token(source: LiveSource) -> None:
    assert create_app(source).state.action_token != create_app(source).state.action_token


def test_listening_beyond_loopback_without_accept_hosts_warns_of_the_risk() -> None:
    text = exposure_warning("0.0.0.0", accept_hosts=[], allow_actions=True)
    assert text is not None and "0.0.0.0" in text and "no login" in text and "--accept-hosts" in text
    assert "acts with this kubeconfig" in text
    assert exposure_warning("127.0.0.1", accept_hosts=[], allow_actions=True) is None
    assert exposure_warning("::1", accept_hosts=[], allow_actions=False) is None
    assert exposure_warning("0.0.0.0", accept_hosts=["dash.example.com"], allow_actions=False) is None


def test_the_command_prints_the_warning_before_listening(source: LiveSource, capsys: pytest.CaptureFixture[str]) \
        -> None:
    import socket

    taken = socket.socket()
    taken.bind(("0.0.0.0", 0))
    try:
        code = serve(source, listen_address="0.0.0.0", port=taken.getsockname()[1], allow_actions=False)
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert code == 2 and "warning: --listen-address 0.0.0.0" in err and "no login" in err


def test_a_rebinding_page_in_a_real_browser_gets_no_data(source: LiveSource) -> None:
    """Chromium resolves the attacker's name to 127.0.0.1 (as a rebinding DNS server would) and
    loads the dashboard's address under that name: the page is refused, so no script of the
    attacker's origin ever reads an answer."""
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium: install Debian's chromium (.ci/run does as root) or set PYVOLCANO_CHROMIUM")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with serving(source) as url, sync_api.sync_playwright() as p:
        port = url.rsplit(":", 1)[1]
        browser = p.chromium.launch(executable_path=path, args=[
            "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebind.attacker.example 127.0.0.1"])
        try:
            page = browser.new_page()
            response = page.goto(f"http://rebind.attacker.example:{port}/")
            assert response is not None and response.status == 403
            body: Any = page.evaluate("""async () => {
                const r = await fetch('/api/queues'); return [r.status, await r.text()]; }""")
            assert body[0] == 403 and body[1].startswith("refused: Host") and '"queues"' not in body[1]
            assert page.goto(f"{url}/#/queues") is not None
            page.wait_for_selector('tr[data-queue="q"]')
        finally:
            browser.close()


def test_the_pages_own_action_still_works_in_a_browser(page: Any, api: FakeApiServer, source: LiveSource) -> None:
    with serving(source, allow_actions=True) as url:
        page.goto(f"{url}/#/queues")
        page.click('tr[data-queue="q"] button[data-verb="close"]')
        answer = page.locator(".answer.ok")
        answer.wait_for()
        assert "CloseQueue" in (answer.text_content() or "")
    assert [c["action"] for c in api.store.list("Command")] == ["CloseQueue"]
