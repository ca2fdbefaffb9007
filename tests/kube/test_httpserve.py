"""The /healthz and /metrics servers, started on 127.0.0.1 port 0 and scraped."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from pyvolcano.kube.httpserve import HTTPEndpoints, parse_listen_address
from pyvolcano.kube.leaderelection import LeaderElectionConfig, LeaderElector, healthz_check
from pyvolcano.metrics.scheduler import SchedulerMetrics
from pyvolcano.store import InMemoryStore


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


@pytest.mark.parametrize(("text", "expected"), [
    (":8080", ("", 8080)),
    ("127.0.0.1:11251", ("127.0.0.1", 11251)),
    ("[::1]:8080", ("::1", 8080)),
    ("localhost:0", ("localhost", 0)),
])
def test_listen_addresses_use_gos_syntax(text: str, expected: tuple[str, int]):
    assert parse_listen_address(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:", ":70000", "a:b:80", ""])
def test_bad_listen_addresses_are_rejected_naming_the_flag(text: str):
    with pytest.raises(ValueError, match=r"--healthz-address: got .*; expected host:port such as :8080"):
        parse_listen_address(text, "--healthz-address")


def test_metrics_endpoint_serves_the_registrys_exposition():
    m = SchedulerMetrics()
    m.update_e2e_duration(0.004)
    srv = HTTPEndpoints("127.0.0.1:0", registry=m.registry).start()
    try:
        base = f"http://127.0.0.1:{srv.port}"
        code, ctype, body = get(f"{base}/metrics")
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4")
        assert "volcano_e2e_scheduling_latency_milliseconds_count 1.0" in body
        code, ctype, body = get(f"{base}/metrics", accept="application/openmetrics-text; version=1.0.0")
        assert code == 200 and ctype.startswith("application/openmetrics-text") and body.endswith("# EOF\n")
        assert get(f"{base}/healthz")[0] == 404  # not configured on this address
        assert get(f"{base}/nothing")[0] == 404
    finally:
        srv.stop()


def test_healthz_is_ok_while_every_check_passes_and_500_when_one_fails():
    state: dict[str, str | None] = {"reason": None}
    srv = HTTPEndpoints("127.0.0.1:0", healthz={"informers": lambda: state["reason"]}, flag="--healthz-address")
    srv.start()
    try:
        base = f"http://127.0.0.1:{srv.port}"
        assert get(f"{base}/healthz") == (200, "text/plain; charset=utf-8", "ok")
        assert get(f"{base}/healthz?verbose")[2] == "[+]ping ok\n[+]informers ok\nhealthz check passed\n"
        assert get(f"{base}/healthz/ping")[:1] == (200,)
        state["reason"] = "not synced"
        code, _, body = get(f"{base}/healthz")
        assert code == 500
        assert body == "[+]ping ok\n[-]informers failed: reason withheld\nhealthz check failed\n"
        assert get(f"{base}/healthz/informers") == (500, "text/plain; charset=utf-8",
                                                    "internal server error: not synced\n")
        assert get(f"{base}/healthz/other")[0] == 404
        assert get(f"{base}/metrics")[0] == 404  # no registry on this address
    finally:
        srv.stop()


def test_a_check_that_raises_fails_the_health_check():
    def broken() -> str | None:
        raise RuntimeError("boom")

    srv = HTTPEndpoints("127.0.0.1:0", healthz={"broken": broken}).start()
    try:
        code, _, body = get(f"http://127.0.0.1:{srv.port}/healthz")
        assert code == 500 and "[-]broken failed" in body
    finally:
        srv.stop()


def test_leader_election_health_fails_once_the_leader_missed_lease_plus_timeout():
    now = [0.0]
    store = InMemoryStore()
    elector = LeaderElector(store, LeaderElectionConfig(resource_name="volcano"), "a", wall_clock=lambda: 0.0)
    elector.try_acquire_or_renew(0.0)
    srv = HTTPEndpoints("127.0.0.1:0", healthz={"leaderElection": healthz_check(elector, 20, clock=lambda: now[0])})
    srv.start()
    try:
        url = f"http://127.0.0.1:{srv.port}/healthz"
        now[0] = 35.0
        assert get(url)[0] == 200
        now[0] = 35.5
        code, _, body = get(url)
        assert code == 500 and "[-]leaderElection failed" in body
    finally:
        srv.stop()


def test_two_servers_with_their_own_registries_do_not_share_metrics():
    ra, rb = CollectorRegistry(), CollectorRegistry()
    Counter("only_in_a", "a", registry=ra).inc()
    a = HTTPEndpoints("127.0.0.1:0", registry=ra).start()
    b = HTTPEndpoints("127.0.0.1:0", registry=rb).start()
    try:
        assert "only_in_a_total 1.0" in get(f"http://127.0.0.1:{a.port}/metrics")[2]
        assert "only_in_a" not in get(f"http://127.0.0.1:{b.port}/metrics")[2]
    finally:
        a.stop()
        b.stop()


def test_a_port_in_use_is_an_os_error():
    a = HTTPEndpoints("127.0.0.1:0", healthz={}).start()
    try:
        with pytest.raises(OSError):
            HTTPEndpoints(f"127.0.0.1:{a.port}", healthz={}).start()
    finally:
        a.stop()
