"""runtime.component: one run skeleton for the leader-elected components."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from pyvolcano.runtime import component as rt
from pyvolcano.runtime.component import ClientSettings, Component, ComponentError, Endpoints, LeaderElection


class FakeStore:
    def __init__(self, kinds: Sequence[str], synced: bool = True):
        self.kinds = list(kinds)
        self.synced = synced
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def wait_for_sync(self, timeout: float) -> bool:
        return self.synced

    def stop(self) -> None:
        self.calls.append("stop")


def component(work: rt.Work) -> Component:
    return Component("test", "vc-test", "vc-test-le", ("Pod",), ClientSettings(None, None, 1.0, 1),
                     LeaderElection(False, "lease", "ns", "", "15s", "10s", "2s"),
                     Endpoints(False, ":0", False, ":0"), None, work)


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> list[FakeStore]:
    made: list[FakeStore] = []

    def connect(client: ClientSettings, kinds: Sequence[str], user_agent: str) -> FakeStore:
        made.append(FakeStore(kinds))
        return made[-1]

    monkeypatch.setattr(rt, "connect", connect)
    monkeypatch.setattr(signal, "signal", lambda *_a: None)   # keep the test runner's handlers
    return made


def test_without_election_the_work_runs_on_a_synced_store_which_stops_afterwards(stores: list[FakeStore]) -> None:
    seen: list[tuple[list[str], bool]] = []

    def work(store: Any, stop: threading.Event) -> None:
        seen.append((list(store.calls), stop.is_set()))

    assert rt.run_component(component(work)) == 0
    [store] = stores
    assert seen == [(["start"], False)]
    assert store.calls == ["start", "stop"]


def test_the_store_stops_when_the_work_fails(stores: list[FakeStore]) -> None:
    def work(store: Any, stop: threading.Event) -> None:
        raise ComponentError("bad config")

    with pytest.raises(ComponentError, match="bad config"):
        rt.run_component(component(work))
    assert stores[0].calls == ["start", "stop"]


def test_informers_that_do_not_sync_exit_with_code_1_and_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal, "signal", lambda *_a: None)
    monkeypatch.setattr(rt, "connect", lambda *_a: FakeStore(("Pod",), synced=False))
    with pytest.raises(ComponentError) as err:
        rt.run_component(component(lambda _s, _e: None))
    assert (err.value.code, err.value.message) == (1, "")


def test_a_bad_election_duration_is_a_usage_error_before_anything_connects(stores: list[FakeStore]) -> None:
    bad = replace(component(lambda _s, _e: None), election=LeaderElection(True, "lease", "ns", "", "nope", "10s", "2s"))
    with pytest.raises(ComponentError) as err:
        rt.run_component(bad)
    assert err.value.code == 2
    assert stores == []
