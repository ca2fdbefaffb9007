"""The controllers' work queue: rate-limited re-adds, and re-adds after an unavailable server."""

from __future__ import annotations

import pytest

from pyvolcano.controllers._common import UNAVAILABLE_MAX_DELAY, WorkQueue


def test_an_item_that_met_an_unavailable_server_backs_off_to_the_cap_without_counting_requeues() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.005, max_delay=1000.0)
    waits = []
    now = 0.0
    for _ in range(20):
        q.add_unavailable("a", now)
        at = q.next_wakeup()
        assert at is not None
        waits.append(at - now)
        now = at
        assert list(q.drain(now)) == ["a"]
    assert waits[:3] == pytest.approx([0.005, 0.01, 0.02])
    assert max(waits) == pytest.approx(UNAVAILABLE_MAX_DELAY) == waits[-1]
    assert q.num_requeues("a") == 0


def test_forget_resets_the_unavailable_back_off_too() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.005)
    for _ in range(5):
        q.add_unavailable("a", 0.0)
        list(q.drain(100.0))
    q.forget("a")
    q.add_unavailable("a", 0.0)
    assert q.next_wakeup() == 0.005
